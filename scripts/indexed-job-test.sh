#!/usr/bin/env bash
# Runs the command of examples/campaigns/fuzz-indexed-job.yaml as a
# Kubernetes Indexed Job runs it, one process per completion index with
# JOB_COMPLETION_INDEX and the manifest's environment (SEEDS, FUZZ_FLAGS
# and the report folder overridden: a small campaign over the planted bug
# of scripts/slurm-test.sh), merges the reports, and checks that the merged
# report equals a single process's over the same seeds. It checks the
# example, not Kubernetes: no cluster is needed. Needs python3 with PyYAML.
#
#   scripts/indexed-job-test.sh
set -euo pipefail
cd "$(dirname "$0")/.."

seeds=200 fuzz_flags="--faults all --algos one-shot --worlds 2 --sizes 64"
work=$(mktemp -d /tmp/symmem-indexed-job.XXXXXX)
trap 'rm -rf "$work"' EXIT
die() { echo "indexed-job-test: $*" >&2; exit 1; }

# A python3 with PyYAML reads the manifest: the one on PATH, Debian's, or
# Debian's after installing python3-yaml (CI runs as root).
py=
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import yaml' 2>/dev/null; then py=$p; break; fi
done
if [ -z "$py" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  apt-get update -qq && apt-get install -y -qq --no-install-recommends python3-yaml >/dev/null && py=/usr/bin/python3
fi
[ -n "$py" ] || die "needs python3 with PyYAML to read the manifest (apt-get install python3-yaml)"
go build -o "$work/bin/symmem" ./cmd/symmem
# The manifest's pod command, completions and environment, as shell lines.
"$py" - examples/campaigns/fuzz-indexed-job.yaml >"$work/job.sh" <<'PY'
import shlex, sys, yaml
job = yaml.safe_load(open(sys.argv[1]))
spec = job["spec"]
assert spec["completionMode"] == "Indexed", "not an Indexed Job"
c = spec["template"]["spec"]["containers"][0]
print("completions=%d" % spec["completions"])
for e in c["env"]:
    print("export %s=%s" % (e["name"], shlex.quote(e["value"])))
print("command=%s" % shlex.quote(" ".join(shlex.quote(w) for w in c["command"] + c["args"])))
PY
# shellcheck disable=SC1091
. "$work/job.sh"
[ "$SYMMEM_SHARD_COUNT" = "$completions" ] || die "SYMMEM_SHARD_COUNT=$SYMMEM_SHARD_COUNT but completions: $completions"
export SEEDS=$seeds FUZZ_FLAGS=$fuzz_flags JOBS=1 PATH="$work/bin:$PATH"
mkdir -p "$work/reports"
command=${command//\/reports\//$work/reports/}
for i in $(seq 0 $((completions - 1))); do
  JOB_COMPLETION_INDEX=$i eval "$command" >"$work/pod-$i.out" 2>&1 || die "pod $i failed: $(cat "$work/pod-$i.out")"
  head -n 1 "$work/pod-$i.out" | grep -q "^shard $i/$completions (Kubernetes Indexed Job: JOB_COMPLETION_INDEX=$i SYMMEM_SHARD_COUNT=$completions)" ||
    die "pod $i's report does not start with its shard: $(head -n 1 "$work/pod-$i.out")"
done
status=0
symmem merge "$work"/reports/shard-*.jsonl >"$work/merged.txt" 2>"$work/merge.err" || status=$?
[ "$status" = 1 ] || die "symmem merge exited with $status, want 1: $(cat "$work/merge.err")"
status=0
# shellcheck disable=SC2086
symmem fuzz --seeds "$seeds" $fuzz_flags --progress=false >"$work/single.txt" 2>/dev/null || status=$?
[ "$status" = 1 ] || die "the single process exited with $status, want 1"
times='s/ in [0-9.]+[a-zµ]+: [0-9]+ schedules\/s on [0-9]+ workers/ in T: R schedules\/s on W workers/; s/shrinking took [0-9.]+[a-zµ]+/shrinking took T/'
diff <(sed -E "$times" "$work/single.txt") <(sed -E "$times" "$work/merged.txt") ||
  die "the merged report (>) differs from the single process's (<)"
echo "indexed-job-test: ok: $completions pods of the Indexed Job example merged equal one process over $seeds seeds"
