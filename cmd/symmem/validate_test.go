package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/symmem/symmem/launch"
)

// TestFlagsAreCheckedBeforeAnyWork: every bad flag is reported at once,
// named, before anything runs (no table, no rank output, one copy of each
// error).
func TestFlagsAreCheckedBeforeAnyWork(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"allreduce", "--timeout", "-5s"}, []string{"--timeout -5s: want a positive duration (0 is not allowed"}},
		{[]string{"allreduce", "--timeout", "0"}, []string{"--timeout 0s"}},
		{[]string{"allreduce", "--algo", "ll", "--bytes", "1MiB"}, []string{"--algo ll --bytes 1MiB: the low-latency all-reduce takes tensors up to 256KiB"}},
		{[]string{"allreduce", "--timeout", "0", "--device", "tpu", "--dtype", "i8", "--world", "0"}, []string{"--timeout 0s", `--device "tpu"`, "--dtype"}},
		{[]string{"allreduce", "--world", "73", "--device", "tpu"}, []string{"--world 73", `--device "tpu"`}},
		{[]string{"bench", "--max-blocks", "-1"}, []string{"--max-blocks -1: want 0"}},
		{[]string{"bench", "--timeout", "-1s", "--max-blocks", "-2", "--device", "tpu", "--warmup", "-1"}, []string{"--timeout -1s", "--max-blocks -2", `--device "tpu"`, "--warmup -1"}},
		{[]string{"bench", "--json", "/nonexistent/x.json", "--csv", "/nonexistent/x.csv"}, []string{"--json: open /nonexistent/x.json", "--csv: open /nonexistent/x.csv"}},
		{[]string{"bench", "--cpuprofile", "/nonexistent/p"}, []string{"--cpuprofile: open /nonexistent/p"}},
		{[]string{"fuzz", "--cpuprofile", "/nonexistent/p", "--seeds", "-1"}, []string{"--cpuprofile: open /nonexistent/p", "--seeds -1"}},
		{[]string{"bench", "--algo", "ll", "--min", "512KiB"}, []string{"--algo ll: the low-latency all-reduce takes tensors up to 256KiB, and --min is 512KiB"}},
		{[]string{"bench", "--graph", "--sync"}, []string{"--graph and --sync"}},
		{[]string{"bench", "plot", "--out", "/nonexistent/p.png", "x.json"}, []string{"--out: open /nonexistent/p.png", "x.json"}},
		{[]string{"bench", "plot", "--out", "p.gif", "x.json"}, []string{"--out:", `unknown image format "gif"`}},
		{[]string{"selftest", "--world", "100"}, []string{"--world 100: want 1..72"}},
		{[]string{"selftest", "--world", "0", "--cycles", "-1", "--cases", "(", "--timeout", "0"}, []string{"--world 0", "--cycles -1", `--cases "("`, "--timeout 0s"}},
		{[]string{"topo", "--world", "0", "--device", "tpu"}, []string{"--world 0", `--device "tpu"`}},
	} {
		out, err := runCmd(t, tc.args...)
		if err == nil {
			t.Errorf("%v: accepted\n%s", tc.args, out)
			continue
		}
		for _, w := range tc.want {
			if strings.Count(err.Error(), w) != 1 {
				t.Errorf("%v: error %q names %q %d times, want once", tc.args, err, w, strings.Count(err.Error(), w))
			}
		}
		if out != "" {
			t.Errorf("%v: work started before the flags were refused:\n%s", tc.args, out)
		}
	}
}

// TestSimulatorSizesThatCannotFitAreRefused: with 1 GiB available, the
// sizes of the issue are refused with the estimate and the available
// memory, and the default run still fits.
func TestSimulatorSizesThatCannotFitAreRefused(t *testing.T) {
	defer func(f func() (uint64, error)) { availableMemory = f }(availableMemory)
	availableMemory = func() (uint64, error) { return 1 << 30, nil }
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"allreduce", "--world", "8", "--bytes", "4GiB"}, "--world 8 --bytes 4GiB: the simulator would need about 320.1 GiB of memory (about 9 x world x bytes), but this machine has 1.0 GiB available (MemAvailable in /proc/meminfo)"},
		{[]string{"allreduce", "--world", "72", "--bytes", "64MiB"}, "--world 72 --bytes 64MiB: the simulator would need about 41.3 GiB of memory"},
		{[]string{"bench", "--world", "8", "--max", "256MiB"}, "--world 8 --max 256MiB: the simulator would need about 20.1 GiB"},
		{[]string{"selftest", "--world", "72"}, "--world 72: the simulator would need about 6.8 GiB"},
	} {
		out, err := runCmd(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v\nwant %q\n%s", tc.args, err, tc.want, out)
		}
	}
	if out, err := runCmd(t, "allreduce"); err != nil {
		t.Errorf("the default allreduce was refused: %v\n%s", err, out)
	}
	// Without /proc/meminfo there is nothing to compare with.
	availableMemory = func() (uint64, error) { return 0, errors.New("no meminfo") }
	if err := checkSimMemory("--world 8", 8, 4<<30); err != nil {
		t.Errorf("refused without knowing the available memory: %v", err)
	}
}

// TestSimulatorRefusesLaunch: under symmem launch (RANK set), the
// simulated commands refuse to run a separate simulation per process.
func TestSimulatorRefusesLaunch(t *testing.T) {
	t.Setenv(launch.EnvRank, "0")
	t.Setenv(launch.EnvWorld, "4")
	for _, cmd := range []string{"allreduce", "bench", "selftest"} {
		_, err := runCmd(t, cmd)
		want := "--device sim under symmem launch: the simulator runs all ranks in one process, so each of the launcher's 4 processes would run a separate simulation; run 'symmem " + cmd + " --world 4' without launch"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s under launch: %v", cmd, err)
		}
	}
}

// TestSimulatorOnlyCommandsRefuseLaunchAndNameFlags: fuzz and replay run
// every rank on the simulator, so under symmem launch they refuse; fuzz's
// bad numbers are each named by their flag.
func TestSimulatorOnlyCommandsRefuseLaunchAndNameFlags(t *testing.T) {
	_, err := runCmd(t, "fuzz", "--timeout", "-5s", "--seeds", "-2", "--jobs", "-1", "--time", "-1s")
	for _, want := range []string{"--timeout -5s", "--seeds -2", "--jobs -1", "--time -1s"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("fuzz with bad flags: %v, want it to name %s", err, want)
		}
	}
	t.Setenv(launch.EnvRank, "0")
	t.Setenv(launch.EnvWorld, "2")
	for _, cmd := range [][]string{{"fuzz", "--seeds", "1"}, {"replay", "--seed", "1"}} {
		if _, err := runCmd(t, cmd...); err == nil || !strings.Contains(err.Error(), "symmem "+cmd[0]+" under symmem launch") {
			t.Errorf("%s under launch: %v", cmd[0], err)
		}
	}
}
