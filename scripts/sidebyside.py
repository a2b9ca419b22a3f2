#!/usr/bin/env python3
"""Side-by-side table of all-reduce reports in symmem's JSON schema.

Usage: sidebyside.py [--dtype bfloat16] REPORT.json...

One row per size, one column per curve (implementation and algorithm) with
its per-call time in microseconds, then ratios of symmem's best time to the
best of PyTorch symmetric memory and of NCCL (below 1: symmem is faster), then
the same for bus bandwidth. A cell marked '!' had wrong elements. Missing or
unreadable files are listed, and the rest is still printed.
"""
import argparse
import json
import sys

SCHEMA = "symmem-bench/1"


def label(n):
    for shift, unit in ((30, "G"), (20, "M"), (10, "K")):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


SHORT = {"symmem": "sym", "torch-symm": "torch", "one-shot": "1shot", "two-shot": "2shot", "all_reduce": ""}


def curve(row):
    """Short column name: sym 1shot, sym auto, torch 2shot+sync, nccl, ..."""
    algo = row["algo"]
    if algo.startswith("auto/"):
        algo = "auto"
    base, plus, sync = algo.partition("+")
    name = " ".join(x for x in (SHORT.get(row["impl"], row["impl"]), SHORT.get(base, base)) if x)
    return name + plus + sync


def load(paths, dtype):
    reports, problems = [], []
    for p in paths:
        try:
            with open(p) as f:
                rep = json.load(f)
        except (OSError, ValueError) as ex:
            problems.append(f"{p}: {ex}")
            continue
        if rep.get("schema") != SCHEMA:
            problems.append(f"{p}: schema {rep.get('schema')!r}, want {SCHEMA!r}")
            continue
        reports.append((p, rep))
    if dtype is None:
        for _, rep in reports:
            if rep.get("rows"):
                dtype = rep["rows"][0]["dtype"]
                break
    return reports, problems, dtype


def mode(name):
    """How a curve was timed: '' (host loop), 'sync' (a wait per call) or 'graph' (CUDA-graph replay)."""
    return name.partition("+")[2]


def best(cells, impl, how):
    ts = [t for (name, t, _) in cells if name.split(" ")[0].split("+")[0] == impl and mode(name) == how and t > 0]
    return min(ts) if ts else None


def fmt_time(t, wrong):
    if t is None:
        return "-"
    s = f"{t:.1f}" if t >= 100 else f"{t:.2f}"
    return s + ("!" if wrong and wrong > 0 else "")


def busbw(row):
    return "-" if row is None else f"{row['busbw_gbps']:.1f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dtype", default=None, help="dtype to show (default: the first report's)")
    ap.add_argument("reports", nargs="+")
    args = ap.parse_args()
    reports, problems, dtype = load(args.reports, args.dtype)
    order, table, world, names, simulated = [], {}, None, [], False
    for _, rep in reports:
        world = world or rep.get("world")
        simulated = simulated or bool(rep.get("simulated"))
        if rep.get("device_name") and rep["device_name"] not in names:
            names.append(rep["device_name"])
        for row in rep.get("rows", []):
            if row.get("dtype") != dtype or row.get("op", "sum") != "sum":
                continue
            c = curve(row)
            if c not in order:
                order.append(c)
            table.setdefault(row["bytes"], {})[c] = row
    if not table:
        print("side by side: nothing to compare")
    else:
        # (label, symmem's timing, the other implementation, its timing)
        ratios = [("sym/torch", "", "torch", ""), ("sym/torch+sync", "", "torch", "sync"), ("sym/nccl", "", "nccl", ""),
                  ("graph sym/torch", "graph", "torch", "graph"), ("graph sym/nccl", "graph", "nccl", "graph")]
        have = [(c, 1, 0) for c in order]
        ratios = [r for r in ratios if best(have, "sym", r[1]) and best(have, r[2], r[3])]
        width = max([len(c) for c in order] + [8]) + 2
        print(f"side by side: world {world}, {dtype}, sum; per-call time (us) of a host loop (+graph: of a graph replay); "
              f"device {', '.join(names) or '?'}")
        if simulated:
            print("SIMULATOR FIGURES in these reports: CPU time spent simulating, not GPU performance")
        print("ratios: symmem's best time over the other's best, host loops with host loops and CUDA-graph replays")
        print("(+graph) with graph replays (below 1: symmem faster); '!' = wrong elements")
        head = f"{'size':>6}" + "".join(f"{c:>{width}}" for c in order) + "".join(f"{r[0]:>16}" for r in ratios)
        print(head)
        for n in sorted(table):
            row = table[n]
            cells = [(c, row[c]["time_us"], row[c].get("wrong", -1)) for c in order if c in row]
            line = f"{label(n):>6}"
            for c in order:
                r = row.get(c)
                line += f"{fmt_time(r['time_us'] if r else None, r.get('wrong') if r else None):>{width}}"
            for _, ours_how, impl, how in ratios:
                ours, other = best(cells, "sym", ours_how), best(cells, impl, how)
                line += f"{(f'{ours / other:.2f}' if ours and other else '-'):>16}"
            print(line)
        print()
        print("bus bandwidth (GB/s), busbw = algbw x 2(W-1)/W")
        print(f"{'size':>6}" + "".join(f"{c:>{width}}" for c in order))
        for n in sorted(table):
            row = table[n]
            print(f"{label(n):>6}" + "".join(f"{busbw(row.get(c)):>{width}}" for c in order))
    for p in problems:
        print("side by side: could not use", p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
