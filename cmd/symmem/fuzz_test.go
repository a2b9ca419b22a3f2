package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/symmem/symmem/fuzz"
)

// shellWords splits a printed command line: words separated by spaces,
// single quotes grouping.
func shellWords(s string) []string {
	var out []string
	var cur strings.Builder
	quoted, have := false, false
	for _, r := range s {
		switch {
		case r == '\'':
			quoted, have = !quoted, true
		case r == ' ' && !quoted:
			if have {
				out = append(out, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteRune(r)
			have = true
		}
	}
	if have {
		out = append(out, cur.String())
	}
	return out
}

func TestFuzzCommandPasses(t *testing.T) {
	out, err := runCmd(t, "fuzz", "--seeds", "40", "-j", "2", "--worlds", "2-3", "--sizes", "64,260", "--faults", "safety")
	if err != nil {
		t.Fatalf("fuzz: %v\n%s", err, out)
	}
	for _, want := range []string{"fuzz: 40 schedules in", "schedules/s on 2 workers", "strategy portfolio, faults safety", "failures: 0 cases"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

var replayLine = regexp.MustCompile(`(?m)^  replay: (symmem replay .*)$`)

// TestFuzzFailureReplays: fuzz with every fault finds the spurious-signal
// failure in these seeds, exits non-zero, and its printed replay command
// reproduces the run (the expected trace matches) and fails again; saving
// and replaying the schedule file gives the same trace.
func TestFuzzFailureReplays(t *testing.T) {
	dir := t.TempDir()
	out, err := runCmd(t, "fuzz", "--seeds", "6", "--first-seed", "1886", "-j", "2", "--worlds", "2-4",
		"--sizes", "64,260,1KiB", "--faults", "all", "--shrink-runs", "30", "--save-dir", dir)
	if err == nil || !strings.Contains(err.Error(), "1 of 6 cases failed") {
		t.Fatalf("fuzz: %v, want 1 of 6 cases failed\n%s", err, out)
	}
	m := replayLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no replay command in\n%s", out)
	}
	args := shellWords(m[1])[1:] // drop "symmem"
	rout, rerr := runCmd(t, args...)
	if rerr == nil || !strings.Contains(rerr.Error(), "the case failed: wrong-result") {
		t.Fatalf("replay: %v, want the failure again\n%s", rerr, rout)
	}
	if !strings.Contains(rout, "trace matches") {
		t.Fatalf("replay did not match the trace:\n%s", rout)
	}
	saved := filepath.Join(dir, "fuzz-seed-1889.json")
	if !strings.Contains(out, "symmem replay --schedule "+saved) {
		t.Fatalf("fuzz did not report the saved minimal case %s:\n%s", saved, out)
	}
	sout, serr := runCmd(t, "replay", "--schedule", saved)
	if serr == nil || !strings.Contains(sout, "trace matches") {
		t.Fatalf("replay --schedule: %v\n%s", serr, sout)
	}
}

// TestFuzzRaceFailureReplays: with --race the race detector turns the
// spurious-signal case of TestFuzzFailureReplays into a data race (the
// duplicated put orders nothing), and the printed replay command, which
// carries --race, reproduces it; without --race the replay reports the
// wrong result instead.
func TestFuzzRaceFailureReplays(t *testing.T) {
	out, err := runCmd(t, "fuzz", "--seeds", "6", "--first-seed", "1886", "-j", "2", "--worlds", "2-4",
		"--sizes", "64,260,1KiB", "--faults", "all", "--race", "--shrink=false")
	if err == nil || !strings.Contains(err.Error(), "1 of 6 cases failed") {
		t.Fatalf("fuzz --race: %v, want 1 of 6 cases failed\n%s", err, out)
	}
	if !strings.Contains(out, "race detector on") || !strings.Contains(out, "(1 cases, first seed 1889): race: ") {
		t.Fatalf("fuzz --race did not report the race of seed 1889:\n%s", out)
	}
	m := replayLine.FindStringSubmatch(out)
	if m == nil || !strings.Contains(m[1], " --race") {
		t.Fatalf("no replay command with --race in\n%s", out)
	}
	args := shellWords(m[1])[1:]
	rout, rerr := runCmd(t, args...)
	if rerr == nil || !strings.Contains(rerr.Error(), "the case failed: race: ") || !strings.Contains(rout, "trace matches") {
		t.Fatalf("replay --race: %v, want the race again with the same trace\n%s", rerr, rout)
	}
	var plain []string
	for _, a := range args {
		if a != "--race" {
			plain = append(plain, a)
		}
	}
	pout, perr := runCmd(t, plain...)
	if perr == nil || !strings.Contains(perr.Error(), "the case failed: wrong-result") || !strings.Contains(pout, "trace matches") {
		t.Fatalf("replay without --race: %v, want the wrong result with the same trace\n%s", perr, pout)
	}
}

func TestReplaySaveAndScheduleFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "case.json")
	args := []string{"replay", "--seed", "5", "--strategy", "pct", "--world", "3", "--bytes", "64", "--faults", "safety",
		"--plan", "crash rank=1 step=40; store-slow rank=0 req=1 for=2ms", "--save", path}
	out, err := runCmd(t, args...)
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, out)
	}
	h := regexp.MustCompile(`(?m)^trace:   ([0-9a-f]{64})`).FindStringSubmatch(out)
	if h == nil || !strings.Contains(out, "fault crash rank=1 step=40") {
		t.Fatalf("replay output lacks the trace or the crash:\n%s", out)
	}
	again, err := runCmd(t, "replay", "--schedule", path, "--expect-trace", h[1][:12])
	if err != nil || !strings.Contains(again, "trace matches") {
		t.Fatalf("replay --schedule: %v\n%s", err, again)
	}
	if _, err := runCmd(t, append(args[:len(args)-2], "--expect-trace", "0000")...); err == nil || !strings.Contains(err.Error(), "did not replay exactly") {
		t.Fatalf("a wrong --expect-trace was accepted: %v", err)
	}
}

func TestFuzzAndReplayRejectBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"fuzz", "--faults", "some"},
		{"fuzz", "--strategy", "dfs"},
		{"fuzz", "--worlds", "8-2"},
		{"fuzz", "--sizes", "3"},
		{"fuzz", "-j", "0"},
		{"fuzz", "--seeds", "0"},
		{"replay", "--plan", "crash rank=9 step=1", "--faults", "safety"},
		{"replay", "--decisions", "1:2.0"},
		{"replay", "--strategy", "replay", "--decisions", "x"},
		{"replay", "--world", "0"},
		{"replay", "--schedule", filepath.Join(t.TempDir(), "missing.json")},
	} {
		if out, err := runCmd(t, args...); err == nil {
			t.Errorf("%v accepted:\n%s", args, out)
		}
	}
}

// TestPrintedCommandsReplayExactly: the command printed for a generated
// case, faults or none, pct or random, gives the very same trace.
func TestPrintedCommandsReplayExactly(t *testing.T) {
	for _, set := range []fuzz.FaultSet{fuzz.FaultsNone, fuzz.FaultsSafety} {
		gen := fuzz.NewGenerator(fuzz.Config{Seeds: 1, Strategy: fuzz.StrategyPortfolio, Faults: set, Worlds: []int{2, 3, 5}, Sizes: []uint64{16, 260}})
		for seed := range uint64(8) {
			c, err := gen.Case(seed)
			if err != nil {
				t.Fatal(err)
			}
			o, err := fuzz.Run(c)
			if err != nil {
				t.Fatal(err)
			}
			args := append(shellWords(c.Command())[1:], "--expect-trace", o.Trace)
			out, err := runCmd(t, args...)
			if err != nil || !strings.Contains(out, "trace matches") {
				t.Fatalf("%s: %v\n%s", c.Command(), err, out)
			}
		}
	}
}
