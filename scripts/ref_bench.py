#!/usr/bin/env python3
"""Reference all-reduce timings in symmem's JSON schema (symmem-bench/1).

Times, per call of a host loop, on the same sizes as `symmem bench`:
  - PyTorch symmetric memory: torch.ops.symm_mem.one_shot_all_reduce and
    two_shot_all_reduce_ (impl "torch-symm", algo "one-shot" / "two-shot");
  - NCCL through torch.distributed.all_reduce (impl "nccl", algo "all_reduce").

Method (that of the reference script torch_percall.py): one process per GPU,
a symmetric buffer allocated once for the largest size, `--warmup` untimed
calls, a barrier, then `--loops` loops of `--iters` calls timed with CUDA
events around the loop; the median loop is reported, averaged over ranks.
The host's wall clock around the same loop (synchronised at its end) gives
host_us. With --sync, each variant is timed again with a synchronize after
every call (algo suffixed "+sync"), which is how symmem's collectives run.

After timing, each case runs once on small-integer inputs whose sum is exact
in every dtype and is compared with a float32 NCCL all-reduce of the same
inputs: "wrong" counts the elements that differ.

Usage: ref_bench.py --world 4 --out-dir DIR [--min 1024] [--max 268435456]
         [--step 2] [--dtype bf16] [--iters 100] [--warmup 20] [--loops 5] [--sync]
Writes DIR/torch.json and DIR/nccl.json. Keep the multicast guards set:
NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1.
"""
import argparse
import json
import os
import statistics
import sys
import time
import traceback

SCHEMA = "symmem-bench/1"
DTYPES = {"bf16": "bfloat16", "bfloat16": "bfloat16", "f16": "float16", "fp16": "float16",
          "float16": "float16", "f32": "float32", "fp32": "float32", "float32": "float32"}
GUARDS = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


def sizes(lo, hi, step):
    out, n = [], lo
    while n <= hi:
        out.append(n)
        n *= step
    return out


def busfactor(world):
    return 2.0 * (world - 1) / world if world >= 1 else 0.0


def time_loops(torch, dist, fn, warmup, iters, loops, sync_each):
    """Median per-call (device events, host wall) over loops, plus min and max."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    dist.barrier()
    dev, host = [], []
    for _ in range(loops):
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        s.record()
        for _ in range(iters):
            fn()
            if sync_each:
                torch.cuda.synchronize()
        e.record()
        torch.cuda.synchronize()
        host.append((time.perf_counter() - t0) * 1e6 / iters)
        dev.append(s.elapsed_time(e) * 1000.0 / iters)
    return statistics.median(dev), statistics.median(host), min(dev), max(dev)


def worker(rank, args, q):
    for k, v in GUARDS.items():
        os.environ[k] = v
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(args.port))
    import torch
    import torch.distributed as dist
    import torch.distributed._symmetric_memory as symm_mem

    world = args.world
    torch.cuda.set_device(rank)
    dev = torch.device(f"cuda:{rank}")
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=dev)
    gname = dist.group.WORLD.group_name
    try:
        symm_mem.enable_symm_mem_for_group(gname)
    except Exception:
        pass  # newer PyTorch needs no enabling
    dtype = getattr(torch, DTYPES[args.dtype])
    esize = torch.tensor([], dtype=dtype).element_size()
    szs = [n for n in sizes(args.min, args.max, args.step) if n % esize == 0]
    max_elems = szs[-1] // esize
    buf = symm_mem.empty(max_elems, dtype=dtype, device=dev)
    symm_mem.rendezvous(buf, gname)
    plain = torch.empty(max_elems, dtype=dtype, device=dev)
    gen = torch.Generator(device=dev)

    def check(kind, n):
        """Elements differing from a float32 NCCL all-reduce of integer inputs."""
        gen.manual_seed(1000 + rank)
        ints = torch.randint(-4, 4, (n,), generator=gen, device=dev)
        ref = ints.to(torch.float32)
        dist.all_reduce(ref)
        if kind == "nccl":
            t = plain[:n]
            t.copy_(ints)
            dist.all_reduce(t)
            got = t
        elif kind == "one-shot":
            x = buf[:n]
            x.copy_(ints)
            got = torch.ops.symm_mem.one_shot_all_reduce(x, "sum", gname)
        else:
            x = buf[:n]
            x.copy_(ints)
            torch.ops.symm_mem.two_shot_all_reduce_(x, "sum", gname)
            got = x
        torch.cuda.synchronize()
        return int((got.to(torch.float32) != ref).sum().item())

    rows, errors = [], []
    variants = [False, True] if args.sync else [False]
    for nbytes in szs:
        n = nbytes // esize
        x, p = buf[:n], plain[:n]
        calls = {
            "nccl": lambda: dist.all_reduce(p),
            "one-shot": lambda: torch.ops.symm_mem.one_shot_all_reduce(x, "sum", gname),
            "two-shot": lambda: torch.ops.symm_mem.two_shot_all_reduce_(x, "sum", gname),
        }
        for kind, fn in calls.items():
            if kind == "two-shot" and n % (world * 8) != 0:
                continue  # the reference script skips these sizes too
            for sync_each in variants:
                x.normal_()
                p.normal_()
                try:
                    d, h, lo, hi = time_loops(torch, dist, fn, args.warmup, args.iters, args.loops, sync_each)
                    wrong = check(kind, n) if not sync_each else -1
                except Exception as ex:  # keep going: report what failed
                    errors.append(f"{kind} {nbytes} B: {ex!r}"[:300])
                    continue
                rows.append({"kind": kind, "sync": sync_each, "bytes": nbytes, "count": n,
                             "dev": d, "host": h, "min": lo, "max": hi, "wrong": wrong})
        if rank == 0 and args.verbose:
            print(f"ref_bench: {nbytes} B done", file=sys.stderr, flush=True)
    q.put((rank, rows, errors))
    dist.barrier()
    dist.destroy_process_group()


def merge(world, per_rank):
    """Average times over ranks, sum wrong elements, keyed like rank 0's rows."""
    out = []
    base = per_rank[0]
    for i, r in enumerate(base):
        same = [rows[i] for rows in per_rank if i < len(rows) and rows[i]["kind"] == r["kind"]
                and rows[i]["bytes"] == r["bytes"] and rows[i]["sync"] == r["sync"]]
        dev = statistics.mean(s["dev"] for s in same)
        host = statistics.mean(s["host"] for s in same)
        wrong = -1 if any(s["wrong"] < 0 for s in same) else sum(s["wrong"] for s in same)
        out.append(dict(r, dev=dev, host=host, min=min(s["min"] for s in same),
                        max=max(s["max"] for s in same), wrong=wrong))
    return out


def report(args, impl, rows, note):
    bf = busfactor(args.world)
    out = []
    for r in rows:
        algo = "all_reduce" if r["kind"] == "nccl" else r["kind"]
        if r["sync"]:
            algo += "+sync"
        t = r["dev"]
        alg = r["bytes"] / t / 1e3 if t > 0 else 0.0
        out.append({"impl": impl, "algo": algo, "dtype": DTYPES[args.dtype], "op": "sum",
                    "world": args.world, "bytes": r["bytes"], "count": r["count"],
                    "time_us": t, "device_us": t, "host_us": r["host"], "min_us": r["min"],
                    "max_us": r["max"], "algbw_gbps": alg, "busbw_gbps": alg * bf, "wrong": r["wrong"]})
    return {"schema": SCHEMA, "tool": "ref_bench.py", "device": "cuda", "device_name": args.device_name,
            "world": args.world, "timer": "device", "simulated": False, "warmup": args.warmup,
            "iters": args.iters, "loops": args.loops, "note": note, "rows": out}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--min", type=int, default=1024)
    ap.add_argument("--max", type=int, default=256 << 20)
    ap.add_argument("--step", type=int, default=2)
    ap.add_argument("--dtype", default="bf16", choices=sorted(DTYPES))
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--loops", type=int, default=5)
    ap.add_argument("--sync", action="store_true", help="also time with a synchronize after every call")
    ap.add_argument("--port", type=int, default=29561)
    ap.add_argument("--timeout", type=float, default=900, help="seconds to wait for the workers")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    if args.world < 2 or args.min < 1 or args.max < args.min or args.step < 2 or min(args.iters, args.loops) < 1:
        ap.error("want --world >= 2, 1 <= --min <= --max, --step >= 2, --iters and --loops >= 1")
    for k, v in GUARDS.items():
        os.environ[k] = v
    import torch
    import torch.multiprocessing as mp
    if torch.cuda.device_count() < args.world:
        sys.exit(f"ref_bench: --world {args.world} needs {args.world} GPUs, torch sees {torch.cuda.device_count()}")
    args.device_name = torch.cuda.get_device_name(0)
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    ps = [ctx.Process(target=worker, args=(r, args, q)) for r in range(args.world)]
    for p in ps:
        p.start()
    got = {}
    deadline = time.time() + args.timeout
    failed = ""
    while len(got) < args.world:
        try:
            rank, rows, errors = q.get(timeout=5)
            got[rank] = (rows, errors)
        except Exception:
            dead = [i for i, p in enumerate(ps) if p.exitcode not in (None, 0)]
            if dead or time.time() > deadline:
                failed = f"workers {dead} died" if dead else f"timed out after {args.timeout}s"
                break
    for p in ps:
        p.join(timeout=30)
        if p.is_alive():
            p.terminate()
    if failed or 0 not in got:
        sys.exit(f"ref_bench: {failed or 'rank 0 reported nothing'}; ranks that reported: {sorted(got)}")
    errors = sorted({e for _, (_, errs) in got.items() for e in errs})
    rows = merge(args.world, [got[r][0] for r in sorted(got)])
    note = "PyTorch %s; per call of a host loop, CUDA events, median of %d loops of %d calls" % (
        torch.__version__, args.loops, args.iters)
    if errors:
        note += "\nerrors: " + "; ".join(errors)
    os.makedirs(args.out_dir, exist_ok=True)
    for name, impl, kinds in (("torch.json", "torch-symm", ("one-shot", "two-shot")), ("nccl.json", "nccl", ("nccl",))):
        rep = report(args, impl, [r for r in rows if r["kind"] in kinds], note)
        path = os.path.join(args.out_dir, name)
        with open(path, "w") as f:
            json.dump(rep, f, indent=2)
        print(f"ref_bench: wrote {path} ({len(rep['rows'])} rows)")
    for e in errors:
        print("ref_bench: error:", e, file=sys.stderr)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    try:
        main()
    except SystemExit:
        raise
    except Exception:
        traceback.print_exc()
        sys.exit(1)
