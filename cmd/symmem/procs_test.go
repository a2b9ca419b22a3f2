package main

import (
	"io"
	"math"
	"runtime"
	"testing"
)

// TestLimitProcs: the simulations run at once bound GOMAXPROCS, never
// above what it was, and the GOMAXPROCS environment variable wins.
func TestLimitProcs(t *testing.T) {
	prev := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(prev)
	if prev < 2 {
		t.Skip("GOMAXPROCS is already 1")
	}
	t.Setenv("GOMAXPROCS", "")
	limitProcs(prev + 4)
	if got := runtime.GOMAXPROCS(0); got != prev {
		t.Fatalf("limitProcs(%d): GOMAXPROCS %d, want %d unchanged", prev+4, got, prev)
	}
	limitProcs(1)
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("limitProcs(1): GOMAXPROCS %d, want 1", got)
	}
	runtime.GOMAXPROCS(prev)
	t.Setenv("GOMAXPROCS", "2")
	limitProcs(1)
	if got := runtime.GOMAXPROCS(0); got != prev {
		t.Fatalf("limitProcs(1) with GOMAXPROCS=2 in the environment: GOMAXPROCS %d, want %d unchanged", got, prev)
	}
	(&app{}).procs(1) // commands run by tests leave it alone
	if got := runtime.GOMAXPROCS(0); got != prev {
		t.Fatalf("a test's app changed GOMAXPROCS to %d", got)
	}
}

// TestFuzzMemoryLimit: a fuzz run's soft limit is 850 MiB a worker and
// 100 MiB besides, or the machine's share when that is lower; the sum
// does not overflow.
func TestFuzzMemoryLimit(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		workers       int
		current, want int64
	}{
		{1, 64 << 30, 950 * mib},
		{0, 64 << 30, 950 * mib},
		{16, 64 << 30, 16*850*mib + 100*mib},
		{16, 8 << 30, 8 << 30},
		{1 << 62, math.MaxInt64, math.MaxInt64},
	} {
		if got := fuzzMemoryLimit(c.workers, c.current); got != c.want {
			t.Errorf("fuzzMemoryLimit(%d, %d) = %d, want %d", c.workers, c.current, got, c.want)
		}
	}
}

// TestFuzzSetsItsMemoryLimit: the fuzz command hands its workers to the
// memory limit of a process it owns when it draws the sizes (which fit a
// worker's share), not when the user gives them.
func TestFuzzSetsItsMemoryLimit(t *testing.T) {
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"-j", "3"}, 3},
		{[]string{"-j", "3", "--sizes", "64"}, 0},
	} {
		got := 0
		root := newRootApp(&app{terminal: isTerminal, limitFuzzMemory: func(w int) { got = w }})
		root.SetArgs(append([]string{"fuzz", "--seeds", "1", "--worlds", "2", "--progress=false"}, c.args...))
		root.SetOut(io.Discard)
		if err := root.Execute(); err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("%q: the memory limit was set for %d workers, want %d", c.args, got, c.want)
		}
	}
}

// TestSimulationCommandsReserveAHugeHeap: check and selftest reserve
// their heap for huge pages (hugeheap's tests cover what Auto does).
func TestSimulationCommandsReserveAHugeHeap(t *testing.T) {
	for _, args := range [][]string{
		{"check", "--ptx", "../../examples/kernels/cas_barrier.ptx", "--list-unsupported"},
		{"selftest", "--cases", "^signal-bounds$"},
	} {
		reserved := 0
		root := newRootApp(&app{terminal: isTerminal, hugeHeap: func() { reserved++ }})
		root.SetArgs(args)
		root.SetOut(io.Discard)
		if err := root.Execute(); err != nil {
			t.Fatalf("%s: %v", args[0], err)
		}
		if reserved != 1 {
			t.Errorf("symmem %s reserved its heap %d times, want once", args[0], reserved)
		}
	}
}

// TestCheckSetsItsGC: the check command sets its collector's pace in a
// process it owns.
func TestCheckSetsItsGC(t *testing.T) {
	set := false
	root := newRootApp(&app{terminal: isTerminal, checkGC: func() { set = true }})
	root.SetArgs([]string{"check", "--ptx", "../../examples/kernels/cas_barrier.ptx", "--list-unsupported"})
	root.SetOut(io.Discard)
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if !set {
		t.Fatal("symmem check did not set its collector's pace")
	}
}
