package main

import (
	"os"
	"runtime"
)

// limitProcs lets the Go runtime run at most n goroutines at once, n being
// the simulations the command runs side by side, unless the GOMAXPROCS
// environment variable says otherwise. A simulation runs one task at a
// time and passes control from one task's goroutine to the next at every
// scheduling step; each pass wakes an idle processor that finds nothing
// to run and sleeps again, which cost about a fifth of the CPU of a
// one-worker fuzz run on a 2-core machine, most of it in the kernel.
func limitProcs(n int) {
	if os.Getenv("GOMAXPROCS") != "" || n < 1 || n >= runtime.GOMAXPROCS(0) {
		return
	}
	runtime.GOMAXPROCS(n)
}

// procs applies a.limitProcs, if set, to n simulations at once.
func (a *app) procs(n int) {
	if a.limitProcs != nil {
		a.limitProcs(n)
	}
}
