package main

import (
	"regexp"
	"strings"
	"testing"
)

var checkReplayLine = regexp.MustCompile(`(?m)^   replay: (.*)$`)

// TestCheckFindsAndReplays: symmem check on the example whose first wait
// is relaxed reports the race with both CUDA lines and exits non-zero;
// its replay command runs the same schedule (the same trace) and finds
// the same race; the correct barrier passes.
func TestCheckFindsAndReplays(t *testing.T) {
	const harness = "../../examples/kernels/cas_exchange_relaxed_wait.json"
	out, err := runCmd(t, "check", harness, "--worlds", "2", "--seeds", "2", "--var", "n=128", "--shrink=false")
	if err == nil || !strings.Contains(err.Error(), "findings") {
		t.Fatalf("a racy kernel passed: %v\n%s", err, out)
	}
	for _, want := range []string{
		"launch cas_exchange_relaxed_wait: grid 3 x block 64", "launch shape cap: none",
		"data race between the store at examples/kernels/cas_barrier.cu:54 and the load at examples/kernels/cas_barrier.cu:58",
		"at PTX line 474 `st.f32", "the wait is relaxed (no acquire)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report does not say %q:\n%s", want, out)
		}
	}
	m := checkReplayLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no replay command:\n%s", out)
	}
	words := shellWords(m[1])
	if words[0] != "symmem" || words[1] != "check" || !strings.Contains(m[1], "--seed 0") || !strings.Contains(m[1], "--var n=128") {
		t.Fatalf("replay command %q", m[1])
	}
	first, err := runCmd(t, words[1:]...)
	if err == nil {
		t.Fatalf("the replay passed:\n%s", first)
	}
	again, _ := runCmd(t, words[1:]...)
	trace := regexp.MustCompile(`trace [0-9a-f]{64}`)
	if tr := trace.FindString(first); tr == "" || tr != trace.FindString(again) || !strings.Contains(first, "cas_barrier.cu:58") {
		t.Fatalf("the replay does not reproduce its trace and race:\n%s\n%s", first, again)
	}
	if out, err := runCmd(t, "check", "../../examples/kernels/cas_exchange.json", "--worlds", "2", "--seeds", "1", "--var", "n=128"); err != nil ||
		!strings.Contains(out, "0 distinct findings") {
		t.Fatalf("the correct barrier: %v\n%s", err, out)
	}
}

// TestCheckListUnsupported lists every refused line (those of module
// scope and of a parameter list too) and exits non-zero,
// or says that every line is supported.
func TestCheckListUnsupported(t *testing.T) {
	out, err := runCmd(t, "check", "--ptx", "../../ptxcheck/testdata/unsupported.ptx", "--list-unsupported")
	if err == nil || !strings.Contains(err.Error(), "5 unsupported lines") {
		t.Fatalf("error %v", err)
	}
	for _, want := range []string{"entries needs_more, fine, odd_params", "line 19: wgmma.fence.sync.aligned;", "line 21: cp.async.bulk.commit_group;", "line 23: tex.1d",
		"line 41: .global .align 4 .u32 too_many[1] = {1, 2};: module scope: too_many: more initializers", "line 44: .param .v4 .u8"} {
		if !strings.Contains(out, want) {
			t.Errorf("the list does not say %q:\n%s", want, out)
		}
	}
	out, err = runCmd(t, "check", "--ptx", "../../examples/kernels/cas_barrier.ptx", "--list-unsupported")
	if err != nil || !strings.Contains(out, "every line is supported") {
		t.Fatalf("%v\n%s", err, out)
	}
}

// TestCheckBadFlags names every bad flag at once.
func TestCheckBadFlags(t *testing.T) {
	_, err := runCmd(t, "check", "x.json", "--seeds", "0", "--strategy", "dfs", "--worlds", "0-2", "--var", "oops")
	if err == nil {
		t.Fatal("bad flags accepted")
	}
	for _, want := range []string{"--seeds 0", `--strategy "dfs"`, "--worlds", `--var "oops"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %s: %v", want, err)
		}
	}
}

var (
	checkShrunk      = regexp.MustCompile(`(?m)^1\. shrunk in \d+ runs(?: \([^)]*\))?: (.*)\n   finds: (.*)\n   trace ([0-9a-f]{64})\n   replay: (.*)$`)
	checkRunTrace    = regexp.MustCompile(`(?m)^world \d+ seed \d+: .*trace ([0-9a-f]{64})`)
	checkFaultsShown = regexp.MustCompile(`(?m)^   faults: (die:\d:\d)$`)
)

// TestCheckShrinksAndReplays: a race found at world 3 under a stall is
// shrunk to world 2 without the fault, and the shrunk replay command
// (decisions and all) runs the reproduction exactly: its trace and race.
func TestCheckShrinksAndReplays(t *testing.T) {
	out, err := runCmd(t, "check", "../../examples/kernels/cas_exchange_relaxed_wait.json", "--worlds", "3", "--seeds", "1",
		"--var", "n=64", "--fault-plan", "stall:2:0:10", "--shrink-runs", "12")
	if err == nil {
		t.Fatalf("a racy kernel passed:\n%s", out)
	}
	m := checkShrunk.FindStringSubmatch(out)
	if m == nil || !strings.HasPrefix(m[1], "world 2 (was 3), faults none (was 1)") || !strings.Contains(m[2], "cas_barrier.cu:58") {
		t.Fatalf("no shrunk reproduction at world 2 without the fault:\n%s", out)
	}
	words := shellWords(m[4])
	if !strings.Contains(m[4], "--decisions") || strings.Contains(m[4], "--fault-plan") {
		t.Fatalf("shrunk replay %q", m[4])
	}
	again, err := runCmd(t, append(words[1:], "--shrink=false")...)
	if err == nil || !strings.Contains(again, m[2]) {
		t.Fatalf("the shrunk replay does not find %q:\n%s", m[2], again)
	}
	if tr := checkRunTrace.FindStringSubmatch(again); tr == nil || tr[1] != m[3] {
		t.Fatalf("the shrunk replay ran another schedule than trace %s:\n%s", m[3], again)
	}
}

// TestCheckFaults: --faults die draws a death that leaves the peer
// hanging in the barrier; the finding shows its fault plan, and its replay
// command carries the plan and reruns the same trace.
func TestCheckFaults(t *testing.T) {
	out, err := runCmd(t, "check", "../../examples/kernels/cas_exchange.json", "--worlds", "2", "--seeds", "1", "--var", "n=64",
		"--faults", "die", "--shrink=false")
	m := checkFaultsShown.FindStringSubmatch(out)
	if err == nil || m == nil || !strings.Contains(out, "hang: threads spin on bytes that never change") ||
		!strings.Contains(out, "faults one per run of die") {
		t.Fatalf("no hang under a die fault: %v\n%s", err, out)
	}
	r := checkReplayLine.FindStringSubmatch(out)
	if r == nil || !strings.Contains(r[1], "--fault-plan "+m[1]) {
		t.Fatalf("the replay does not carry the plan %s:\n%s", m[1], out)
	}
	words := shellWords(r[1])
	first, _ := runCmd(t, words[1:]...)
	second, _ := runCmd(t, words[1:]...)
	a, b := checkRunTrace.FindStringSubmatch(first), checkRunTrace.FindStringSubmatch(second)
	if a == nil || b == nil || a[1] != b[1] || !strings.Contains(first, "faults \""+m[1]+"\" (1 fired)") || !strings.Contains(first, "hang:") {
		t.Fatalf("the replay does not rerun the faulted run:\n%s\n%s", first, second)
	}
}

// TestCheckFaultFlags names every bad fault, repeat and decision flag.
func TestCheckFaultFlags(t *testing.T) {
	_, err := runCmd(t, "check", "x.json", "--faults", "boom", "--fault-plan", "die:1", "--repeat", "x", "--decisions", "1:2",
		"--shrink-runs", "0")
	if err == nil {
		t.Fatal("bad flags accepted")
	}
	for _, want := range []string{`--faults: unknown fault kind "boom"`, `--fault-plan: fault "die:1"`, `--repeat "x"`, "--decisions", "--shrink-runs 0"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %s: %v", want, err)
		}
	}
}
