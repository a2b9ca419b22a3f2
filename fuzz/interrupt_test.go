package fuzz

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/simjob"
)

// swallowing installs swallowTimeout in every simulated device and calls
// each(n) before the n-th run (from 1) that uses the returned hook.
func swallowing(each func(n int)) func(*simjob.Config) {
	n := 0
	return func(cfg *simjob.Config) {
		n++
		if each != nil {
			each(n)
		}
		cfg.Device.WrapBlock = func(b kernels.Block) kernels.Block {
			if b.Kernel() != kernels.WaitSignal {
				return b
			}
			return &swallowTimeout{Block: b}
		}
	}
}

// TestRunStopsOnContext: a long run (interpreted PTX, about a million
// steps) stops soon after its context ends and says why.
func TestRunStopsOnContext(t *testing.T) {
	p, err := ParseProgram("world=4 bufs=262144; ll g0 b0@64 65536 float32 sum")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := Case{Program: p, InputSeed: 1, Seed: 1, Strategy: StrategyRandom, Kernels: sim.Kernels{PTX: true},
		Instrument: func(*simjob.Config) { time.AfterFunc(50*time.Millisecond, cancel) }}
	start := time.Now()
	_, err = RunContext(ctx, c)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("run ended with %v, want it cancelled", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the run took %v to stop", took)
	}
}

// TestShrinkStopsOnContext: an interrupt in the middle of a shrink stops
// it before its next run; Fuzz then reports the failure unshrunk, says it
// was interrupted, and starts no other shrink.
func TestShrinkStopsOnContext(t *testing.T) {
	p, err := ParseProgram("world=3 bufs=4096; one-shot g0 b0@64 64 float32 sum; timeout g0 b0 ch1; two-shot g0 b0@256 256 float32 max; timeout g0 b0 ch2")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := Case{Program: p, InputSeed: 1, Seed: 1, Strategy: StrategyRandom, Instrument: swallowing(nil)}
	o, err := Run(c)
	if err != nil || !o.Failed() {
		t.Fatalf("the mutant's case did not fail: %v %v", err, o.Failure)
	}
	o.Case.Instrument = swallowing(func(n int) {
		if n == 3 {
			cancel()
		}
	})
	s, err := ShrinkContext(ctx, o, 1000)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("shrink ended with %v, want it cancelled", err)
	}
	if s.Runs != 3 {
		t.Fatalf("the shrink ran %d cases, want it to stop in its third", s.Runs)
	}

	// The same through Fuzz, on two seeds whose programs have a timeout
	// step: the interrupt comes in the first failure's shrink.
	var first uint64
	for hasTimeout := func(s uint64) bool {
		for _, st := range DrawProgram(s, []int{2}, nil, nil).Steps {
			if st.Kind == StepTimeout {
				return true
			}
		}
		return false
	}; !hasTimeout(first) || !hasTimeout(first+1); first++ {
	}
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	runs := 0
	cfg := Config{Seeds: 2, First: first, Strategy: StrategyRandom, Workers: 1, Worlds: []int{2}, Shrink: true,
		Instrument: func(cfg *simjob.Config) {
			if runs++; runs == 4 {
				cancel()
			}
			swallowing(nil)(cfg)
		}}
	rep, err := Fuzz(ctx, cfg)
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if !rep.Interrupted || rep.Cases != 2 || rep.Failed != 2 || len(rep.Failures) == 0 {
		t.Fatalf("interrupted %t after %d cases, %d failed: want an interrupted report of 2 failed cases", rep.Interrupted, rep.Cases, rep.Failed)
	}
	for _, f := range rep.Failures {
		if f.Shrunk != nil || !errors.Is(f.ShrinkErr, context.Canceled) {
			t.Errorf("%s: shrunk %v (%v), want no shrink for the interrupt", f.Signature, f.Shrunk, f.ShrinkErr)
		}
	}
}

// TestShrinkWithinTime: on a clock that moves a second at every look, a
// shrink bounded to 3 seconds starts no candidate after it and returns
// the smallest failing case found by then, still failing the same way.
func TestShrinkWithinTime(t *testing.T) {
	p, err := ParseProgram("world=3 bufs=4096; one-shot g0 b0@64 64 float32 sum; timeout g0 b0 ch1; two-shot g0 b0@256 256 float32 max; timeout g0 b0 ch2")
	if err != nil {
		t.Fatal(err)
	}
	c := Case{Program: p, InputSeed: 1, Seed: 1, Strategy: StrategyRandom, Instrument: swallowing(nil)}
	o, err := Run(c)
	if err != nil || !o.Failed() {
		t.Fatalf("the mutant's case did not fail: %v %v", err, o.Failure)
	}
	var clock time.Time
	tick := func() time.Time { clock = clock.Add(time.Second); return clock }
	s, err := ShrinkWithin(context.Background(), o, 1000, 3*time.Second, tick)
	if err != nil {
		t.Fatal(err)
	}
	// Runs counts the final traced run too.
	if !s.TimedOut || s.Runs < 2 || s.Runs > 4 {
		t.Errorf("timed out %v after %d runs, want a stop for time within 3 candidates", s.TimedOut, s.Runs)
	}
	if !s.Outcome.Failed() || s.Outcome.Failure.Kind != o.Failure.Kind {
		t.Errorf("the result fails with %v, want %v", s.Outcome.Failure, o.Failure)
	}
}
