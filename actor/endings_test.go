package actor

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// TestRunEndingsLeaveNoGoroutines: runs that end well, by a task's
// runtime.Goexit, by a panic and by a deadlock, each after hundreds of
// steps among tens of tasks (spinning on bells), end with the outcome
// they should, unwind every task left, let the next run reuse their
// workers, and leave no goroutine once the idle workers are released.
func TestRunEndingsLeaveNoGoroutines(t *testing.T) {
	ReleaseWorkers()
	before := runtime.NumGoroutine()
	endings := []string{"well", "goexit", "panic", "deadlock"}
	for seed := range uint64(40) {
		ending := endings[seed%4]
		s := NewScheduler(Config{Seed: seed})
		flags := spinWorkload(s, 32, 10)
		stuck, unwound := 0, 0
		for i := range 4 {
			s.Go(fmt.Sprint("stuck", i), func() {
				defer func() { unwound++ }()
				stuck++
				_ = s.Wait("the end", func() bool { return ending == "well" && s.Steps() > 200 }, 0)
			})
		}
		s.Go("ender", func() {
			_ = s.Wait("200 steps", func() bool { return s.Steps() > 200 && stuck == 4 }, 0)
			switch ending {
			case "goexit":
				runtime.Goexit()
			case "panic":
				panic("ender")
			}
		})
		err := s.Run()
		var d *DeadlockError
		var p *PanicError
		switch {
		case ending == "well" && err != nil:
			t.Fatalf("seed %d: a run that should end well: %v", seed, err)
		case ending == "goexit" && (err == nil || !strings.Contains(err.Error(), "ender")):
			t.Fatalf("seed %d: a task's Goexit: %v, want an error naming the task", seed, err)
		case ending == "panic" && !errors.As(err, &p):
			t.Fatalf("seed %d: a task's panic: %v, want a PanicError", seed, err)
		case ending == "deadlock" && !errors.As(err, &d):
			t.Fatalf("seed %d: stuck tasks: %v, want a deadlock", seed, err)
		}
		if unwound != 4 {
			t.Fatalf("seed %d (ending %s): %d of 4 stuck tasks unwound", seed, ending, unwound)
		}
		if ending == "well" {
			for g, f := range flags {
				if f != 10 {
					t.Fatalf("seed %d: group %d's flag is %d, want 10", seed, g, f)
				}
			}
		}
	}
	ReleaseWorkers()
	noGoroutinesLeft(t, before, "40 runs and ReleaseWorkers")
}
