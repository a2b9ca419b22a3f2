package actor

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	pa "github.com/asynkron/protoactor-go/actor"
)

// racyWorkload starts tasks that interleave increments of a shared counter
// and records the order they observe, so different schedules leave
// different traces.
func racyWorkload(s *Scheduler) *[]int {
	order := &[]int{}
	counter := 0
	for i := range 4 {
		s.Go(fmt.Sprintf("worker%d", i), func() {
			for range 5 {
				v := counter
				s.Yield("read")
				counter = v + 1
				*order = append(*order, i)
				s.Record("write", fmt.Sprintf("%d=%d", i, counter))
			}
		})
	}
	return order
}

func runRacy(t testing.TB, seed uint64) (string, []int) {
	s := NewScheduler(Config{Seed: seed})
	order := racyWorkload(s)
	if err := s.Run(); err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	return s.Trace().Hash(), *order
}

func TestDeterminismSameSeedSameTrace(t *testing.T) {
	hashes := map[string]bool{}
	for seed := uint64(0); seed < 200; seed++ {
		h1, o1 := runRacy(t, seed)
		h2, o2 := runRacy(t, seed)
		if h1 != h2 {
			t.Fatalf("seed %d: trace %s then %s", seed, h1, h2)
		}
		if fmt.Sprint(o1) != fmt.Sprint(o2) {
			t.Fatalf("seed %d: order %v then %v", seed, o1, o2)
		}
		hashes[h1] = true
	}
	if len(hashes) < 150 {
		t.Fatalf("200 seeds gave only %d distinct schedules on a racy workload", len(hashes))
	}
}

// TestFinishedTasksLeaveReports: tasks that finished are not named by a
// deadlock report nor counted live by the step limit's error, whether or
// not the scheduler has dropped them from its list yet (it drops them once
// they are half of it).
func TestFinishedTasksLeaveReports(t *testing.T) {
	for _, done := range []int{1, 5} { // fewer than the blocked, then more
		s := NewScheduler(Config{Seed: 1})
		for i := range done {
			s.Go(fmt.Sprintf("done%d", i), func() {})
		}
		never := false
		for i := range 3 {
			s.Go(fmt.Sprintf("stuck%d", i), func() { _ = s.Wait("never", func() bool { return never }, 0) })
		}
		var d *DeadlockError
		if err := s.Run(); !errors.As(err, &d) {
			t.Fatalf("%d finished: Run = %v, want a deadlock", done, err)
		}
		if len(d.Blocked) != 3 {
			t.Fatalf("%d finished: blocked = %+v, want the 3 stuck tasks", done, d.Blocked)
		}

		s = NewScheduler(Config{Seed: 1, MaxSteps: 100})
		ended := 0
		for i := range done {
			s.Go(fmt.Sprintf("done%d", i), func() { ended++ })
		}
		for i := range 3 {
			s.Go(fmt.Sprintf("spin%d", i), func() {
				_ = s.Wait("the others' ends", func() bool { return ended == done }, 0)
				for {
					s.Yield("spin")
				}
			})
		}
		if err := s.Run(); !errors.Is(err, ErrStepLimit) || !strings.Contains(err.Error(), "(3 tasks live)") {
			t.Fatalf("%d finished: Run = %v, want the step limit with 3 tasks live", done, err)
		}
	}
}

func TestDeadlockReportListsBlockedTasks(t *testing.T) {
	s := NewScheduler(Config{Seed: 1})
	a, b := false, false
	s.Go("left", func() {
		_ = s.Wait("right's flag", func() bool { return b }, 0)
		a = true
	})
	s.Go("right", func() {
		_ = s.Wait("left's flag", func() bool { return a }, 0)
		b = true
	})
	before := runtime.NumGoroutine()
	err := s.Run()
	var d *DeadlockError
	if !errors.As(err, &d) {
		t.Fatalf("Run = %v, want a deadlock", err)
	}
	if len(d.Blocked) != 2 {
		t.Fatalf("blocked = %+v, want 2 tasks", d.Blocked)
	}
	msg := err.Error()
	for _, want := range []string{"left waits for right's flag", "right waits for left's flag"} {
		if !strings.Contains(msg, want) {
			t.Errorf("report %q lacks %q", msg, want)
		}
	}
	// The unwound tasks' goroutines exit on their own schedule: poll for
	// them to be gone rather than sleeping a fixed time and hoping.
	after := runtime.NumGoroutine()
	for deadline := time.Now().Add(10 * time.Second); after > before && time.Now().Before(deadline); after = runtime.NumGoroutine() {
		time.Sleep(time.Millisecond)
	}
	if after > before {
		t.Errorf("goroutines %d -> %d after 10s: blocked tasks were not unwound", before, after)
	}
}

func TestWaitTimesOutInVirtualTime(t *testing.T) {
	s := NewScheduler(Config{Seed: 3})
	var err error
	var at time.Duration
	s.Go("waiter", func() {
		err = s.Wait("nothing", never, 5*time.Second)
		at = s.Now()
	})
	start := time.Now()
	if rerr := s.Run(); rerr != nil {
		t.Fatal(rerr)
	}
	var te *TimeoutError
	if !errors.As(err, &te) || te.What != "nothing" {
		t.Fatalf("Wait = %v, want a timeout naming what it waited for", err)
	}
	if at != 5*time.Second {
		t.Fatalf("virtual time after timeout = %v, want 5s", at)
	}
	if time.Since(start) > time.Second {
		t.Fatal("a virtual 5 s timeout took real time")
	}
}

func TestAfterAndCancel(t *testing.T) {
	s := NewScheduler(Config{Seed: 4})
	fired, cancelledFired := time.Duration(-1), false
	s.Go("main", func() {
		s.After("t1", 2*time.Millisecond, func() { fired = s.Now() })
		cancel := s.After("t2", time.Millisecond, func() { cancelledFired = true })
		cancel()
	})
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if fired != 2*time.Millisecond || cancelledFired {
		t.Fatalf("fired at %v, cancelled timer fired %v", fired, cancelledFired)
	}
}

func TestPanicInTaskIsReported(t *testing.T) {
	s := NewScheduler(Config{Seed: 5})
	s.Go("bad", func() { panic("boom") })
	s.Go("other", func() { _ = s.Wait("forever", never, 0) })
	var p *PanicError
	if err := s.Run(); !errors.As(err, &p) || p.Task != "bad" {
		t.Fatalf("Run = %v, want a panic from task bad", err)
	}
}

// placeText is a place a task reports through SetWhere.
type placeText string

func (p placeText) String() string { return string(p) }

// TestStepLimit: a run that reaches its bound reports the tasks that ran
// in its last RecentSteps steps, where they said they are, and the tasks
// that wait, a task that ran long before its last wait among them.
func TestStepLimit(t *testing.T) {
	const steps = 5 * RecentSteps
	s := NewScheduler(Config{Seed: 6, MaxSteps: steps})
	round := 0
	s.Go("spinner", func() {
		s.SetWhere(func() fmt.Stringer { return placeText(fmt.Sprintf("round %d", round)) })
		for ; ; round++ {
			s.Yield("spin")
		}
	})
	s.Go("quiet", func() { s.Yield("spin") })
	s.Go("early", func() {
		for range RecentSteps / 10 {
			s.Yield("early work")
		}
		_ = s.Wait("a flag nobody raises", func() bool { return false }, 0)
	})
	err := s.Run()
	var sl *StepLimitError
	if !errors.Is(err, ErrStepLimit) || !errors.As(err, &sl) {
		t.Fatalf("Run = %v, want a *StepLimitError", err)
	}
	if sl.Steps != steps || sl.Live != 2 {
		t.Errorf("steps %d, live %d: want %d, 2", sl.Steps, sl.Live, steps)
	}
	if len(sl.Running) != 1 || sl.Running[0].Name != "spinner" || sl.Running[0].Point != "spin" || sl.Running[0].Where == nil {
		t.Fatalf("running = %+v, want the spinner alone, at spin, with its place", sl.Running)
	}
	if want := fmt.Sprintf("round %d", round); sl.Running[0].Where.String() != want {
		t.Errorf("the spinner's place %q, want %q (asked at the report)", sl.Running[0].Where, want)
	}
	if len(sl.Blocked) != 1 || sl.Blocked[0].Name != "early" || sl.Blocked[0].What != "a flag nobody raises" {
		t.Errorf("blocked = %+v, want early, waiting for its flag", sl.Blocked)
	}
	msg := err.Error()
	first, _, _ := strings.Cut(msg, "\n")
	if want := fmt.Sprintf("scheduler step limit reached after %d steps (2 tasks live)", steps); first != want {
		t.Errorf("first line %q, want %q", first, want)
	}
	for _, want := range []string{"spinner at spin, round ", "early waits for a flag nobody raises"} {
		if !strings.Contains(msg, want) {
			t.Errorf("report lacks %q:\n%s", want, msg)
		}
	}
}

type ping struct{ n int }

// TestActorsUnderScheduler checks that protoactor mailbox runs become
// scheduler tasks: same seed, same trace; no goroutines left over.
func TestActorsUnderScheduler(t *testing.T) {
	run := func(seed uint64) (string, []int) {
		s := NewScheduler(Config{Seed: seed})
		sys := NewSystem()
		var got []int
		props := pa.PropsFromFunc(func(c pa.Context) {
			if p, ok := c.Message().(*ping); ok {
				got = append(got, p.n)
				s.Record("actor", fmt.Sprint(p.n))
			}
		}, pa.WithDispatcher(s.Dispatcher()))
		pids := []*pa.PID{sys.Root.Spawn(props), sys.Root.Spawn(props)}
		for i := range 3 {
			s.Go(fmt.Sprintf("sender%d", i), func() {
				for j := range 3 {
					sys.Root.Send(pids[(i+j)%2], &ping{n: i*10 + j})
					s.Yield("sent")
				}
			})
		}
		if err := s.Run(); err != nil {
			t.Fatal(err)
		}
		return s.Trace().Hash(), got
	}
	h1, g1 := run(11)
	h2, g2 := run(11)
	if h1 != h2 || fmt.Sprint(g1) != fmt.Sprint(g2) {
		t.Fatalf("same seed differed: %s %v vs %s %v", h1, g1, h2, g2)
	}
	if len(g1) != 9 {
		t.Fatalf("actors received %d messages, want 9", len(g1))
	}
	distinct := map[string]bool{}
	for seed := uint64(0); seed < 20; seed++ {
		h, _ := run(seed)
		distinct[h] = true
	}
	if len(distinct) < 2 {
		t.Fatal("20 seeds gave one schedule")
	}
}

// bellWorkload starts a toggler that flips a flag at some of its steps
// and waiters that wait for the flag to be up, with Wait, or with
// WaitBell and a bell the toggler rings at every flip (belled).
func bellWorkload(s *Scheduler, belled bool) *[]string {
	var log []string
	up := false
	var bell Bell
	s.Go("toggler", func() {
		for i := range 12 {
			if i%3 != 0 {
				up = !up
				bell.Ring()
			}
			s.Yield("toggle")
		}
		up = true
		bell.Ring()
	})
	for w := range 3 {
		s.Go(fmt.Sprintf("waiter%d", w), func() {
			for range 3 {
				var err error
				if belled {
					err = s.WaitBell("flag up", func() bool { return up }, &bell, 0)
				} else {
					err = s.Wait("flag up", func() bool { return up }, 0)
				}
				log = append(log, fmt.Sprintf("%d at %d up %t err %v", w, s.Steps(), up, err))
				s.Yield("after")
			}
		})
	}
	return &log
}

// TestWaitBellSameSchedules: a condition whose bell rings wherever it may
// change gives every step the runnable tasks Wait gives, even when it
// turns true and false again before its task runs: the same trace and
// the same wake-ups for every seed.
func TestWaitBellSameSchedules(t *testing.T) {
	for seed := uint64(0); seed < 100; seed++ {
		var hashes [2]string
		var logs [2][]string
		for i, belled := range []bool{false, true} {
			s := NewScheduler(Config{Seed: seed})
			log := bellWorkload(s, belled)
			if err := s.Run(); err != nil {
				t.Fatalf("seed %d (belled %t): %v", seed, belled, err)
			}
			hashes[i], logs[i] = s.Trace().Hash(), *log
		}
		if hashes[0] != hashes[1] || fmt.Sprint(logs[0]) != fmt.Sprint(logs[1]) {
			t.Fatalf("seed %d: Wait and WaitBell differ:\n%v\n%v", seed, logs[0], logs[1])
		}
		for _, l := range logs[1] {
			if !strings.Contains(l, "up true err <nil>") {
				t.Fatalf("seed %d: a waiter woke with the flag down: %s", seed, l)
			}
		}
	}
}

// TestWaitBellAsksOnlyAfterRing: while other tasks take steps without
// ringing, a WaitBell's condition is asked once; a ring makes the next
// step ask it again.
func TestWaitBellAsksOnlyAfterRing(t *testing.T) {
	s := NewScheduler(Config{Seed: 7})
	var bell Bell
	asked, open := 0, false
	s.Go("waiter", func() {
		if err := s.WaitBell("open", func() bool { asked++; return open }, &bell, 0); err != nil {
			t.Error(err)
		}
	})
	var before, after int
	s.Go("busy", func() {
		for range 20 {
			s.Yield("busy")
		}
		before = asked
		bell.Ring() // rung, but still closed
		s.Yield("busy")
		after = asked
		open = true
		bell.Ring()
	})
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if before != 1 {
		t.Errorf("asked %d times over 20 steps without a ring, want once", before)
	}
	if after != 2 {
		t.Errorf("asked %d times after a ring, want 2", after)
	}
}

// avoider is a strategy that, once avoid is set (not -1), runs any task
// but the one numbered avoid while it can, and notes whether that one
// was runnable at each step; before, it runs the lowest ID.
type avoider struct {
	avoid    int
	runnable []bool
}

func (a *avoider) Next(_ int64, runnable []*Task) int {
	if a.avoid < 0 {
		return 0
	}
	i, found := IndexOf(runnable, a.avoid)
	a.runnable = append(a.runnable, found && runnable[i].ID() == a.avoid)
	if found && len(runnable) > 1 {
		return (i + 1) % len(runnable)
	}
	return 0
}

// TestWaitBellHeldConditionStaysRunnable: a task whose condition held
// when asked is runnable at every step until its bell rings, without
// being asked again; a ring has it asked at the next step, and a
// condition that no longer holds takes it out of the runnable list.
func TestWaitBellHeldConditionStaysRunnable(t *testing.T) {
	st := &avoider{avoid: -1}
	s := NewScheduler(Config{Strategy: st})
	var bell Bell
	asked, open := 0, false
	s.Go("waiter", func() { // task 0, parked first
		if err := s.WaitBell("open", func() bool { asked++; return open }, &bell, 0); err != nil {
			t.Error(err)
		}
	})
	var askedClosed, askedHeld, askedRung int
	var runnableHeld, runnableClosed []bool
	s.Go("busy", func() {
		askedClosed = asked
		st.avoid = 0
		open = true
		bell.Ring()
		from := len(st.runnable)
		for range 20 {
			s.Yield("busy")
		}
		askedHeld, runnableHeld = asked, slices.Clone(st.runnable[from:])
		open = false
		bell.Ring()
		from = len(st.runnable)
		for range 5 {
			s.Yield("busy")
		}
		askedRung, runnableClosed = asked, slices.Clone(st.runnable[from:])
		open = true
		bell.Ring()
	})
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if askedClosed != 1 {
		t.Fatalf("asked %d times before it opened, want once", askedClosed)
	}
	if askedHeld != 2 {
		t.Errorf("asked %d times in all while its condition held and its bell was silent, want 2", askedHeld)
	}
	if slices.Contains(runnableHeld, false) || len(runnableHeld) != 20 {
		t.Errorf("runnable at the steps its condition held: %v, want 20 times true", runnableHeld)
	}
	if askedRung != 3 {
		t.Errorf("asked %d times after a ring that closed it, want 3", askedRung)
	}
	if slices.Contains(runnableClosed, true) || len(runnableClosed) != 5 {
		t.Errorf("runnable at the steps after it closed: %v, want 5 times false", runnableClosed)
	}
	if asked != 4 {
		t.Errorf("asked %d times in all, want 4 (the last after the ring that opened it)", asked)
	}
}

// TestWaitBellTimeoutLeavesBell: a WaitBell that times out leaves its
// bell and the scheduler's lists, so that later rings reach only the
// tasks waiting then; a second wait with the same bell wakes on a ring.
func TestWaitBellTimeoutLeavesBell(t *testing.T) {
	s := NewScheduler(Config{Seed: 11})
	var bell Bell
	open := false
	var first, second error
	var waitersAfterTimeout int
	var loudAfterTimeout bool
	s.Go("waiter", func() {
		first = s.WaitBell("open", func() bool { return open }, &bell, time.Millisecond)
		waitersAfterTimeout = len(bell.waiters)
		_, loudAfterTimeout = IndexOf(s.loud, s.Current().ID())
		second = s.WaitBell("open", func() bool { return open }, &bell, 0)
	})
	s.Go("opener", func() {
		s.Sleep(2 * time.Millisecond)
		bell.Ring() // nobody listens to this one yet, or only the second wait
		s.Yield("between")
		open = true
		bell.Ring()
	})
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	var te *TimeoutError
	if !errors.As(first, &te) {
		t.Fatalf("first wait = %v, want a timeout", first)
	}
	if waitersAfterTimeout != 0 || loudAfterTimeout {
		t.Fatalf("after the timeout: %d waiters on the bell, the waiter in the loud list %t, want neither", waitersAfterTimeout, loudAfterTimeout)
	}
	if second != nil {
		t.Fatalf("second wait = %v", second)
	}
	if len(bell.waiters) != 0 || len(s.loud) != 0 {
		t.Fatalf("after the run: %d waiters, %d loud tasks", len(bell.waiters), len(s.loud))
	}
}
