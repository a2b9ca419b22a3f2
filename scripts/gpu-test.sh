#!/usr/bin/env bash
# GPU test entry point. Run on a GPU machine from the repository root, with
# binaries built by scripts/build-gpu-binaries.sh in .gpu/ (the machine needs
# no Go). Runs the CUDA device tests, the NVLink topology report, and every
# conformance case (the SPEC test table, signals, IntraNodeComm, simulator
# conformance, 500-cycle leak check) at worlds 2 and 4, with ranks as
# goroutines of one process and with one process per rank under
# `symmem launch`. A world larger than the GPU count runs with
# SYMMEM_ALLOW_OVERLAPPING_DEVICES=1: ranks are placed round-robin on the
# GPUs and split their multiprocessors, so one GPU runs every step. It
# checks that when one rank process is SIGKILLed
# (SYMMEM_FAULT_KILL) before its rendezvous or its all-reduce, launch and
# every other rank report it. Prints a table of what ran last; exits
# non-zero on any failure.
set -u
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
BIN=${BIN:-.gpu}
LOGS=${OUT:-.gpu}/gpu-test-logs
mkdir -p "$LOGS"
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
worlds=${WORLDS:-"2 4"}
cycles=${CYCLES:-500}
rows=()
failed=0

step() { # name, command...
  local name=$1; shift
  local log="$LOGS/$(echo "$name" | tr ' /' '__').log"
  local t0=$(date +%s%N)
  timeout "${STEP_TIMEOUT:-300}" "$@" >"$log" 2>&1
  local rc=$?
  local dt=$(( ($(date +%s%N) - t0) / 1000000 ))
  local status=ok
  if [ $rc -ne 0 ]; then status="FAIL (rc $rc)"; failed=$((failed+1)); fi
  rows+=("$(printf '%-44s %6d ms  %s' "$name" "$dt" "$status")")
  echo "== $name: $status"; tail -n 40 "$log"
}

# expect_peer_failure WORLD POINT: rank 1 of a launched all-reduce SIGKILLs
# itself at POINT (rendezvous or allreduce). Succeeds only when launch exits
# non-zero reporting rank 1 as killed and every other rank exits with an
# error that names rank 1 as killed (rank.PeerFailedError).
expect_peer_failure() {
  local w=$1 point=$2 log rc bad=0 r
  log=$(mktemp)
  SYMMEM_FAULT_KILL=1:$point "$BIN/symmem" launch --nproc "$w" -- \
    "$BIN/symmem" allreduce --device cuda --timeout 5s >"$log" 2>&1
  rc=$?
  cat "$log"
  echo "-- launch exited with status $rc"
  if [ "$rc" -eq 0 ]; then echo "EXPECTED: launch to exit non-zero"; bad=1; fi
  grep -q '^symmem: rank 1 was killed by signal killed$' "$log" ||
    { echo "EXPECTED: launch's error 'rank 1 was killed by signal killed'"; bad=1; }
  for ((r = 0; r < w; r++)); do
    [ "$r" -eq 1 ] && continue
    grep -Eq "^symmem: rank $r: .*peer rank 1 was killed by signal killed" "$log" ||
      { echo "EXPECTED: rank $r to exit with an error naming rank 1 as killed"; bad=1; }
  done
  rm -f "$log"
  [ "$bad" -eq 0 ]
}
export -f expect_peer_failure
export BIN

step "nvlink topology" "$BIN/symmem" topo --device cuda
step "cuda device tests" env SYMMEM_GPU_TESTS=1 "$BIN/cuda.test" -test.v -test.count=1
# Under lazy module loading (forced), list the host calls that wait for a
# peer's kernel on the same GPU, and check that a second open is refused.
step "host calls under lazy loading (probe)" env SYMMEM_GPU_TESTS=1 SYMMEM_LAZY_PROBE=1 CUDA_MODULE_LOADING=LAZY \
  "$BIN/cuda.test" -test.v -test.count=1 -test.run 'TestGPUHostCallsDoNotWaitForPeerKernels'
# Ranks of one process sharing the GPUs, in two groups that run every form
# at once, with the driver's default loading mode left alone.
for w in ${SUBGROUP_WORLDS:-4 5}; do
  step "subgroup forms in-process world $w" env SYMMEM_ALLOW_OVERLAPPING_DEVICES=1 \
    "$BIN/symmem" selftest --device cuda --world "$w" --cases '^subgroup-forms$' --timeout 20s
done
for w in $worlds; do
  if [ "$w" -gt "$ngpu" ]; then
    export SYMMEM_ALLOW_OVERLAPPING_DEVICES=1
    rows+=("$(printf '%-44s %9s  %s' "world $w on $ngpu GPUs" "-" "ranks share GPUs round-robin")")
  else
    unset SYMMEM_ALLOW_OVERLAPPING_DEVICES
  fi
  step "selftest in-process world $w" "$BIN/symmem" selftest --device cuda --world "$w" --cycles "$cycles"
  step "selftest launch --nproc $w" "$BIN/symmem" launch --nproc "$w" -- "$BIN/symmem" selftest --device cuda --cycles "$cycles"
  step "allreduce in-process world $w bf16 1MiB" "$BIN/symmem" allreduce --device cuda --world "$w" --bytes 1MiB
  step "allreduce launch --nproc $w f16 max 3MiB" "$BIN/symmem" launch --nproc "$w" -- "$BIN/symmem" allreduce --device cuda --bytes 3MiB --dtype f16 --op max --algo two-shot
  for point in rendezvous allreduce; do
    step "launch --nproc $w rank 1 killed at $point" bash -c 'expect_peer_failure "$@"' _ "$w" "$point"
  done
done

echo
echo "GPU test summary ($ngpu GPUs: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1))"
printf '%-44s %9s  %s\n' "step" "time" "result"
for r in "${rows[@]}"; do echo "$r"; done
[ $failed -eq 0 ]
