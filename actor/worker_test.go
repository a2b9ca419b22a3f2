package actor

import (
	"runtime"
	"testing"
	"time"
)

// TestWorkersAreReused: the goroutines that ran one run's tasks run the
// next run's, so many runs of many tasks start few goroutines, and
// ReleaseWorkers ends the idle ones.
func TestWorkersAreReused(t *testing.T) {
	ReleaseWorkers()
	before := runtime.NumGoroutine()
	for seed := range uint64(20) {
		s := NewScheduler(Config{Seed: seed})
		for range 10 {
			s.Go("parent", func() {
				for range 3 {
					s.Go("child", func() { s.Yield("child") })
					s.Yield("parent")
				}
			})
		}
		if err := s.Run(); err != nil {
			t.Fatal(err)
		}
	}
	if n := runtime.NumGoroutine() - before; n <= 0 || n > 40 {
		t.Fatalf("20 runs of 40 tasks left %d idle goroutines, want a reused few", n)
	}
	ReleaseWorkers()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines before, %d after ReleaseWorkers", before, n)
	}
}

// TestWorkerSurvivesPanic: a task that panics fails its run, and the
// worker that ran it runs later tasks correctly.
func TestWorkerSurvivesPanic(t *testing.T) {
	s := NewScheduler(Config{Seed: 1})
	s.Go("boom", func() { panic("boom") })
	if err := s.Run(); err == nil {
		t.Fatal("a panicking task did not fail the run")
	}
	ran := 0
	s2 := NewScheduler(Config{Seed: 1})
	for range 3 {
		s2.Go("after", func() { s2.Yield("after"); ran++ })
	}
	if err := s2.Run(); err != nil || ran != 3 {
		t.Fatalf("run after a panic: %v, %d of 3 tasks ran", err, ran)
	}
}
