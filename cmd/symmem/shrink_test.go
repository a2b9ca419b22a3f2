package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/symmem/symmem/campaign"
)

const racyHarness = "../../examples/kernels/cas_exchange_relaxed_wait.json"

// TestCheckShrinkRunsFew: --shrink-runs 1 to 3 end the shrink before it
// recorded the case's decisions; the check prints the smallest case it
// has, stopped, and fails only for the finding.
func TestCheckShrinkRunsFew(t *testing.T) {
	for _, runs := range []string{"1", "2", "3"} {
		out, err := runCmd(t, "check", racyHarness, "--worlds", "2", "--seeds", "1", "--var", "n=192", "--shrink-runs", runs)
		if err == nil || err.Error() != "check "+racyHarness+": 1 findings" {
			t.Fatalf("--shrink-runs %s: %v\n%s", runs, err, out)
		}
		if !strings.Contains(out, "1. shrunk in "+runs+" runs (stopped at --shrink-runs): ") {
			t.Errorf("--shrink-runs %s: no shrunk case:\n%s", runs, out)
		}
	}
}

// TestCheckCaseFileReplays: a shrunk case's decisions too long for its
// replay command go to a case file in --case-dir; the replay command
// reads it with --decisions @FILE and runs the same trace and finding.
func TestCheckCaseFileReplays(t *testing.T) {
	dir := t.TempDir()
	a := &app{terminal: isTerminal, inlineDecisions: 1}
	out, err := runCmdApp(t, context.Background(), a, "check", racyHarness, "--worlds", "3", "--seeds", "1", "--var", "n=64",
		"--shrink-runs", "12", "--case-dir", dir)
	if err == nil {
		t.Fatalf("a racy kernel passed:\n%s", out)
	}
	m := checkShrunk.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no shrunk case:\n%s", out)
	}
	words := shellWords(m[4])
	file := regexp.MustCompile(`--decisions @(\S+)`).FindStringSubmatch(m[4])
	if file == nil || filepath.Dir(file[1]) != dir {
		t.Fatalf("the replay %q reads no case file of %s", m[4], dir)
	}
	text, err := os.ReadFile(file[1])
	if err != nil || !strings.Contains(string(text), ":") {
		t.Fatalf("case file %s: %v %q", file[1], err, text)
	}
	again, err := runCmd(t, append(words[1:], "--shrink=false")...)
	if err == nil || !strings.Contains(again, m[2]) {
		t.Fatalf("the replay from the case file does not find %q:\n%s", m[2], again)
	}
	if tr := checkRunTrace.FindStringSubmatch(again); tr == nil || tr[1] != m[3] {
		t.Fatalf("the replay from the case file ran another schedule than trace %s:\n%s", m[3], again)
	}
	if _, err := runCmd(t, "check", racyHarness, "--seed", "0", "--decisions", "@"+filepath.Join(dir, "none")); err == nil ||
		!strings.Contains(err.Error(), "--decisions: case file: ") {
		t.Errorf("a missing case file: %v", err)
	}
}

// TestInterruptedShardsWriteReports: check and litmus shards stopped by a
// signal (here before their first run) still write their --report files,
// marked interrupted, and exit with the signal's status.
func TestInterruptedShardsWriteReports(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
	}{
		{"check", []string{"check", racyHarness, "--worlds", "2", "--seeds", "4", "--var", "n=64"}},
		{"litmus", []string{"litmus", "../../litmus/testdata/A-fence-after-data.litmus", "--seeds", "30"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			cancel(&interruptedError{sig: syscall.SIGINT})
			path := filepath.Join(t.TempDir(), "shard.jsonl")
			out, err := runCmdApp(t, ctx, &app{terminal: isTerminal}, append(c.args, "--shard", "0/2", "--report", path)...)
			var ie *interruptedError
			if !errors.As(err, &ie) || exitCode(err) != 130 {
				t.Fatalf("%v (exit %d), want the interruption:\n%s", err, exitCode(err), out)
			}
			rep, err := campaign.Read(path)
			if err != nil {
				t.Fatalf("no report: %v\n%s", err, out)
			}
			if !rep.Summary.Interrupted {
				t.Errorf("the report is not marked interrupted: %+v", rep.Summary)
			}
		})
	}
}
