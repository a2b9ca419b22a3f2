#!/usr/bin/env bash
# Compares the CPU time and peak memory of `symmem fuzz` between builds:
# each revision is built once, then the runs alternate between the builds,
# round after round, so that a machine whose speed drifts (shared or
# throttled CPUs) weighs on every build alike. Prints, per build and mode,
# the CPU time (user + sys) of each run, its minimum and median, and the
# peak RSS.
#
# With --instructions it counts instead the instructions each run executes
# with the collector off (GOGC=off, GOMAXPROCS=1, no asynchronous
# preemption, under valgrind's cachegrind): the work of the program
# itself, which repeats to within 0.1% from run to run where CPU time on
# a shared machine varies by half.
# It leaves out the collector's share (10-20% of a PTX run), which changes
# in allocation show only in the CPU time. The runs take about 40 times
# longer: use fewer seeds.
#
# With --misses (implies --instructions) cachegrind also models the
# machine's caches and each run prints, after its instructions, the
# millions of first-level data cache misses (reads and writes): where the
# instructions stay the same, what a change does to memory traffic.
#
# With --pin N each run is pinned to CPU N (taskset) with GOMAXPROCS=1, so
# that the collector shares the fuzzer's core: steadier figures on a
# machine whose other cores are busy.
#
#   scripts/fuzz-cpu.sh [--rounds 3] [--seeds 30] [--modes go,ptx] [--jobs 1] [--pin N] [--instructions] [--misses] REV...
#
# REV is anything git rev-parse takes (HEAD, a hash, a branch); "." is the
# working tree as it is. Needs GNU time (/usr/bin/time), or valgrind with
# --instructions.
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=3 seeds=30 modes=go,ptx jobs=1 instr= misses= cachesim=no pin=()
revs=()
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --instructions) instr=1; shift ;;
    --misses) instr=1 misses=1 cachesim=yes; shift ;;
    --pin) pin=(taskset -c "$2" env GOMAXPROCS=1); shift 2 ;;
    -h|--help) sed -n '2,31p' "$0"; exit 0 ;;
    -*) echo "fuzz-cpu: unknown flag $1" >&2; exit 2 ;;
    *) revs+=("$1"); shift ;;
  esac
done
if [ ${#revs[@]} -eq 0 ]; then
  echo "fuzz-cpu: name at least one revision (e.g. HEAD~3 .)" >&2
  exit 2
fi
if [ -n "$instr" ] && ! command -v valgrind >/dev/null; then
  echo "fuzz-cpu: --instructions needs valgrind" >&2
  exit 1
fi
if [ -z "$instr" ] && [ ! -x /usr/bin/time ]; then
  echo "fuzz-cpu: needs GNU time at /usr/bin/time" >&2
  exit 1
fi
if [ ${#pin[@]} -gt 0 ] && ! command -v taskset >/dev/null; then
  echo "fuzz-cpu: --pin needs taskset" >&2
  exit 1
fi

tmp=$(mktemp -d)
trap 'git worktree prune >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
names=()
for i in "${!revs[@]}"; do
  rev=${revs[$i]}
  bin="$tmp/symmem.$i"
  if [ "$rev" = . ]; then
    go build -o "$bin" ./cmd/symmem
    names+=("working-tree")
  else
    hash=$(git rev-parse --short "$rev^{commit}")
    git worktree add --detach -q "$tmp/wt.$i" "$hash"
    (cd "$tmp/wt.$i" && go build -o "$bin" ./cmd/symmem)
    git worktree remove --force "$tmp/wt.$i"
    names+=("$hash")
  fi
done

IFS=, read -r -a modelist <<<"$modes"
for mode in "${modelist[@]}"; do
  case "$mode" in
    go) kflag=() ;;
    ptx) kflag=(--kernels ptx) ;;
    *) echo "fuzz-cpu: unknown mode $mode (go or ptx)" >&2; exit 2 ;;
  esac
  declare -A cpu=() rss=()
  for ((r = 1; r <= rounds; r++)); do
    for i in "${!revs[@]}"; do
      if [ -n "$instr" ]; then
        # Valgrind does not know rdtscp, which the Go runtime executes when
        # a lock is contended between its threads: such a run dies of
        # SIGILL, and is tried again (up to three times). A run that fails
        # otherwise (killed for memory: the collector is off) has no count.
        n=
        for _ in 1 2 3; do
          if GOGC=off GOMAXPROCS=1 GODEBUG=asyncpreemptoff=1 valgrind --tool=cachegrind --cache-sim="$cachesim" \
            --cachegrind-out-file=/dev/null "$tmp/symmem.$i" fuzz "${kflag[@]}" --seeds "$seeds" -j "$jobs" \
            --shrink=false --progress=false >/dev/null 2>"$tmp/vg"; then
            # cachegrind's summary line: "==PID== I   refs:      17,575,841,011"
            n=$(awk '/I +refs:/ { gsub(",", "", $NF); print $NF }' "$tmp/vg")
            break
          fi
          grep -q SIGILL "$tmp/vg" || break
        done
        cpu[$i]+=" $(awk -v n="${n:-0}" 'BEGIN { if (n > 0) printf "%.3f", n / 1e9; else printf "failed" }')"
        if [ -n "$misses" ] && [ -n "$n" ]; then
          # "==PID== D1  misses:   73,723,475  ( 54,473,626 rd   +  19,249,849 wr)"
          cpu[$i]+="/$(awk '/D1 +misses:/ { gsub(",", "", $4); printf "%.1f", $4 / 1e6 }' "$tmp/vg")"
        fi
        continue
      fi
      /usr/bin/time -o "$tmp/time" -f "%U %S %M" ${pin[@]+"${pin[@]}"} "$tmp/symmem.$i" fuzz "${kflag[@]}" --seeds "$seeds" \
        -j "$jobs" --shrink=false --progress=false >/dev/null 2>&1 || true
      # GNU time puts "Command exited with non-zero status N" first when
      # the run fails (a build whose fuzzer finds a failure): the figures
      # are the last line.
      read -r user sys kb < <(tail -n 1 "$tmp/time")
      cpu[$i]+=" $(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')"
      rss[$i]+=" $((kb / 1024))"
    done
  done
  echo "symmem fuzz ${kflag[*]:+${kflag[*]} }--seeds $seeds -j $jobs, $rounds rounds alternated${pin[*]:+, pinned (${pin[*]})}:"
  for i in "${!revs[@]}"; do
    if [ -n "$instr" ]; then
      echo "  ${names[$i]}: billions of instructions${misses:+/millions of D1 misses}, collector off:${cpu[$i]}"
      continue
    fi
    sorted=$(tr ' ' '\n' <<<"${cpu[$i]}" | sed '/^$/d' | sort -n | tr '\n' ' ')
    echo "  ${names[$i]}: CPU s ${sorted}$(awk '{ printf "(min %s, median %s)", $1, $(int((NF + 1) / 2)) }' <<<"$sorted"), peak RSS MB${rss[$i]}"
  done
  unset cpu rss
done
