package actor

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"
)

// haltAt is a strategy that halts the tasks named victim at step at, then
// walks at random among the rest.
type haltAt struct {
	s      *Scheduler
	at     int64
	victim string
	rw     *RandomWalk
}

func (h *haltAt) Next(step int64, runnable []*Task) int {
	if step == h.at {
		h.s.Halt("test crash", func(t *Task) bool { return strings.HasPrefix(t.Name(), h.victim) })
	}
	return h.rw.Next(step, runnable)
}

// TestHaltStopsTasksAndSurvivorsTimeOut: a halted task never runs again,
// tasks it would have started are halted too, and a survivor waiting for it
// times out instead of deadlocking; Run then ends cleanly.
func TestHaltStopsTasksAndSurvivorsTimeOut(t *testing.T) {
	for seed := range uint64(30) {
		h := &haltAt{at: 3, victim: "victim", rw: NewRandomWalk(seed)}
		s := NewScheduler(Config{Strategy: h, KeepEvents: true})
		h.s = s
		progress, childRan := 0, false
		s.Go("victim", func() {
			for range 100 {
				progress++
				s.Yield("work")
			}
		})
		var survivorErr error
		s.Go("survivor", func() {
			survivorErr = s.Wait("victim's progress", func() bool { return progress == 100 }, time.Second)
			s.Go("victim, started late", func() { childRan = true })
		})
		if err := s.Run(); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if progress >= 100 || childRan {
			t.Fatalf("seed %d: halted task went on (progress %d, child ran %t)", seed, progress, childRan)
		}
		var te *TimeoutError
		if !errors.As(survivorErr, &te) || te.What != "victim's progress" {
			t.Fatalf("seed %d: survivor got %v, want a timeout", seed, survivorErr)
		}
		halts := 0
		for _, e := range s.Trace().Events() {
			if e.Kind == "halt" {
				halts++
			}
		}
		if halts != 2 {
			t.Fatalf("seed %d: %d halt events, want 2 (the victim and its late namesake)", seed, halts)
		}
	}
}

// TestHaltedOnlyTasksEndTheRun: when only halted tasks remain, Run returns
// nil rather than reporting them as deadlocked.
func TestHaltedOnlyTasksEndTheRun(t *testing.T) {
	s := NewScheduler(Config{Seed: 1})
	s.Go("a", func() {
		s.Halt("self", func(t *Task) bool { return t.Name() == "a" })
		s.Yield("after halt")
		t.Error("a ran after halting itself")
	})
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
}

// TestAbortLeavesNoGoroutines: tasks unwound at the end of a run whose
// deferred calls wait or yield do not leave goroutines behind.
func TestAbortLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	var deferredErr error
	for range 20 {
		s := NewScheduler(Config{Seed: 1})
		s.Go("stuck", func() {
			defer func() {
				s.Yield("cleanup")
				deferredErr = s.Wait("cleanup", func() bool { return false }, time.Second)
				s.Go("started in cleanup", func() {})
			}()
			_ = s.Wait("forever", func() bool { return false }, 0)
		})
		var d *DeadlockError
		if err := s.Run(); !errors.As(err, &d) {
			t.Fatalf("Run = %v, want a deadlock", err)
		}
	}
	if !errors.Is(deferredErr, ErrAborted) {
		t.Fatalf("a wait during unwinding returned %v, want ErrAborted", deferredErr)
	}
	noGoroutinesLeft(t, before, "20 aborted runs")
}
