package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryBadFlagIsNamed: every bad flag of a command line is named in
// one error, values that do not parse included, with the value given; a
// size's alignment names --bytes and a huge or misaligned offset names
// --offset, not the other flags.
func TestEveryBadFlagIsNamed(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"allreduce", "--world", "0", "--bytes", "x"}, []string{"--world 0: want 1..72", `--bytes: byte size "x"`}},
		{[]string{"allreduce", "--world", "0", "--bytes", "x", "--dtype", "i8", "--op", "prod", "--algo", "ring", "--timeout", "0", "--device", "tpu"},
			[]string{"--world 0", "--bytes", "--dtype", "--op", "--algo", "--timeout 0s", `--device "tpu"`}},
		{[]string{"allreduce", "--world", "many", "--offset", "-1", "--seed", "x", "--timeout", "soon"},
			[]string{`--world "many": want an integer`, `--offset "-1": want a whole number >= 0`, `--seed "x"`, `--timeout "soon": want a duration`}},
		{[]string{"allreduce", "--bytes", "3", "--dtype", "f32"}, []string{"--bytes 3: alignment: float32 tensor size of 3 bytes is not a multiple of 4"}},
		{[]string{"allreduce", "--bytes", "0"}, []string{"--bytes 0: want a positive size"}},
		{[]string{"allreduce", "--world", "2", "--bytes", "16", "--dtype", "f32", "--algo", "one-shot", "--offset", "18446744073709551612"},
			[]string{"--offset 18446744073709551612: offset of 18446744073709551612 bytes is above the 4294967296-byte (4 GiB) limit"}},
		{[]string{"allreduce", "--offset", "6", "--bytes", "6", "--dtype", "f32"}, []string{"--offset 6: alignment", "--bytes 6: alignment"}},
		{[]string{"allreduce", "--kernels", "cuda"}, []string{`--kernels "cuda": want go or ptx`}},
		{[]string{"bench", "--algo", ""}, []string{"--algo: empty list: want one or more of ll, one-shot, two-shot, auto"}},
		{[]string{"bench", "--dtype", "", "--op", ""}, []string{"--dtype: empty list", "--op: empty list"}},
		{[]string{"bench", "--iters", "100000000", "--loops", "5000", "--warmup", "-1", "--max-blocks", "1000000"},
			[]string{"--iters 100000000: want 1..1000000", "--loops 5000: want 1..1000", "--warmup -1: want 0..1000000", "--max-blocks 1000000"}},
		{[]string{"bench", "--min", "0", "--max", "8GiB"}, []string{"--min 0: want 1 byte to 4GiB", "--max 8GiB: want 1 byte to 4GiB"}},
		{[]string{"bench", "--world", "x", "--check=maybe"}, []string{`--world "x": want an integer`, `--check "maybe": want true or false`}},
		{[]string{"selftest", "--cycles", "1000000000", "--kernels", "x"}, []string{"--cycles 1000000000: want 1..1000000", `--kernels "x"`}},
		{[]string{"topo", "--world", "x"}, []string{`--world "x": want an integer`}},
		{[]string{"launch"}, []string{"no command to launch: want symmem launch --nproc N -- COMMAND [ARGS...]"}},
		{[]string{"launch", "--nproc", "0", "--drain", "-1s", "--grace", "x"}, []string{"--nproc 0", "--drain -1s: want a duration >= 0", `--grace "x"`, "no command to launch"}},
		{[]string{"bench", "plot"}, []string{"no report to draw: want symmem bench plot --out FILE.png REPORT.json [REPORT.json ...]", "--out is required"}},
	} {
		out, err := runCmd(t, tc.args...)
		if err == nil {
			t.Errorf("%q: accepted\n%s", tc.args, out)
			continue
		}
		for _, w := range tc.want {
			if strings.Count(err.Error(), w) != 1 {
				t.Errorf("%q: error %q names %q %d times, want once", tc.args, err, w, strings.Count(err.Error(), w))
			}
		}
		if strings.Contains(err.Error(), "requires at least") || strings.Contains(err.Error(), "invalid argument") {
			t.Errorf("%q: a parser's message instead of the command's: %v", tc.args, err)
		}
		if out != "" {
			t.Errorf("%q: work started before the flags were refused:\n%s", tc.args, out)
		}
	}
}

// TestOffsetIsBlamedForItsMemory: an offset that makes the simulated job
// too large is named with the other sizes.
func TestOffsetIsBlamedForItsMemory(t *testing.T) {
	defer func(f func() (uint64, error)) { availableMemory = f }(availableMemory)
	availableMemory = func() (uint64, error) { return 1 << 30, nil }
	_, err := runCmd(t, "allreduce", "--world", "4", "--bytes", "64KiB", "--offset", "4000000000")
	if err == nil || !strings.Contains(err.Error(), "--world 4 --bytes 64KiB --offset 4000000000: the simulator would need") {
		t.Fatalf("a 4e9 offset on 1 GiB: %v", err)
	}
}

// TestKernelImageMustExist: SYMMEM_KERNEL_IMAGE naming a missing file is
// refused on the simulator too; an existing one is accepted there.
func TestKernelImageMustExist(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.fatbin")
	t.Setenv(kernelImageEnv, missing)
	for _, args := range [][]string{{"allreduce"}, {"bench"}, {"selftest"}, {"topo"}} {
		_, err := runCmd(t, args...)
		if err == nil || !strings.Contains(err.Error(), "SYMMEM_KERNEL_IMAGE: stat "+missing) {
			t.Errorf("%v with a missing kernel image: %v", args, err)
		}
	}
	t.Setenv(kernelImageEnv, t.TempDir())
	if _, err := runCmd(t, "topo"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a directory as the kernel image: %v", err)
	}
	img := filepath.Join(t.TempDir(), "k.fatbin")
	if err := os.WriteFile(img, []byte("image"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(kernelImageEnv, img)
	if out, err := runCmd(t, "topo"); err != nil {
		t.Errorf("topo with a readable kernel image: %v\n%s", err, out)
	}
}
