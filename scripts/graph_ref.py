#!/usr/bin/env python3
"""Converts the output of the reference script torch_graph.py (its first line
is JSON: per size, the CUDA-graph replay time per all-reduce of NCCL and of
PyTorch symmetric memory's one-shot and two-shot) into symmem's JSON schema
(symmem-bench/1), with algorithms named "+graph", so that scripts/sidebyside.py
compares them with `symmem bench --graph`.

Usage: graph_ref.py --world W --in torch_graph.log --out torch-graph.json
"""
import argparse
import json
import sys

SCHEMA = "symmem-bench/1"
CURVES = (("nccl", "nccl", "all_reduce+graph"), ("one_shot", "torch-symm", "one-shot+graph"),
          ("two_shot", "torch-symm", "two-shot+graph"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--in", dest="src", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--device-name", default="")
    args = ap.parse_args()
    res = None
    with open(args.src) as f:
        for line in f:
            if line.startswith("{"):
                res = json.loads(line)
                break
    if res is None:
        print(f"graph_ref.py: no JSON line in {args.src}", file=sys.stderr)
        return 1
    bf = 2 * (args.world - 1) / args.world
    rows = []
    for key, impl, algo in CURVES:
        for r in res["rows"]:
            t = r[key]
            alg = r["bytes"] / t / 1e3 if t > 0 else 0.0
            rows.append({"impl": impl, "algo": algo, "dtype": "bfloat16", "op": "sum", "world": args.world,
                         "bytes": r["bytes"], "count": r["bytes"] // 2, "time_us": t, "device_us": t, "host_us": 0.0,
                         "min_us": t, "max_us": t, "algbw_gbps": alg, "busbw_gbps": alg * bf, "wrong": -1})
    rep = {"schema": SCHEMA, "tool": "torch_graph.py", "device": "cuda", "device_name": args.device_name,
           "world": args.world, "timer": "device", "simulated": False,
           "note": f"CUDA-graph replay of 20 calls, median of 7; peer copy {res.get('peer_copy_GBps')} GB/s",
           "rows": rows}
    with open(args.out, "w") as f:
        json.dump(rep, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
