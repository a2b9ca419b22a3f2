#!/usr/bin/env bash
# Compares symmem's all-reduce with PyTorch symmetric memory and NCCL on one
# GPU machine, in one run. Run it ON THE GPU MACHINE from the repository
# root; it needs no Go there:
#
#   .gpu/symmem     symmem for linux/amd64 (scripts/build-gpu-binaries.sh)
#   .gpu/ref/       the reference scripts torch_graph.py (and torch_percall.py)
#   python3         with PyTorch and CUDA (the GPU machines have it)
#
# Steps, each time-limited; a failing step is reported and the rest still run:
#   1. symmem bench --device cuda (ranks in one process; if that fails fast,
#      one process per rank under symmem launch)          -> symmem.json
#      and, unless --no-graph, symmem bench --graph         -> symmem-graph.json
#   2. scripts/ref_bench.py: torch symmetric memory one-shot/two-shot and
#      NCCL all_reduce, per call of a host loop, same sizes -> torch.json nccl.json
#   3. unless --no-graph, .gpu/ref/torch_graph.py: CUDA-graph replay times
#      and the peer-copy (NVLink) ceiling, converted by scripts/graph_ref.py
#                                                          -> torch-graph.json
#   4. symmem bench plot: time and busbw against size     -> compare.png
#   5. scripts/sidebyside.py: the side-by-side table, printed last (also in
#      summary.txt), then the list of failed steps.
#
# Usage: scripts/compare.sh [--world W] [--min 1KiB] [--max 256MiB] [--step x2]
#          [--dtype bf16] [--iters N] [--warmup N] [--loops N] [--no-graph] [--quick]
#          [--bin .gpu/symmem] [--ref-dir .gpu/ref] [--out DIR]
# Output files go to --out (default: $OUT when set, else out/bench/):
# symmem.json torch.json nccl.json symmem-graph.json torch-graph.json
# torch_graph.out compare.png bench.log summary.txt.
# The whole run stays under about 9 minutes with the default limits.
set -u
cd "$(dirname "$0")/.."

# NVLink multicast stays off everywhere: programs that use it can take a
# shared host's GPUs out of service.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1

world=""
min=1KiB max=256MiB step=x2 dtype=bf16
iters=100 warmup=20 loops=5
graph=1
bin=.gpu/symmem
refdir=.gpu/ref
out=${OUT:-out/bench}
# Time limits in seconds.
t_ours=${T_OURS:-200} t_ref=${T_REF:-200} t_graph=${T_GRAPH:-90} t_small=30

while [ $# -gt 0 ]; do
  case "$1" in
    --world) world=$2; shift 2 ;;
    --min) min=$2; shift 2 ;;
    --max) max=$2; shift 2 ;;
    --step) step=$2; shift 2 ;;
    --dtype) dtype=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --loops) loops=$2; shift 2 ;;
    --no-graph) graph=0; shift ;;
    --quick) max=16MiB iters=20 warmup=5 loops=3; shift ;;
    --bin) bin=$2; shift 2 ;;
    --ref-dir) refdir=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "compare.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

mkdir -p "$out"
log="$out/bench.log"
summary="$out/summary.txt"
: >"$log"
failures=()

# bytes converts 1KiB, 4MiB, 1GiB or a plain count to bytes.
bytes() {
  local v=$1 n m=1
  case "$v" in
    *GiB|*G) n=${v%%G*}; m=$((1<<30)) ;;
    *MiB|*M) n=${v%%M*}; m=$((1<<20)) ;;
    *KiB|*K) n=${v%%K*}; m=$((1<<10)) ;;
    *) n=$v ;;
  esac
  echo $((n * m))
}

# step NAME LIMIT COMMAND...: runs COMMAND under a time limit, appends its
# output to the log, prints its tail, and records a failure.
step() {
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS rc
  echo "== $name (limit ${limit}s): $*" | tee -a "$log"
  timeout -k 10 "$limit" "$@" >>"$log.part" 2>&1
  rc=$?
  cat "$log.part" >>"$log"
  tail -n 15 "$log.part"
  rm -f "$log.part"
  if [ $rc -ne 0 ]; then
    local why="exit status $rc"
    [ $rc -eq 124 ] || [ $rc -eq 137 ] && why="timed out after ${limit}s"
    failures+=("$name: $why")
  fi
  echo "== $name: rc $rc in $((SECONDS - t0))s" | tee -a "$log"
  return $rc
}

ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ -n "$world" ] || world=$ngpu
{
  echo "== machine: $ngpu GPUs, world $world"
  nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader 2>&1
  nvidia-smi topo -m 2>&1
} >>"$log"
if [ "$world" -lt 2 ] || [ "$world" -gt "$ngpu" ]; then
  failures+=("world $world: need 2..$ngpu GPUs")
fi

minb=$(bytes "$min") maxb=$(bytes "$max") stepn=${step#x}
sweep=(--min "$min" --max "$max" --step "$step" --dtype "$dtype" --iters "$iters" --warmup "$warmup" --loops "$loops")

# 1. symmem.
if [ ! -x "$bin" ]; then
  failures+=("symmem bench: no executable $bin (build it with scripts/build-gpu-binaries.sh and carry .gpu)")
else
  rm -f "$out/symmem.json"
  t0=$SECONDS
  step "symmem bench (in-process, world $world)" "$t_ours" \
    "$bin" bench --device cuda --world "$world" --algo ll,one-shot,two-shot "${sweep[@]}" \
    --progress=false --json "$out/symmem.json"
  if [ ! -s "$out/symmem.json" ] && [ $((SECONDS - t0)) -lt 60 ]; then
    step "symmem bench (launch --nproc $world)" "$t_ours" \
      "$bin" launch --nproc "$world" -- "$bin" bench --device cuda --algo ll,one-shot,two-shot "${sweep[@]}" \
      --progress=false --json "$out/symmem.json"
  fi
  # The same calls captured into CUDA graphs, to set beside the reference's
  # graph replays (step 3).
  if [ "$graph" = 1 ]; then
    rm -f "$out/symmem-graph.json"
    step "symmem bench --graph (in-process, world $world)" "$t_ours" \
      "$bin" bench --device cuda --world "$world" --algo ll,one-shot,two-shot --graph "${sweep[@]}" \
      --progress=false --json "$out/symmem-graph.json"
  fi
fi

# 2. PyTorch symmetric memory and NCCL, in our schema.
rm -f "$out/torch.json" "$out/nccl.json"
step "reference: torch symm-mem and NCCL per call (scripts/ref_bench.py)" "$t_ref" \
  python3 scripts/ref_bench.py --world "$world" --out-dir "$out" --min "$minb" --max "$maxb" --step "$stepn" \
  --dtype "$dtype" --iters "$iters" --warmup "$warmup" --loops "$loops" --sync --timeout $((t_ref - 20))

# 3. The reference graph-replay script, as is (its table goes to the log).
if [ "$graph" = 1 ]; then
  if [ -f "$refdir/torch_graph.py" ]; then
    rm -f "$out/torch-graph.json"
    step "reference: CUDA-graph replay and peer copy ($refdir/torch_graph.py)" "$t_graph" \
      bash -c 'python3 "$1" "$2" | tee "$3"' _ "$refdir/torch_graph.py" "$world" "$out/torch_graph.out" &&
      step "reference graph replays in our schema (scripts/graph_ref.py)" "$t_small" \
        python3 scripts/graph_ref.py --world "$world" --in "$out/torch_graph.out" --out "$out/torch-graph.json"
  else
    failures+=("torch_graph.py: not found in $refdir (copy the reference scripts there and carry it)")
  fi
fi

# 4. The plot, from whatever reports exist.
reports=()
for f in symmem torch nccl symmem-graph torch-graph; do
  [ -s "$out/$f.json" ] && reports+=("$out/$f.json")
done
if [ ${#reports[@]} -gt 0 ] && [ -x "$bin" ]; then
  step "plot" "$t_small" "$bin" bench plot --out "$out/compare.png" \
    --title "all-reduce $dtype, world $world: symmem vs PyTorch symmetric memory vs NCCL (per call, host loop)" "${reports[@]}"
fi

# 5. The side-by-side table, last.
echo
{
  echo "================ symmem vs PyTorch symmetric memory vs NCCL ================"
  if [ ${#reports[@]} -gt 0 ]; then
    timeout "$t_small" python3 scripts/sidebyside.py "${reports[@]}" || echo "side by side: the table script failed (rc $?)"
  else
    echo "no report was produced"
  fi
  grep -m1 "; peer copy" "$log" | sed "s/^/torch_graph: /"
  echo
  if [ ${#failures[@]} -eq 0 ]; then
    echo "all steps ok; files in $out: $(cd "$out" && ls | tr '\n' ' ')"
  else
    echo "FAILED steps (details in $log):"
    for f in "${failures[@]}"; do echo "  - $f"; done
  fi
} | tee "$summary"
[ ${#failures[@]} -eq 0 ]
