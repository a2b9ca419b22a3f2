package actor

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// thenProgram starts tasks that each take rounds steps: a Yield, or every
// third round a wait on a bell that a later round of another task rings,
// some waits timing out. parked says whether they park with YieldThen and
// WaitBellThen or with Yield and WaitBell; both must give the same run.
func thenProgram(s *Scheduler, tasks, rounds int, parked bool, log *[]string) {
	var bell Bell
	rung := 0
	for i := range tasks {
		round := 0
		var step func()
		note := func(what string) {
			*log = append(*log, fmt.Sprintf("step %d task %d round %d %s", s.Steps(), i, round, what))
		}
		ready := func() bool { return rung > round }
		if i%4 == 0 {
			// Waits that only their timeout ends.
			ready = func() bool { return rung > 1<<20 }
		}
		var afterWait func(error)
		woke := func() {
			var err error
			if s.TimedOut() {
				err = &TimeoutError{}
			}
			afterWait(err)
		}
		step = func() {
			for round < rounds {
				round++
				note("runs")
				if round%7 == i%7 {
					rung++
					bell.Ring()
				}
				timeout := time.Duration(0)
				if i%4 == 0 {
					timeout = time.Millisecond
				}
				switch {
				case round%3 == 0 && parked:
					s.WaitBellThen("bell", ready, &bell, timeout, ContinueFunc(woke))
					return
				case round%3 == 0:
					afterWait(s.WaitBell("bell", ready, &bell, timeout))
					continue
				case parked:
					s.YieldThen("yield", ContinueFunc(step))
					return
				default:
					s.Yield("yield")
				}
			}
			note("ends")
		}
		afterWait = func(err error) {
			var te *TimeoutError
			switch {
			case err == nil:
				note("woke")
			case errors.As(err, &te):
				note("timed out")
			default:
				note("failed: " + err.Error())
			}
			if parked {
				step()
			}
		}
		s.Go(fmt.Sprintf("task %d", i), step)
	}
}

// TestYieldThenRunsAsYield: parking with YieldThen and WaitBellThen gives
// the steps, the trace and the outcomes (wakes and timeouts) that Yield
// and WaitBell give, for several seeds.
func TestYieldThenRunsAsYield(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		var logs [2][]string
		var hashes [2]string
		var errs [2]error
		for k, parked := range []bool{false, true} {
			s := NewScheduler(Config{Seed: seed})
			thenProgram(s, 12, 30, parked, &logs[k])
			errs[k] = s.Run()
			hashes[k] = s.Trace().Hash()
		}
		if fmt.Sprint(errs[0]) != fmt.Sprint(errs[1]) {
			t.Fatalf("seed %d: Run returned %v with Yield, %v with YieldThen", seed, errs[0], errs[1])
		}
		if len(logs[0]) != len(logs[1]) {
			t.Fatalf("seed %d: %d events with Yield, %d with YieldThen", seed, len(logs[0]), len(logs[1]))
		}
		for i := range logs[0] {
			if logs[0][i] != logs[1][i] {
				t.Fatalf("seed %d: event %d is %q with Yield, %q with YieldThen", seed, i, logs[0][i], logs[1][i])
			}
		}
		joined := strings.Join(logs[1], "\n")
		if !strings.Contains(joined, "timed out") || !strings.Contains(joined, "woke") {
			t.Fatalf("seed %d: the waits neither all woke nor all timed out, they must do both:\n%s", seed, joined)
		}
		if hashes[0] != hashes[1] {
			t.Fatalf("seed %d: trace %s with Yield, %s with YieldThen", seed, hashes[0], hashes[1])
		}
	}
}

// TestParkedTasksHoldNoGoroutine: thousands of tasks parked with
// YieldThen run on a handful of goroutines (the run's driver and one
// worker), where tasks parked with Yield hold one each.
func TestParkedTasksHoldNoGoroutine(t *testing.T) {
	const tasks = 2000
	most := map[bool]int{}
	for _, parked := range []bool{false, true} {
		ReleaseWorkers()
		before := runtime.NumGoroutine()
		s := NewScheduler(Config{Seed: 3})
		for i := range tasks {
			left := 3
			var step func()
			step = func() {
				for ; left > 0; left-- {
					most[parked] = max(most[parked], runtime.NumGoroutine()-before)
					if parked {
						left--
						s.YieldThen("yield", ContinueFunc(step))
						return
					}
					s.Yield("yield")
				}
			}
			s.Go(fmt.Sprint("task ", i), step)
		}
		if err := s.Run(); err != nil {
			t.Fatal(err)
		}
	}
	if most[false] < tasks/2 {
		t.Fatalf("with Yield at most %d goroutines ran at once; want one for most of the %d tasks", most[false], tasks)
	}
	if most[true] > 10 {
		t.Fatalf("with YieldThen %d goroutines ran at once, with Yield %d: parked tasks still hold theirs", most[true], most[false])
	}
}

// TestParkedTasksEndWithTheRun: a run that deadlocks with tasks parked by
// WaitBellThen and YieldThen (halted) reports the waits and leaves no
// goroutine behind.
func TestParkedTasksEndWithTheRun(t *testing.T) {
	before := runtime.NumGoroutine()
	s := NewScheduler(Config{Seed: 1})
	var bell Bell
	ran := false
	for i := range 3 {
		s.Go(fmt.Sprint("waiter ", i), func() {
			s.WaitBellThen("a ring that never comes", func() bool { return false }, &bell, 0, ContinueFunc(func() { ran = true }))
		})
	}
	err := s.Run()
	var d *DeadlockError
	if !errors.As(err, &d) || len(d.Blocked) != 3 || d.Blocked[0].What != "a ring that never comes" {
		t.Fatalf("Run returned %v, want a deadlock of the 3 waiters", err)
	}
	if ran {
		t.Fatal("a continuation ran after the run ended")
	}
	ReleaseWorkers()
	noGoroutinesLeft(t, before, "a run that deadlocked among parked tasks")
}

// warmStep is a Warmer continuation of a task that yields left more
// times; it counts the Warm calls not yet followed by a Continue.
type warmStep struct {
	s           *Scheduler
	left        int
	warm, early int
}

func (w *warmStep) Warm() uint64 { w.warm++; return uint64(w.left) }

func (w *warmStep) Continue() {
	if w.warm != 1 {
		w.early++
	}
	w.warm = 0
	if w.left--; w.left > 0 {
		w.s.YieldThen("yield", w)
	}
}

// TestWarmerWarmedBeforeContinue: a task parked with a Warmer has Warm
// called once each time it is chosen, before its Continue, and the run
// takes the steps a plain continuation's takes.
func TestWarmerWarmedBeforeContinue(t *testing.T) {
	var hashes [2]string
	for k, warmer := range []bool{false, true} {
		s := NewScheduler(Config{Seed: 5})
		var steps []*warmStep
		for i := range 20 {
			w := &warmStep{s: s, left: 4}
			steps = append(steps, w)
			s.Go(fmt.Sprint("task ", i), func() {
				if warmer {
					s.YieldThen("yield", w)
				} else {
					s.YieldThen("yield", ContinueFunc(w.Continue))
				}
			})
		}
		if err := s.Run(); err != nil {
			t.Fatal(err)
		}
		for i, w := range steps {
			if w.left != 0 {
				t.Fatalf("warmer %v: task %d has %d rounds left", warmer, i, w.left)
			}
			if warmer && w.early != 0 {
				t.Fatalf("task %d: %d Continues not preceded by exactly one Warm", i, w.early)
			}
		}
		hashes[k] = s.Trace().Hash()
	}
	if hashes[0] != hashes[1] {
		t.Fatalf("trace with a Warmer %s, with a plain continuation %s", hashes[1], hashes[0])
	}
}
