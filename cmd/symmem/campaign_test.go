package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/symmem/symmem/campaign"
)

// runWith runs a command with its environment read from env, and returns
// its stdout and stderr apart.
func runWith(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	root := newRootApp(&app{terminal: isTerminal, getenv: func(k string) string { return env[k] }})
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err = root.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

// timing matches what differs between runs of the same seeds: times,
// rates and workers.
var timing = regexp.MustCompile(` in [0-9.]+[a-zµ]+: [0-9]+ schedules/s on [0-9]+ workers|shrinking took [0-9.]+[a-zµ]+`)

// shardCampaign runs args as n shards with --report, merges their reports
// and returns the merged report, merge's stderr and its exit status.
func shardCampaign(t *testing.T, n int, args ...string) (merged, status string, code int) {
	t.Helper()
	dir := t.TempDir()
	var reports []string
	for i := range n {
		path := filepath.Join(dir, fmt.Sprintf("shard-%d.jsonl", i))
		out, errOut, err := runWith(t, nil, append(args, "--shard", fmt.Sprintf("%d/%d", i, n), "--report", path)...)
		if code := exitCode(err); code > 1 {
			t.Fatalf("shard %d/%d: %v\n%s%s", i, n, err, out, errOut)
		}
		if first, _, _ := strings.Cut(out, "\n"); !strings.HasPrefix(first, fmt.Sprintf("shard %d/%d (--shard %d/%d): seeds ", i, n, i, n)) {
			t.Errorf("shard %d/%d: the report's first line does not name the shard and its source: %q", i, n, first)
		}
		reports = append(reports, path)
	}
	merged, status, err := runWith(t, nil, append([]string{"merge"}, reports...)...)
	return merged, status, exitCode(err)
}

// TestMergedCampaignsEqualOneProcess: fuzz, check and litmus --seeds run
// in shards and merged print what one process over the same seeds
// prints, but for times, and exit with the same status.
func TestMergedCampaignsEqualOneProcess(t *testing.T) {
	const harness = "../../examples/kernels/cas_exchange_relaxed_wait.json"
	bare := bareHarness(t, harness)
	for _, c := range []struct {
		name   string
		shards int
		args   []string
		want   string // a line of the report
	}{
		// The planted bug: duplicated signal writes (--faults all). Seed
		// 28's race is found again from seed 60 on, in the other shard.
		{"fuzz", 2, []string{"fuzz", "--seeds", "100", "--faults", "all", "--algos", "one-shot", "--worlds", "2", "--sizes", "64", "-j", "2", "--shrink=false"},
			"FAIL 2/2 (4 cases, first seed 28): race: "},
		// Shrunk forms merge too: each failure's is its first seed's.
		{"fuzz shrunk", 2, []string{"fuzz", "--seeds", "30", "--faults", "all", "--algos", "one-shot", "--worlds", "2", "--sizes", "64", "--shrink-runs", "10"},
			"failures: 2 cases, 2 distinct; shrinking took"},
		{"fuzz clean", 2, []string{"fuzz", "--seeds", "5", "--faults", "none", "--algos", "one-shot", "--worlds", "2", "--sizes", "64"},
			"failures: 0 cases, 0 distinct"},
		{"check", 2, []string{"check", harness, "--worlds", "2", "--seeds", "2", "--var", "n=128", "--first-seed", "7", "--shrink-runs", "8"},
			"   found at world 2 seed 7, after 1 schedules of that world; in 2 of 2 runs"},
		// The check's notes (here: the PTX has no .loc lines) are the
		// merged report's too.
		{"check notes", 2, []string{"check", bare, "--worlds", "2", "--seeds", "2", "--var", "n=128", "--shrink=false"},
			"note: the PTX has no .loc lines"},
		{"litmus", 2, []string{"litmus", "../../litmus/testdata/A-fence-after-data.litmus", "../../litmus/testdata/LB-control-dependency.litmus", "--seeds", "30"},
			"  operational model, 30 seeds (30 finished): 3 outcomes, 0 allowed ones not reached"},
	} {
		t.Run(c.name, func(t *testing.T) {
			single, _, err := runWith(t, nil, c.args...)
			wantCode := exitCode(err)
			if !strings.Contains(single, c.want) {
				t.Fatalf("the single process's report does not say %q:\n%s", c.want, single)
			}
			merged, status, code := shardCampaign(t, c.shards, c.args...)
			if code != wantCode {
				t.Errorf("merge exited with %d, the single process with %d (%v)\n%s", code, wantCode, err, status)
			}
			if a, b := timing.ReplaceAllString(single, "T"), timing.ReplaceAllString(merged, "T"); a != b {
				t.Errorf("the merged report differs from one process's:\n--- one process\n%s\n--- merged\n%s", single, merged)
			}
			if want := fmt.Sprintf("in %d shards: %d shards merged", c.shards, c.shards); !strings.Contains(status, want) {
				t.Errorf("merge's status does not say %q:\n%s", want, status)
			}
		})
	}
}

// bareHarness copies harness and its PTX, without the PTX's debug lines
// (.loc, .file), into a temporary folder and returns the copy's path.
func bareHarness(t *testing.T, harness string) string {
	t.Helper()
	text, err := os.ReadFile(harness)
	if err != nil {
		t.Fatal(err)
	}
	var h struct {
		PTX string `json:"ptx"`
	}
	if err := json.Unmarshal(text, &h); err != nil {
		t.Fatal(err)
	}
	ptx, err := os.ReadFile(filepath.Join(filepath.Dir(harness), h.PTX))
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, l := range strings.Split(string(ptx), "\n") {
		if f := strings.Fields(l); len(f) > 0 && (f[0] == ".loc" || f[0] == ".file") {
			continue
		}
		kept = append(kept, l)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, h.PTX), []byte(strings.Join(kept, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, filepath.Base(harness))
	if err := os.WriteFile(out, text, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestShardFromTheEnvironment: without --shard the command takes its
// shard from a Slurm job array, a Kubernetes Indexed Job or a test
// runner, says so in its first line, and runs that shard's seeds.
func TestShardFromTheEnvironment(t *testing.T) {
	status := filepath.Join(t.TempDir(), "status")
	args := []string{"fuzz", "--seeds", "10", "--first-seed", "100", "--faults", "none", "--worlds", "2", "--sizes", "64", "--algos", "one-shot"}
	for _, c := range []struct {
		name  string
		env   map[string]string
		extra []string
		first string
	}{
		{"slurm", map[string]string{"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "4", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_STEP": "1"}, nil,
			"shard 2/4 (Slurm job array: SLURM_ARRAY_TASK_ID=3 SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_COUNT=4): seeds 105-106 of 100-109"},
		{"kubernetes", map[string]string{"JOB_COMPLETION_INDEX": "1"}, []string{"--shard-count", "3"},
			"shard 1/3 (Kubernetes Indexed Job: JOB_COMPLETION_INDEX=1, count 3 from --shard-count): seeds 103-105 of 100-109"},
		{"kubernetes count from the environment", map[string]string{"JOB_COMPLETION_INDEX": "0", "SYMMEM_SHARD_COUNT": "5"}, nil,
			"shard 0/5 (Kubernetes Indexed Job: JOB_COMPLETION_INDEX=0 SYMMEM_SHARD_COUNT=5): seeds 100-101 of 100-109"},
		{"test runner", map[string]string{"TEST_SHARD_INDEX": "1", "TEST_TOTAL_SHARDS": "2", "TEST_SHARD_STATUS_FILE": status}, nil,
			"shard 1/2 (test sharding: TEST_SHARD_INDEX=1 TEST_TOTAL_SHARDS=2): seeds 105-109 of 100-109"},
		{"the flag wins", map[string]string{"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_COUNT": "4"}, []string{"--shard", "0/2"},
			"shard 0/2 (--shard 0/2): seeds 100-104 of 100-109"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, err := runWith(t, c.env, append(args, c.extra...)...)
			if err != nil {
				t.Fatalf("%v\n%s%s", err, out, errOut)
			}
			lines := strings.SplitN(out, "\n", 3)
			if lines[0] != c.first {
				t.Errorf("first line %q, want %q", lines[0], c.first)
			}
			// The shard ran its seeds, and only those.
			r := regexp.MustCompile(`seeds (\d+)-(\d+) of`).FindStringSubmatch(c.first)
			var lo, hi int
			fmt.Sscan(r[1], &lo)
			fmt.Sscan(r[2], &hi)
			if want := fmt.Sprintf("fuzz: %d schedules in", hi-lo+1); !strings.HasPrefix(lines[1], want) {
				t.Errorf("second line %q, want %q...", lines[1], want)
			}
		})
	}
	if _, err := os.Stat(status); err != nil {
		t.Errorf("TEST_SHARD_STATUS_FILE not touched: %v", err)
	}
	// No shard anywhere: the report is as it always was.
	out, _, err := runWith(t, nil, args...)
	if err != nil || !strings.HasPrefix(out, "fuzz: 10 schedules in") {
		t.Errorf("unsharded: %v\n%s", err, out)
	}
}

// TestCampaignRefusals: bad shards and reports are refused before any
// work, and leave no report.
func TestCampaignRefusals(t *testing.T) {
	dir := t.TempDir()
	report := filepath.Join(dir, "r.jsonl")
	fuzz := []string{"fuzz", "--seeds", "4", "--report", report}
	for _, c := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, append(fuzz, "--shard", "4/4"), "the index counts from 0, want 0 to 3"},
		{nil, append(fuzz, "--shard-count", "4"), "no shard index"},
		{map[string]string{"JOB_COMPLETION_INDEX": "2"}, fuzz, "the shard count is missing"},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_MIN": "0"}, fuzz, "SLURM_ARRAY_TASK_COUNT is not set"},
		{nil, []string{"fuzz", "--seeds", "0", "--time", "1s", "--shard", "0/2"}, "give --seeds N and no --time"},
		{nil, []string{"fuzz", "--seeds", "4", "--report", filepath.Join(dir, "no", "such", "r.jsonl")}, "--report"},
		{nil, []string{"check", "../../examples/kernels/cas_exchange.json", "--seeds", "2", "--shard", "0/3"}, "has none: use at most 2 shards"},
		{nil, []string{"check", "../../examples/kernels/cas_exchange.json", "--seed", "2", "--shard", "0/3"}, "--seed runs one seed"},
		{nil, []string{"litmus", "../../litmus/testdata/A-fence-after-data.litmus", "--shard", "0/3"}, "give --seeds N"},
	} {
		out, errOut, err := runWith(t, c.env, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error with %q\n%s%s", c.args, err, c.want, out, errOut)
		}
		if strings.Contains(out, "schedules in") || strings.Contains(out, "runs,") {
			t.Errorf("%q ran before refusing:\n%s", c.args, out)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("refused commands left files: %v", ents)
	}
}

// TestMergeStatus: merge exits 2 when the campaign failed (a shard
// missing, reports of other flags, a partial report) and names why.
func TestMergeStatus(t *testing.T) {
	dir := t.TempDir()
	args := []string{"fuzz", "--seeds", "6", "--faults", "none", "--worlds", "2", "--sizes", "64", "--algos", "one-shot"}
	path := func(name string) string { return filepath.Join(dir, name) }
	for i := range 3 {
		if out, errOut, err := runWith(t, nil, append(args, "--shard", fmt.Sprintf("%d/3", i), "--report", path(fmt.Sprintf("s%d.jsonl", i)))...); err != nil {
			t.Fatalf("%v\n%s%s", err, out, errOut)
		}
	}
	if out, errOut, err := runWith(t, nil, "fuzz", "--seeds", "6", "--faults", "safety", "--worlds", "2", "--sizes", "64", "--algos", "one-shot", "--shard", "1/3", "--report", path("other.jsonl")); err != nil {
		t.Fatalf("%v\n%s%s", err, out, errOut)
	}
	data, err := os.ReadFile(path("s2.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path("cut.jsonl"), data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		files []string
		code  int
		want  string
	}{
		{[]string{"s0.jsonl", "s1.jsonl", "s2.jsonl"}, campaign.StatusClean, "3 shards merged"},
		{[]string{"s2.jsonl", "s0.jsonl", "s1.jsonl", "s1.jsonl"}, campaign.StatusClean, "shard 1/3 has 2 reports"},
		{[]string{"s0.jsonl", "s2.jsonl"}, campaign.StatusFailed, "1 of 3 shards have no report: 1/3"},
		{[]string{"s0.jsonl", "other.jsonl", "s2.jsonl"}, campaign.StatusFailed, "flags --faults=safety"},
		{[]string{"s0.jsonl", "s1.jsonl", "cut.jsonl"}, campaign.StatusFailed, "cut.jsonl: line"},
	} {
		var files []string
		for _, f := range c.files {
			files = append(files, path(f))
		}
		out, errOut, err := runWith(t, nil, append([]string{"merge"}, files...)...)
		msg := errOut
		if err != nil {
			msg += err.Error()
		}
		if code := exitCode(err); code != c.code || !strings.Contains(msg, c.want) {
			t.Errorf("merge %v: status %d, want %d saying %q:\n%s%s", c.files, code, c.code, c.want, out, msg)
		}
	}
}
