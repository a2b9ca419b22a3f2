package main

import (
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
