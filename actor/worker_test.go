package actor

import (
	"runtime"
	"strings"
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
	laterRunWorks(t, "a panic")
}

// laterRunWorks checks that a run after what went wrong (the pooled
// workers it left) runs every task to its end.
func laterRunWorks(t *testing.T, after string) {
	t.Helper()
	ran := 0
	s := NewScheduler(Config{Seed: 2})
	for range 3 {
		s.Go("after", func() { s.Yield("after"); ran++ })
	}
	if err := s.Run(); err != nil || ran != 3 {
		t.Fatalf("run after %s: %v, %d of 3 tasks ran", after, err, ran)
	}
}

// TestGoexitInTaskEndsTheRun: a task that calls runtime.Goexit (as
// t.FailNow does) leaves its worker through the goroutine that resumed it;
// the run ends with an error naming the task instead of hanging, the other
// tasks are unwound (their deferred calls run), and later runs work.
func TestGoexitInTaskEndsTheRun(t *testing.T) {
	s := NewScheduler(Config{Seed: 1})
	started, unwound := 0, 0
	for range 3 {
		s.Go("waiter", func() {
			started++
			defer func() { unwound++ }()
			_ = s.Wait("forever", never, 0)
		})
	}
	s.Go("quitter", func() {
		_ = s.Wait("the waiters", func() bool { return started == 3 }, 0)
		runtime.Goexit()
	})
	err := s.Run()
	if err == nil || !strings.Contains(err.Error(), "quitter") || !strings.Contains(err.Error(), "Goexit") {
		t.Fatalf("run with a task calling runtime.Goexit: %v, want an error naming the task", err)
	}
	if unwound != 3 {
		t.Fatalf("%d of 3 waiting tasks unwound", unwound)
	}
	laterRunWorks(t, "a Goexit")
}

// BenchmarkSwitch is the cost of a scheduling step that passes control
// to another task: 8 tasks yield in turns under the random walk. Run it
// with -cpu 1,2: a hand-off between goroutines through channels cost
// several times more with an idle processor to wake than without.
func BenchmarkSwitch(b *testing.B) {
	const tasks = 8
	s := NewScheduler(Config{Seed: 1})
	per := b.N/tasks + 1
	for range tasks {
		s.Go("yielder", func() {
			for range per {
				s.Yield("turn")
			}
		})
	}
	b.ResetTimer()
	if err := s.Run(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(s.Steps()), "ns/step")
}
