#!/usr/bin/env bash
# Runs a symmem fuzz campaign on a real Slurm cluster of one node, started
# on this machine, and checks that the merged report of its shards is the
# report of one process over the same seeds.
#
#   scripts/slurm-test.sh [--shards 4] [--seeds 200] [--timeout 300] [--keep]
#
# It installs Slurm and MUNGE from the distribution's packages when they
# are missing (slurmctld, slurmd, slurm-client, munge; needs root and
# apt-get), writes a slurm.conf for this host with the CPUs and memory
# slurmd detects, starts munged, slurmctld and slurmd on ports of their
# own with every file in a temporary folder, submits
# examples/campaigns/fuzz.sbatch as a job array of --shards tasks over a
# planted bug (--faults all: duplicated signal writes, which the protocol
# cannot tell from real ones), waits for it, merges the reports with
# symmem merge, and compares the merged report with a single process's:
# the same failures, first seeds, counts, steps, traces and faults.
# Everything it started is stopped on exit, and its folder removed (kept
# with --keep, or when the test fails, for its logs).
set -euo pipefail
cd "$(dirname "$0")/.."

shards=4 seeds=200 timeout=300 keep=
while [ $# -gt 0 ]; do
  case "$1" in
    --shards) shards=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    *) echo "slurm-test: unknown argument $1 (want --shards N, --seeds N, --timeout SECONDS, --keep)" >&2; exit 2 ;;
  esac
done
# The planted bug: cheap programs (world 2, 64-byte one-shot all-reduces)
# under every fault, duplicated signal writes included; a few dozen seeds
# find it, and 200 find several failures, some in more than one shard.
fuzz_flags="--faults all --algos one-shot --worlds 2 --sizes 64"

say() { echo "slurm-test: $*"; }
die() { echo "slurm-test: $*" >&2; exit 1; }

# Install what is missing.
need=()
for tool in slurmctld:slurmctld slurmd:slurmd sbatch:slurm-client munged:munge mungekey:munge; do
  command -v "${tool%%:*}" >/dev/null 2>&1 || need+=("${tool#*:}")
done
if [ ${#need[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || die "Slurm is not installed (missing ${need[*]}) and installing it needs root"
  say "installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
[ "$(id -u)" = 0 ] || die "slurmd runs jobs as their user and must run as root: run this as root"

work=$(mktemp -d /tmp/symmem-slurm.XXXXXX)
chmod 755 "$work"
pids=() job= ok=
cleanup() {
  local status=$?
  set +e
  if [ -n "$job" ]; then scancel "$job" 2>/dev/null; fi
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  if [ -z "$ok" ]; then
    for log in "$work"/*.log "$work"/*.out "$work"/run/*.out; do
      [ -f "$log" ] && { echo "--- $log (last lines)"; tail -n 20 "$log"; }
    done
    echo "slurm-test: failed; its files are in $work" >&2
  elif [ -z "$keep" ]; then
    rm -rf "$work"
  else
    say "files kept in $work"
  fi
  exit $status
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# waitfor SECONDS WHAT COMMAND...: runs COMMAND every half second until it
# succeeds; fails naming WHAT after SECONDS.
waitfor() {
  local secs=$1 what=$2; shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || die "timed out after ${secs}s waiting for $what"
    sleep 0.5
  done
}

# freeport: a TCP port nothing listens on.
freeport() {
  local p
  for _ in $(seq 100); do
    p=$((20000 + RANDOM % 20000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
  done
  die "no free TCP port found"
}

say "building symmem"
go build -o "$work/symmem" ./cmd/symmem

# MUNGE, with a key and a socket of its own.
mkdir -p "$work/munge"
chmod 700 "$work/munge"
mungekey --create --keyfile="$work/munge/munge.key" --bits=1024
munged --foreground --force --key-file="$work/munge/munge.key" --socket="$work/munge/munge.socket" \
  --pid-file="$work/munge/munged.pid" --seed-file="$work/munge/munged.seed" --log-file="$work/munged.log" \
  >"$work/munged.out" 2>&1 &
pids+=($!)
waitfor 20 "munged to answer on $work/munge/munge.socket" sh -c "munge --socket='$work/munge/munge.socket' -n | unmunge --socket='$work/munge/munge.socket'"

# slurm.conf for this host, as slurmd detects it.
node=$(slurmd -C | head -n 1)
host=$(sed -n 's/^NodeName=\([^ ]*\).*/\1/p' <<<"$node")
[ -n "$host" ] || die "slurmd -C printed no NodeName: $node"
cpus=$(sed -n 's/.* CPUs=\([0-9]*\).*/\1/p' <<<"$node")
mkdir -p "$work/state" "$work/spool" "$work/run"
cat >"$work/slurm.conf" <<EOF
ClusterName=symmemtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$(freeport)
SlurmdPort=$(freeport)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$work/munge/munge.socket
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
MinJobAge=600
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=symmemtest Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$work/slurm.conf"

say "starting slurmctld and slurmd ($host: $cpus CPUs)"
slurmctld -D -i -f "$SLURM_CONF" >"$work/slurmctld.out" 2>&1 &
pids+=($!)
waitfor 30 "slurmctld to answer (scontrol ping)" sh -c 'scontrol ping | grep -q UP'
slurmd -D -f "$SLURM_CONF" >"$work/slurmd.out" 2>&1 &
pids+=($!)
waitfor 30 "node $host to be idle (sinfo)" sh -c "sinfo -h -n '$host' -o %t | grep -qx idle"

# The campaign: a job array of shards, then one process over every seed.
say "submitting $shards shards of $seeds seeds: symmem fuzz --seeds $seeds $fuzz_flags"
start=$SECONDS
job=$(cd "$work/run" && SYMMEM="$work/symmem" SEEDS="$seeds" FUZZ_FLAGS="$fuzz_flags" REPORTS="$work/reports" \
  sbatch --parsable --array="0-$((shards - 1))" --output="$work/run/shard-%a.out" "$OLDPWD/examples/campaigns/fuzz.sbatch")
job=${job%%;*}
waitfor "$timeout" "job array $job ($shards fuzz shards) to finish (squeue -j $job)" sh -c "[ -z \"\$(squeue -h -j $job 2>/dev/null)\" ]"
say "job array $job finished in $((SECONDS - start))s"
states=$(scontrol -o show job "$job" | sed -n 's/.*ArrayTaskId=\([0-9]*\) .*JobState=\([A-Z_]*\) .*ExitCode=\([0-9:]*\).*/\1 \2 \3/p' | sort -n)
echo "$states" | sed 's/^/  task /'
[ "$(grep -c ' COMPLETED ' <<<"$states")" = "$shards" ] || die "not every task of job array $job completed"
job=
# Each shard took its place from the job array's environment.
for i in $(seq 0 $((shards - 1))); do
  head -n 1 "$work/run/shard-$i.out" | grep -q "^shard $i/$shards (Slurm job array: SLURM_ARRAY_TASK_ID=$i SLURM_ARRAY_TASK_MIN=0 SLURM_ARRAY_TASK_COUNT=$shards)" ||
    die "shard $i's report does not start with its shard from the Slurm environment: $(head -n 1 "$work/run/shard-$i.out")"
done

status=0
"$work/symmem" merge "$work"/reports/shard-*.jsonl >"$work/merged.txt" 2>"$work/merge.err" || status=$?
cat "$work/merge.err"
[ "$status" = 1 ] || die "symmem merge exited with $status, want 1 (findings, the campaign complete): $(cat "$work/merge.err")"

status=0
"$work/symmem" fuzz --seeds "$seeds" $fuzz_flags --progress=false >"$work/single.txt" 2>/dev/null || status=$?
[ "$status" = 1 ] || die "the single process exited with $status, want 1 (the planted bug found)"

# Without a shard's report the campaign fails, naming the shard.
status=0
"$work/symmem" merge $(ls "$work"/reports/shard-*.jsonl | grep -v "shard-1.jsonl") >/dev/null 2>"$work/missing.err" || status=$?
[ "$status" = 2 ] && grep -q "have no report: 1/$shards" "$work/missing.err" ||
  die "merge without shard 1 exited with $status, want 2 naming shard 1/$shards: $(cat "$work/missing.err")"

# The reports agree but for times, rates and workers.
times='s/ in [0-9.]+[a-zµ]+: [0-9]+ schedules\/s on [0-9]+ workers/ in T: R schedules\/s on W workers/; s/shrinking took [0-9.]+[a-zµ]+/shrinking took T/'
if ! diff <(sed -E "$times" "$work/single.txt") <(sed -E "$times" "$work/merged.txt"); then
  die "the merged report (>) differs from the single process's (<)"
fi
failures=$(grep -c '^FAIL ' "$work/merged.txt")
[ "$failures" -gt 0 ] || die "the planted bug was not found"
sed -n 's/^failures: /merged and single process: /p' "$work/merged.txt" | sed 's/^/slurm-test: /'
ok=1
say "ok: $shards Slurm shards merged equal one process over $seeds seeds ($failures distinct failures) in $SECONDS s"
