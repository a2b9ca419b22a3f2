package main

import (
	"compress/gzip"
	"io"
	"os"
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
	for _, want := range []string{"fuzz: 40 schedules in", "schedules/s on 2 workers", "strategy portfolio, faults safety, race detector on", "failures: 0 cases"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestFuzzWritesCPUProfile: --cpuprofile writes a Go CPU profile of the
// cases (gzipped, as pprof writes it) and says so.
func TestFuzzWritesCPUProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fuzz.prof")
	out, err := runCmd(t, "fuzz", "--seeds", "4", "--worlds", "2", "--sizes", "64", "--cpuprofile", path)
	if err != nil && strings.Contains(err.Error(), "already in use") {
		t.Skip("the test binary is being profiled itself")
	}
	if err != nil {
		t.Fatalf("fuzz: %v\n%s", err, out)
	}
	if !strings.Contains(out, "wrote "+path) {
		t.Errorf("output does not say it wrote %s:\n%s", path, out)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("the profile is not gzipped: %v", err)
	}
	if b, err := io.ReadAll(z); err != nil || len(b) == 0 {
		t.Fatalf("the profile holds %d bytes (%v)", len(b), err)
	}
}

var (
	replayLine  = regexp.MustCompile(`(?m)^  replay: (symmem replay .*)$`)
	minimalLine = regexp.MustCompile(`(?m)^  minimal case: (symmem replay .*)$`)
)

// replayArgs turns a printed replay line into the command's arguments.
func replayArgs(line string) []string { return shellWords(line)[1:] } // drop "symmem"

// TestFuzzFailureReplays: fuzz with every fault finds failures (the
// duplicated signal the pad protocol cannot detect), exits non-zero, and
// both the case and its shrunk form replay to the same failure and trace:
// from their files with --save-dir, from the printed commands without,
// and then nothing is left in the temporary directory.
func TestFuzzFailureReplays(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	for _, dir := range []string{t.TempDir(), ""} {
		args := []string{"fuzz", "--seeds", "40", "-j", "2", "--worlds", "2-4", "--sizes", "64,260,1KiB", "--faults", "all", "--shrink-runs", "30"}
		if dir != "" {
			args = append(args, "--save-dir", dir)
		}
		out, err := runCmd(t, args...)
		if err == nil || !strings.Contains(err.Error(), "cases failed") {
			t.Fatalf("fuzz: %v, want failures\n%s", err, out)
		}
		for _, re := range []*regexp.Regexp{replayLine, minimalLine} {
			m := re.FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("no %v line in\n%s", re, out)
			}
			if dir != "" && !strings.HasPrefix(m[1], "symmem replay --case "+dir) {
				t.Fatalf("%q: want the case saved in %s", m[1], dir)
			}
			rout, rerr := runCmd(t, replayArgs(m[1])...)
			if rerr == nil || !strings.Contains(rerr.Error(), "the case failed: ") || !strings.Contains(rout, "trace matches") {
				t.Fatalf("%s: %v, want the failure again with the same trace\n%s", m[1], rerr, rout)
			}
			// Each rank's verdict, the decisions only counted.
			if !strings.Contains(rout, "rank 0: ") || strings.Contains(rout, "runs, at") {
				t.Fatalf("%s: want per-rank verdicts and no decision list:\n%s", m[1], rout)
			}
			if strings.Contains(rerr.Error(), "wrong-result") && !strings.Contains(rout, ": WRONG RESULT") {
				t.Fatalf("%s: a wrong result without a rank called wrong:\n%s", m[1], rout)
			}
			if len(m[1]) > maxInlineCommand+30 {
				t.Fatalf("printed a command of %d characters", len(m[1]))
			}
		}
		if left, _ := os.ReadDir(tmp); len(left) != 0 {
			t.Fatalf("fuzz left %d entries in the temporary directory, %s first", len(left), left[0].Name())
		}
	}
}

// TestReplayRaceFlag: the race detector is on in replay by default and
// leaves the trace as it is: a case replays to the same trace with
// --race=false.
func TestReplayRaceFlag(t *testing.T) {
	c := fuzz.NewGenerator(fuzz.Config{Seeds: 1, Strategy: fuzz.StrategyRandom, Faults: fuzz.FaultsNone, Worlds: []int{3}, Sizes: []uint64{64}, Race: true})
	k, err := c.Case(4)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(k.Command(), "--race") {
		t.Fatalf("%q: the default --race printed", k.Command())
	}
	o, err := fuzz.Run(k)
	if err != nil {
		t.Fatal(err)
	}
	for _, extra := range [][]string{nil, {"--race=false"}} {
		args := append(append(replayArgs(k.Command()), "--expect-trace", o.Trace), extra...)
		out, err := runCmd(t, args...)
		if err != nil || !strings.Contains(out, "trace matches") {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
}

// TestFuzzAcceptsEveryAlgorithm: every algorithm fuzz's help lists is
// accepted, ll included.
func TestFuzzAcceptsEveryAlgorithm(t *testing.T) {
	for _, algo := range []string{"ll", "one-shot", "two-shot", "auto"} {
		out, err := runCmd(t, "fuzz", "--seeds", "3", "-j", "1", "--worlds", "2", "--sizes", "64", "--algos", algo)
		if err != nil {
			t.Fatalf("fuzz --algos %s: %v\n%s", algo, err, out)
		}
	}
}

func TestReplaySaveAndCaseFile(t *testing.T) {
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
	again, err := runCmd(t, "replay", "--case", path, "--expect-trace", h[1][:12], "--decisions-diff")
	if err != nil || !strings.Contains(again, "trace matches") || !strings.Contains(again, "runs, at") {
		t.Fatalf("replay --case --decisions-diff: %v, want the same trace and the decisions listed\n%s", err, again)
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
		{"replay", "--case", filepath.Join(t.TempDir(), "missing.json")},
		{"replay", "--program", "world=2 bufs=64; ll g3 b0@0 16 float32 sum"},
		{"fuzz", "--algos", "three-shot"},
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
