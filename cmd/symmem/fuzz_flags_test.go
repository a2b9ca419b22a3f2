package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/fuzz"
)

// TestFuzzAndReplayNameEveryBadFlag: each bad flag is refused before any
// work, naming the flag; several bad flags are all named in one error.
func TestFuzzAndReplayNameEveryBadFlag(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"fuzz", "--algos", ""}, []string{"--algos is empty"}},
		{[]string{"fuzz", "--sizes", ""}, []string{"--sizes is empty"}},
		{[]string{"fuzz", "-j", "100000"}, []string{"-j/--jobs 100000: want 1 to 256"}},
		{[]string{"fuzz", "--max-steps", "0"}, []string{"--max-steps", "want a positive number of steps, or auto"}},
		{[]string{"fuzz", "--depth", "0", "--shrink-runs", "0", "--sizes", "3", "--timeout", "0s"},
			[]string{"--depth 0", "--shrink-runs 0", "--sizes", `"3"`, "--timeout 0s"}},
		{[]string{"fuzz", "--save-dir", filepath.Join(file, "cases")}, []string{"--save-dir " + filepath.Join(file, "cases")}},
		{[]string{"replay", "--timeout", "0s"}, []string{"--timeout 0s"}},
		{[]string{"replay", "--steps", "-1", "--depth", "-2", "--shrink-runs", "-3"}, []string{"--steps -1", "--depth -2", "--shrink-runs -3"}},
		{[]string{"replay", "--max-steps", "-5"}, []string{"--max-steps", "want a positive number of steps, or auto"}},
		{[]string{"replay", "--expect-trace", "zzzz"}, []string{`--expect-trace "zzzz": want 1 to 64 hex digits`}},
		{[]string{"replay", "--save", filepath.Join(file, "case.json")}, []string{"--save " + filepath.Join(file, "case.json")}},
		{[]string{"replay", "--save", t.TempDir()}, []string{"is a directory"}},
	} {
		out, err := runCmd(t, tc.args...)
		if err == nil {
			t.Errorf("%q accepted:\n%s", tc.args, out)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: %v\nwant it to say %q", tc.args, err, w)
			}
		}
		if strings.Contains(out, "schedules in") || strings.Contains(out, "trace:") {
			t.Errorf("%q ran before refusing its flags:\n%s", tc.args, out)
		}
	}
}

// TestReplayCaseFileBounds: a case file with a zero timeout or step bound
// is refused, as the flags are; the bound left out is sized from the
// program.
func TestReplayCaseFileBounds(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "case.json")
	if out, err := runCmd(t, "replay", "--seed", "2", "--world", "2", "--bytes", "64", "--save", path); err != nil {
		t.Fatalf("replay --save: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var file map[string]any
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	if _, ok := file["max_steps"]; ok {
		t.Fatalf("the default step bound was saved: %s", raw)
	}
	for key, v := range map[string]any{"timeout": "0s", "max_steps": 0} {
		bad := map[string]any{}
		for k, x := range file {
			bad[k] = x
		}
		bad[key] = v
		b, _ := json.Marshal(bad)
		p := filepath.Join(dir, key+".json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := runCmd(t, "replay", "--case", p); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("a case file with %s %v: %v, want it refused naming %s\n%s", key, v, err, key, out)
		}
	}
}

// TestReplayOfLongCaseSummarisesDecisions: a case file with many decisions
// prints its case line with the decisions counted, not listed.
func TestReplayOfLongCaseSummarisesDecisions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "case.json")
	args := []string{"replay", "--seed", "3", "--strategy", "random", "--world", "4", "--bytes", "4KiB", "--save", path}
	if out, err := runCmd(t, args...); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	out, err := runCmd(t, "replay", "--case", path)
	if err != nil {
		t.Fatalf("replay --case: %v\n%s", err, out)
	}
	line := regexp.MustCompile(`(?m)^case: .*$`).FindString(out)
	n := regexp.MustCompile(`--decisions <(\d+) decisions`).FindStringSubmatch(line)
	if n == nil || len(line) > 1200 || !strings.Contains(out, "from:    "+path) {
		t.Fatalf("case line of %d characters, want the decisions counted and the file named:\n%s", len(line), out)
	}
}

// TestFuzzAndReplayLogAtDebug: --log-level debug gives a line per case
// (fuzz) and what every rank does (replay).
func TestFuzzAndReplayLogAtDebug(t *testing.T) {
	out, err := runCmd(t, "--log-level", "debug", "fuzz", "--seeds", "3", "-j", "1", "--worlds", "2", "--sizes", "64")
	if err != nil {
		t.Fatalf("fuzz: %v\n%s", err, out)
	}
	if n := strings.Count(out, "\tcase\t"); n != 3 || !strings.Contains(out, `"seed": 2`) {
		t.Fatalf("%d case lines, want 3 with their seeds:\n%s", n, out)
	}
	out, err = runCmd(t, "--log-level", "debug", "replay", "--seed", "1", "--world", "2", "--bytes", "64")
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, out)
	}
	for _, want := range []string{"\treplay\t", "rendezvous", "launch"} {
		if !strings.Contains(out, want) {
			t.Errorf("replay --log-level debug lacks %q:\n%s", want, out)
		}
	}
}

// interruptSelf runs "symmem ARGS" in the test binary, sends it sig once
// a line of its stderr contains ready (at most 30 s after the start), and
// returns its stdout and stderr, its exit status, and how long it took to
// stop after the signal (at most 20 s, or the test fails).
func interruptSelf(t *testing.T, args, ready string, sig syscall.Signal) (string, string, int, time.Duration) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=symmem "+args)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	seen := make(chan struct{})
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(pipe)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		found := false
		for sc.Scan() {
			stderr.WriteString(sc.Text() + "\n")
			if !found && strings.Contains(sc.Text(), ready) {
				close(seen)
				found = true
			}
		}
	}()
	select {
	case <-seen:
	case <-copied:
	case <-time.After(30 * time.Second):
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	done := make(chan error, 1)
	go func() {
		<-copied
		done <- cmd.Wait()
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("symmem %s: still running 20 s after %v\n%s", args, sig, stdout.String())
	}
	return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode(), time.Since(sent)
}

// TestFuzzExitsOnSignals: SIGINT and SIGTERM stop a long fuzz run within
// seconds; it prints the report of the cases that ran, writes the case
// files asked for, and exits 130 or 143. A replay stops the same way.
func TestFuzzExitsOnSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		dir := t.TempDir()
		// The signal comes once a case has failed (its debug line says so).
		out, errOut, code, took := interruptSelf(t, "--log-level debug fuzz --seeds 1000000 -j 2 --worlds 2-3 --sizes 64,260 --faults all --save-dir "+dir,
			`"verdict": "wrong-result`, sig)
		if want := 128 + int(sig); code != want {
			t.Fatalf("%v: exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", sig, code, want, out, errOut)
		}
		for _, w := range []string{"schedules in", "interrupted by " + signalName(sig), "FAIL 1/", "symmem replay --case " + dir} {
			if !strings.Contains(out, w) {
				t.Errorf("%v: report lacks %q:\n%s", sig, w, out)
			}
		}
		if files, _ := filepath.Glob(filepath.Join(dir, "fuzz-seed-*.json")); len(files) == 0 {
			t.Errorf("%v: no case file written to --save-dir", sig)
		}
		t.Logf("fuzz: %v: stopped %v after the signal", sig, took.Round(time.Millisecond))
	}
	// About a million interpreted steps: the replay is still running.
	p, err := fuzz.ParseProgram("world=4 bufs=262144; ll g0 b0@64 65536 float32 sum")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "long.json")
	if err := fuzz.Save(path, fuzz.Outcome{Case: fuzz.Case{Program: p, Seed: 1, InputSeed: 1, Strategy: fuzz.StrategyRandom, Kernels: sim.Kernels{PTX: true}}}); err != nil {
		t.Fatal(err)
	}
	out, errOut, code, took := interruptSelf(t, "--log-level debug replay --race=false --case "+path, "launch", syscall.SIGINT)
	if code != 130 || !strings.Contains(errOut, "replay interrupted by SIGINT") {
		t.Fatalf("replay: exit status %d, want 130 and the interrupt named\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	t.Logf("replay: stopped %v after the signal", took.Round(time.Millisecond))
}
