package actor

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"time"
)

// Config configures a [Scheduler].
type Config struct {
	// Seed seeds the default strategy.
	Seed uint64
	// Strategy picks the next task; nil means [NewRandomWalk](Seed).
	Strategy Strategy
	// MaxSteps bounds the number of scheduling steps (0: no bound). A run
	// that reaches it fails with a [*StepLimitError].
	MaxSteps int64
	// KeepEvents keeps every trace event in memory (see [Trace.Events]).
	KeepEvents bool
}

// Strategy decides which runnable task runs at each scheduling step.
type Strategy interface {
	// Next returns an index into runnable, which is ordered by task ID.
	Next(step int64, runnable []*Task) int
}

// A Picker is a Strategy that chooses by position alone: Pick returns an
// index into the runnable list of n tasks (in ID order, as Next sees it),
// and must make the choice Next would make from a list of that length.
// The scheduler then finds the task chosen without building the list,
// which costs a step a copy of every ready task (thousands in a PTX
// launch, where a few blocked ones change at each step).
type Picker interface {
	Strategy
	Pick(step int64, n int) int
}

// ErrStepLimit is returned by [Scheduler.Run] when Config.MaxSteps is reached.
var ErrStepLimit = errors.New("scheduler step limit reached")

type taskState uint8

const (
	taskReady taskState = iota
	taskBlocked
	taskRunning
	taskDone
)

// Task is one coroutine under a [Scheduler]: a rank program, a mailbox run, a
// kernel block or a signalling lane.
type Task struct {
	// The fields a step reads and writes when it chooses the task come
	// first, 64 bytes together: with tens of thousands of tasks, each
	// line of the chosen one read is a cache miss.
	id    int
	point string      // the scheduling point the task is parked at
	ready func() bool // the condition of the Wait it is parked in
	bell  *Bell       // nil: ready is asked at every step
	// resume and yield are its worker's (see worker): the driver
	// resumes the task, and the task parks, without reading the worker.
	resume func() (struct{}, bool)
	yield  func(struct{}) bool
	state  taskState
	halted bool // stopped for good by Halt
	// listed: the task is ready, in the scheduler's runnable set, which
	// keeps a task chosen as ready there while it runs, so that a Yield
	// (the step most tasks take most often) moves nothing.
	listed bool
	// wakeable: blocked, with its condition true when last asked, and
	// so in the scheduler's runnable set.
	wakeable bool
	loud     bool // in the scheduler's loud list
	woke     bool // the last resumption ended a Wait
	timedOut bool
	aborting bool // being unwound by Run's end: Wait and Yield return at once

	// The fields a step writes or reads after choosing the task come
	// next, in the second line of the aligned pair the first one starts
	// (which a processor fetches with it).
	//
	// then is what a task that has not started, or was parked by
	// YieldThen or WaitBellThen, runs when chosen: it holds no worker
	// (resume is nil) meanwhile.
	then Continuation
	ran  int64 // the step that last chose it

	label Label
	// waitPoint is the point of the last Wait it parked in: "wait "
	// and what it waits for (waitWhat).
	waitPoint string
	deadline  time.Duration       // < 0: none
	where     func() fmt.Stringer // where it is, for reports (see SetWhere)
	_         [48]byte            // to 256 bytes, a multiple of 128 (TestTaskHotFieldsShareALine)
}

// waitPrefix starts the point of a task parked in a Wait.
const waitPrefix = "wait "

// waitWhat is what the task waits for, or waited for last.
func (t *Task) waitWhat() string {
	if t.waitPoint == "" {
		return ""
	}
	return t.waitPoint[len(waitPrefix):]
}

// ID is the task's number, unique within its scheduler, in creation order.
func (t *Task) ID() int { return t.id }

// Name is the name the task was started with.
func (t *Task) Name() string { return t.label.Name }

// Label is the label the task was started with.
func (t *Task) Label() Label { return t.label }

// Point is the scheduling point the task is parked at.
func (t *Task) Point() string { return t.point }

// Waiting reports whether the task is parked in a Wait (rather than a Yield).
func (t *Task) Waiting() bool { return t.state == taskBlocked }

// Scheduler is the deterministic simulator runtime. See the package doc.
//
// Only one task runs at a time; control passes from task to task as
// between coroutines (the task that parks takes the next scheduling step
// itself, then hands the chosen task to Run's driver, which resumes it),
// so all simulation state may be accessed without locks from tasks and from
// Wait conditions. The goroutines that run tasks are reused for later
// tasks.
type Scheduler struct {
	seed     uint64
	strategy Strategy
	maxSteps int64
	tasks    []*Task // live tasks in ID order
	nextID   int
	cur      *Task
	now      time.Duration
	steps    int64
	trace    *Trace
	warmth   uint64 // what Warmers returned (see pick)
	next     *Task  // the task the driver resumes next; nil: the run is over
	result   error
	// runq is the runnable tasks, in ID order: the ready ones (parked
	// at a Yield or not started, with the running task when it was
	// chosen as ready), nready of them, and the wakeable ones, blocked
	// in a Wait whose condition held when last asked. blocked is the
	// tasks parked in a Wait, halted ones excepted. Either can hold tens
	// of thousands of tasks (a launch's lanes), a few of which change at
	// each step: sets that find a task's position, and the task at a
	// position, without moving the others. A step's choice by position
	// is one search of runq.
	runq, blocked taskSet
	nready        int
	scan          []*Task // the blocked tasks, while fireTimers visits them
	// runList is runq as a list in ID order, built when a strategy that
	// is no Picker asks for the runnable list, at runq's version
	// runListAt (runVers counts runq's changes).
	runList   []*Task
	runListAt uint64
	runVers   uint64
	// loud is the blocked tasks a step asks, in ID order: those without
	// a bell, those just blocked, and those whose bell rang since their
	// condition was last asked. The steady ones (wakeable, not loud)
	// are those whose condition held when last asked and whose bell has not
	// rung since: runnable at every step without a visit (tasks waiting
	// to be chosen can be hundreds). The others are silent: their
	// condition failed and nothing it reads changed since.
	loud []*Task
	// choosing is set while the strategy chooses, from a runnable list
	// that may be runList itself: the tasks it halts meanwhile
	// (haltedInNext) leave the lists once it has chosen.
	choosing     bool
	haltedInNext []*Task
	finished     int // finished tasks still in tasks (until the next reap)
	failure      error
	running      bool
	halts        []func(*Task) bool // Halt rules that also stop tasks started later
	idle         []*worker          // workers done with a task of this run
}

// NewScheduler returns a scheduler with no tasks.
func NewScheduler(cfg Config) *Scheduler {
	st := cfg.Strategy
	if st == nil {
		st = NewRandomWalk(cfg.Seed)
	}
	return &Scheduler{
		seed:     cfg.Seed,
		strategy: st,
		maxSteps: cfg.MaxSteps,
		trace:    NewTrace(cfg.KeepEvents),
	}
}

// Seed is Config.Seed: simulations draw their own seeded decisions (the
// value a weak load returns) from it.
func (s *Scheduler) Seed() uint64 { return s.seed }

// Trace is the scheduler's event log.
func (s *Scheduler) Trace() *Trace { return s.trace }

// Steps is the number of scheduling steps taken so far.
func (s *Scheduler) Steps() int64 { return s.steps }

// Now is the virtual time.
func (s *Scheduler) Now() time.Duration { return s.now }

// Simulated reports true.
func (s *Scheduler) Simulated() bool { return true }

// Current is the running task, or nil when called from outside a task.
func (s *Scheduler) Current() *Task { return s.cur }

// Go starts a task. It may be called before Run or from a running task.
func (s *Scheduler) Go(name string, fn func()) { s.Spawn(name, fn) }

// GoLabeled is Go for a task that says what it is (see [Label]).
func (s *Scheduler) GoLabeled(l Label, fn func()) { s.SpawnLabeled(l, fn) }

// Spawn starts a task (of kind OtherTask) and returns it.
func (s *Scheduler) Spawn(name string, fn func()) *Task {
	return s.SpawnLabeled(Label{Name: name}, fn)
}

// SpawnLabeled starts a task labelled l and returns it.
func (s *Scheduler) SpawnLabeled(l Label, fn func()) *Task {
	return s.SpawnLabeledID(s.ReserveID(), l, fn)
}

// ReserveID takes the next task ID without starting a task: for what the
// tasks' observers must tell apart from every task (a simulated thread
// that may never need a task of its own), or for a task that
// SpawnLabeledID starts later.
func (s *Scheduler) ReserveID() int {
	id := s.nextID
	s.nextID++
	return id
}

// SpawnLabeledID is SpawnLabeled of a task whose ID id was reserved with
// ReserveID after the ID of every task started so far.
func (s *Scheduler) SpawnLabeledID(id int, l Label, fn func()) *Task {
	if n := len(s.tasks); n > 0 && s.tasks[n-1].id >= id || id >= s.nextID {
		panic(fmt.Sprintf("actor: task ID %d was not reserved after every started task's", id))
	}
	t := &Task{id: id, label: l, point: "start", deadline: -1}
	s.tasks = append(s.tasks, t)
	s.Recordf("spawn", "%d %s", t.id, l.Name)
	if !s.haltNew(t) {
		s.list(t)
	}
	t.then = ContinueFunc(fn) // it takes a worker once chosen (see attach)
	return t
}

// body runs fn, task t's function or continuation, on worker w. It
// reports whether fn returned (t finished, or parked by YieldThen or
// WaitBellThen), in which case the next scheduling step was taken and w
// was handed on (see handOn); an aborted task's worker ends.
func (s *Scheduler) body(w *worker, t *Task, fn Continuation) (reusable bool) {
	t.yield = w.yield // w's yield is set once w runs
	aborted := true
	defer func() {
		r := recover()
		switch {
		case r != nil && s.failure == nil:
			s.failure = &PanicError{Task: t.label.Name, Value: r, Stack: string(debug.Stack())}
		case !aborted && t.then != nil:
			// Parked by YieldThen or WaitBellThen: the task lives on
			// without a worker.
			t.resume, t.yield = nil, nil
			s.handOn(w)
			reusable = true
			return
		case !aborted:
			s.Record("exit", t.label.Name)
		}
		t.state, t.where = taskDone, nil // where may hold much: drop it with the task
		t.then = nil
		s.finished++
		s.unready(t)
		if t.aborting || aborted && r == nil {
			// Unwinding with runtime.Goexit (the run is ending, or the
			// task called it): the worker does not come back.
			reusable = false
			return
		}
		s.handOn(w)
		reusable = true
	}()
	fn.Continue()
	aborted = false
	return true
}

// handOn takes the scheduling step after the task of worker w ended or
// parked without it. A task chosen that holds no worker runs next on w
// itself, with no hand-off through the driver; else w joins the idle list
// and the driver resumes the task chosen.
func (s *Scheduler) handOn(w *worker) {
	next := s.pick()
	if next != nil && next.resume == nil {
		s.attach(next, w)
		return
	}
	s.idle = append(s.idle, w)
	s.next = next
}

// attach gives t, which holds no worker (it has not started, or parked by
// YieldThen or WaitBellThen), the worker w to run its function on.
func (s *Scheduler) attach(t *Task, w *worker) {
	fn := t.then
	t.then = nil
	t.resume = w.resume // and body takes w's yield
	w.job = job{s, t, fn}
}

// worker returns an idle worker of the run, or a new one.
func (s *Scheduler) worker() *worker {
	if n := len(s.idle); n > 0 {
		w := s.idle[n-1]
		s.idle = s.idle[:n-1]
		return w
	}
	return takeWorker()
}

// park passes control on from the running task t and waits to be resumed.
// A task resumed to be aborted unwinds with runtime.Goexit.
func (s *Scheduler) park(t *Task) {
	next := s.pick()
	if next == t {
		return
	}
	s.next = next
	if !t.yield(struct{}{}) || t.aborting {
		runtime.Goexit()
	}
}

func (s *Scheduler) mustCurrent(op string) *Task {
	if s.cur == nil {
		panic("actor: Scheduler." + op + " called from outside a task")
	}
	return s.cur
}

// Yield is a scheduling point: the strategy may run another task first.
func (s *Scheduler) Yield(point string) {
	t := s.mustCurrent("Yield")
	if t.aborting {
		return
	}
	t.state = taskReady
	t.point = point
	s.enlist(t)
	s.park(t)
}

// YieldThen is a Yield after which the task goes on with then instead of
// returning: the running task's function must return right after it,
// and its task runs then when the strategy chooses it again, meanwhile
// holding no goroutine (a parked task of a PTX launch's tens of thousands
// of lanes costs no stack). The scheduling steps, the trace and the
// runnable tasks of every step are those a Yield gives.
//
// then is an interface, not a func, so that a type whose Continue method
// does the work (a lane) is called with no closure to read: a closure is
// a record of its own, a cache miss at every step among many tasks.
func (s *Scheduler) YieldThen(point string, then Continuation) {
	t := s.mustCurrent("YieldThen")
	if t.aborting {
		return
	}
	t.state = taskReady
	t.point = point
	t.then = then
	s.enlist(t)
}

// WaitBellThen is WaitBell after which the task goes on with then instead
// of returning: as for YieldThen, the running task's function must return
// right after it, and the task holds no goroutine while it waits. Where
// WaitBell would return a [*TimeoutError], TimedOut reports true in then.
func (s *Scheduler) WaitBellThen(what string, ready func() bool, bell *Bell, timeout time.Duration, then Continuation) {
	t := s.mustCurrent("WaitBellThen")
	if t.aborting {
		return
	}
	s.block(t, what, ready, bell, timeout)
	t.then = then
	s.enlist(t)
}

// Continuation is what a task parked by YieldThen or WaitBellThen runs
// when the strategy chooses it again.
type Continuation interface{ Continue() }

// A Warmer is a [Continuation] that can read, when its task is chosen,
// the memory its Continue reads first: Warm's loads start while the
// scheduler finishes its step, rather than after it. Its result means
// nothing; the scheduler keeps it so that the loads are made.
type Warmer interface {
	Continuation
	Warm() uint64
}

// ContinueFunc is a func as a [Continuation].
type ContinueFunc func()

// Continue calls f.
func (f ContinueFunc) Continue() { f() }

// TimedOut reports whether the running task's last wait ended because its
// timeout passed (see WaitBellThen).
func (s *Scheduler) TimedOut() bool { return s.mustCurrent("TimedOut").timedOut }

// Wait blocks the running task until ready() is true or timeout passes.
// ready is asked at every scheduling step while the task waits.
func (s *Scheduler) Wait(what string, ready func() bool, timeout time.Duration) error {
	return s.WaitBell(what, ready, nil, timeout)
}

// Bell tells a waiting task when its condition may have changed: a
// [Scheduler.WaitBell] asks its condition again only once the bell rang
// since it last asked, and takes the last answer meanwhile. The code that
// changes what the condition reads rings it; a change without a ring goes
// unseen. A bell is not safe for concurrent use: under [Live], ring it
// under the lock that guards what the condition reads.
type Bell struct {
	rings   uint64
	waiters []*Task // the tasks blocked in a WaitBell with it
	sched   *Scheduler
}

// Ring tells the tasks waiting with b that their conditions may hold now.
func (b *Bell) Ring() {
	b.rings++
	for _, t := range b.waiters {
		if !t.loud { // asked again at the next step
			b.sched.makeLoud(t)
		}
	}
}

// Rings is how many times b rang.
func (b *Bell) Rings() uint64 { return b.rings }

// WaitBell is [Scheduler.Wait] for a condition that can change only
// where bell rings (nil: anywhere, as for Wait): the steps between rings
// do not ask it. The runnable tasks of every step are those Wait would
// give.
func (s *Scheduler) WaitBell(what string, ready func() bool, bell *Bell, timeout time.Duration) error {
	t := s.mustCurrent("Wait")
	if t.aborting {
		return fmt.Errorf("%s: %w while waiting for %s", t.label.Name, ErrAborted, what)
	}
	s.block(t, what, ready, bell, timeout)
	s.enlist(t)
	s.park(t)
	if t.timedOut {
		return &TimeoutError{Task: t.label.Name, What: what, After: timeout}
	}
	return nil
}

// block marks t blocked until ready() is true (asked again once bell
// rang, unless bell is nil) or timeout passes.
func (s *Scheduler) block(t *Task, what string, ready func() bool, bell *Bell, timeout time.Duration) {
	t.state = taskBlocked
	if t.waitPoint == "" || t.waitWhat() != what {
		// A lane that spins waits for the same thing again and again:
		// its point is built once.
		t.waitPoint = waitPrefix + what
	}
	t.point = t.waitPoint
	t.ready = ready
	t.bell = bell
	if bell != nil {
		bell.sched = s
	}
	t.deadline = -1
	if timeout > 0 {
		t.deadline = s.now + timeout
	}
	t.timedOut = false
}

// Sleep blocks the running task for d of virtual time.
func (s *Scheduler) Sleep(d time.Duration) {
	if d <= 0 {
		s.Yield("sleep 0")
		return
	}
	_ = s.Wait("sleep", never, d)
}

func never() bool { return false }

// After starts a task that runs fn once d of virtual time has passed, unless
// cancel is called first (the task then ends without running fn).
func (s *Scheduler) After(name string, d time.Duration, fn func()) (cancel func()) {
	cancelled := false
	var bell Bell
	s.Go(name, func() {
		err := s.WaitBell("timer "+name, func() bool { return cancelled }, &bell, d)
		if err != nil && !cancelled {
			fn()
		}
	})
	return func() { cancelled = true; bell.Ring() }
}

// Record appends an interaction by the running task to the trace.
func (s *Scheduler) Record(kind, detail string) {
	s.trace.Add(s.steps, s.curID(), kind, detail)
}

// Recordf appends an interaction by the running task to the trace, its
// detail being format applied to args, which are formatted only when the
// trace keeps its events (see [Trace.Addf] for the argument types).
func (s *Scheduler) Recordf(kind, format string, args ...any) {
	s.trace.Addf(s.steps, s.curID(), kind, format, args...)
}

// curID is the running task's ID, or -1 outside tasks.
func (s *Scheduler) curID() int {
	if s.cur != nil {
		return s.cur.id
	}
	return -1
}

// Run runs tasks until all have finished. It returns a [*DeadlockError] when
// tasks remain blocked with nothing to wake them, a [*PanicError] when a task
// panics, a [*StepLimitError] (which is [ErrStepLimit]), or an error naming a task that called
// runtime.Goexit (t.FailNow does). Whatever the outcome, no task is left running
// or parked: the goroutines that ran tasks end, or wait idle for the tasks
// of later runs (a bounded number; see [ReleaseWorkers]).
func (s *Scheduler) Run() error {
	if s.running {
		return errors.New("scheduler: Run called twice")
	}
	s.running = true
	defer func() { s.running = false }()
	s.drive()
	err := s.result
	s.abortAll()
	poolWorkers(s.idle)
	s.idle = nil
	return err
}

// drive resumes the tasks the scheduling steps choose until the run is
// over. It runs on a goroutine of its own, so that a task that calls
// runtime.Goexit (which leaves its worker through the driver) ends only the
// run, with an error.
func (s *Scheduler) drive() {
	done := make(chan struct{})
	finished := false
	go func() {
		defer close(done)
		for t := s.pick(); t != nil; t = s.next {
			s.next = nil
			if t.resume == nil {
				s.attach(t, s.worker())
			}
			t.resume()
		}
		finished = true
	}()
	<-done
	if !finished && s.result == nil {
		name := "a task"
		if s.cur != nil {
			name = "task " + s.cur.label.Name
		}
		s.result = fmt.Errorf("scheduler: %s called runtime.Goexit", name)
	}
}

// pick takes a scheduling step: it chooses the task that runs next and
// marks it running, or returns nil once the run is over, its outcome in
// s.result. It runs on the task that just parked or finished (on the
// driver at the start), and control passes to the task chosen through the
// driver, and not at all when the strategy picks the task that parked.
func (s *Scheduler) pick() *Task {
	s.cur = nil
	for {
		if s.failure != nil {
			s.result = s.failure
			return nil
		}
		if 2*s.finished > len(s.tasks) {
			s.reap()
		}
		if s.live() == 0 {
			return nil
		}
		if s.nready+s.blocked.len() == 0 {
			return nil // every task left is halted
		}
		n := s.collect()
		if n == 0 {
			if !s.fireTimers() {
				s.result = s.deadlock()
				return nil
			}
			continue
		}
		if s.maxSteps > 0 && s.steps >= s.maxSteps {
			s.result = s.stepLimit()
			return nil
		}
		s.choosing = true
		var t *Task
		if p, ok := s.strategy.(Picker); ok {
			t = s.runq.at(p.Pick(s.steps, n))
		} else {
			runnable := s.runnable()
			t = runnable[s.strategy.Next(s.steps, runnable)]
		}
		s.choosing = false
		for _, h := range s.haltedInNext {
			s.delist(h)
		}
		clear(s.haltedInNext)
		s.haltedInNext = s.haltedInNext[:0]
		if t.halted { // halted by the strategy itself
			continue
		}
		if w, ok := t.then.(Warmer); ok {
			s.warmth += w.Warm()
		}
		s.steps++
		if t.state == taskBlocked {
			s.delist(t)
		} // else it stays in runq while it runs
		t.woke = t.state == taskBlocked
		t.ran = s.steps
		s.trace.Add(s.steps, t.id, "run", t.point)
		t.state = taskRunning
		t.ready, t.bell = nil, nil
		s.cur = t
		return t
	}
}

// collect finds the runnable tasks and returns how many there are: the
// ready ones and the blocked ones whose condition holds (the loud ones
// asked in ID order; those whose condition fails with a bell fall silent,
// those whose condition holds with a bell turn steady; the steady ones
// taken without asking). The blocked ones that hold are the wakeable
// ones, in runq with the ready ones.
func (s *Scheduler) collect() int {
	keep := s.loud[:0]
	for _, b := range s.loud {
		holds := b.ready()
		switch {
		case b.bell == nil:
			keep = append(keep, b) // asked again at the next step
		case holds:
			b.loud = false // steady, until its bell rings
		default:
			b.loud = false // until its bell rings
		}
		if holds != b.wakeable {
			s.setWakeable(b, holds)
		}
	}
	clear(s.loud[len(keep):])
	s.loud = keep
	return s.runq.len()
}

// setWakeable puts t, a blocked task, in runq or takes it out.
func (s *Scheduler) setWakeable(t *Task, wakeable bool) {
	t.wakeable = wakeable
	if wakeable {
		s.runq.add(t)
	} else {
		s.runq.remove(t)
	}
	s.runVers++
}

// runnable is the runnable list that collect found, in ID order (built
// again only once runq changed since it was last built).
func (s *Scheduler) runnable() []*Task {
	if s.runListAt != s.runVers {
		old := len(s.runList)
		s.runList = s.runq.appendTo(s.runList[:0])
		if n := len(s.runList); n < old {
			clear(s.runList[n:old]) // drop the tasks no longer runnable
		}
		s.runListAt = s.runVers
	}
	return s.runList
}

// makeLoud puts t, a blocked task, in the loud list.
func (s *Scheduler) makeLoud(t *Task) {
	t.loud = true
	insert(&s.loud, t)
}

// unblock takes t, which leaves the blocked list, out of runq, the loud
// list and its bell's waiters.
func (s *Scheduler) unblock(t *Task) {
	if t.wakeable {
		s.setWakeable(t, false)
	}
	if t.loud {
		t.loud = false
		if i, found := IndexOf(s.loud, t.id); found && s.loud[i] == t {
			s.loud = removeAt(s.loud, i)
		}
	}
	if b := t.bell; b != nil {
		if i := slices.Index(b.waiters, t); i >= 0 {
			b.waiters = slices.Delete(b.waiters, i, i+1)
		}
	}
}

// enlist adds t, which just parked, to the list of its state (unless it is
// halted: it never runs again). A task that yields is still in the ready
// list when it was chosen from there.
func (s *Scheduler) enlist(t *Task) {
	if t.state == taskBlocked {
		s.unready(t)
		if !t.halted {
			s.blocked.add(t)
			s.makeLoud(t)
			if t.bell != nil {
				t.bell.waiters = append(t.bell.waiters, t)
			}
		}
		return
	}
	if !t.halted && !t.listed {
		s.list(t)
	}
}

// list puts t, a ready task, in runq.
func (s *Scheduler) list(t *Task) {
	s.runq.add(t)
	s.nready++
	s.runVers++
	t.listed = true
}

// delist removes t from the list it is in, if any.
func (s *Scheduler) delist(t *Task) {
	if t.listed {
		s.unready(t)
		return
	}
	if t.state == taskBlocked {
		if s.blocked.remove(t) {
			s.unblock(t)
		}
	}
}

// unready removes t from runq if it is there as a ready task.
func (s *Scheduler) unready(t *Task) {
	if !t.listed {
		return
	}
	t.listed = false
	s.runq.remove(t)
	s.nready--
	s.runVers++
}

// insert puts t in the ID-ordered list l.
func insert(l *[]*Task, t *Task) {
	i, _ := IndexOf(*l, t.id)
	*l = slices.Insert(*l, i, t)
}

// live is the number of tasks that have not finished.
func (s *Scheduler) live() int { return len(s.tasks) - s.finished }

// reap drops the finished tasks from s.tasks. The scheduler reaps once
// they are half of the list, not after every finish: a launch's lanes
// finish one by one, and visiting every task at each finish cost a cache
// miss per task.
func (s *Scheduler) reap() {
	s.finished = 0
	live := s.tasks[:0]
	for _, t := range s.tasks {
		if t.state != taskDone {
			live = append(live, t)
		}
	}
	for i := len(live); i < len(s.tasks); i++ {
		s.tasks[i] = nil
	}
	s.tasks = live
	floor := s.nextID // no task left
	if len(live) > 0 {
		floor = live[0].id
	}
	s.runq.trim(floor) // the sets' IDs below the oldest task's are free
	s.blocked.trim(floor)
}

// fireTimers advances the clock to the earliest deadline and times out the
// tasks waiting for it. It reports false when no task has a deadline.
func (s *Scheduler) fireTimers() bool {
	blocked := s.blocked.appendTo(s.scan[:0])
	defer func() {
		clear(blocked)
		s.scan = blocked[:0]
	}()
	next := time.Duration(-1)
	for _, t := range blocked {
		if t.deadline >= 0 && (next < 0 || t.deadline < next) {
			next = t.deadline
		}
	}
	if next < 0 {
		return false
	}
	if next > s.now {
		s.now = next
	}
	s.trace.Add(s.steps, -1, "clock", s.now.String())
	for _, t := range blocked {
		if t.deadline < 0 || t.deadline > s.now {
			continue
		}
		s.blocked.remove(t)
		s.unblock(t)
		t.state = taskReady
		t.timedOut = true
		s.enlist(t)
	}
	return true
}

func (s *Scheduler) deadlock() error {
	d := &DeadlockError{Now: s.now}
	for _, t := range s.tasks {
		if t.state != taskDone && !t.halted {
			d.Blocked = append(d.Blocked, BlockedTask{ID: t.id, Name: t.label.Name, What: t.waitWhat()})
		}
	}
	s.trace.Add(s.steps, -1, "deadlock", d.Error())
	return d
}

// abortAll unwinds every task still alive, halted ones included. Deferred
// calls run; in them Wait fails at once with [ErrAborted] and Yield returns,
// so no task goroutine is left behind. Tasks they start are unwound too.
func (s *Scheduler) abortAll() {
	for i := 0; i < len(s.tasks); i++ {
		t := s.tasks[i]
		if t.state == taskDone {
			continue
		}
		t.aborting = true
		if t.resume == nil {
			// Not started, or parked by YieldThen or WaitBellThen:
			// nothing to unwind.
			t.state, t.then, t.where = taskDone, nil, nil
			continue
		}
		s.cur = t
		// The task unwinds with runtime.Goexit, which its worker passes
		// on to the goroutine that resumed it: a goroutine of its own.
		done := make(chan struct{})
		go func() {
			defer close(done)
			t.resume()
		}()
		<-done
		s.cur = nil
	}
	for _, t := range s.blocked.appendTo(nil) {
		s.unblock(t)
	}
	s.tasks, s.loud = nil, nil
	s.runq, s.blocked, s.runList = taskSet{}, taskSet{}, nil
	s.nready = 0
	s.runVers++
	s.finished = 0
}

// SetWhere gives the running task a function that says where it is (the
// source line of a program it interprets, say), asked only when a report
// names the task: a [*StepLimitError] names where each task that ran in
// its last steps is.
func (s *Scheduler) SetWhere(where func() fmt.Stringer) {
	s.mustCurrent("SetWhere").where = where
}

// RecentSteps is how many of a run's last steps a [*StepLimitError] looks
// back on: the tasks that ran in them are the ones that kept it going.
const RecentSteps = 1000

// stepLimit reports the run that reached its step bound: the tasks that
// ran in its last RecentSteps steps and where they are, and the tasks that
// wait.
func (s *Scheduler) stepLimit() *StepLimitError {
	e := &StepLimitError{Steps: s.steps, Now: s.now, Live: s.live()}
	for _, t := range s.tasks {
		recent := t.ran > 0 && t.ran > s.steps-RecentSteps
		switch {
		case t.state == taskDone || t.halted:
		case t.state == taskBlocked && !recent:
			e.Blocked = append(e.Blocked, BlockedTask{ID: t.id, Name: t.label.Name, What: t.waitWhat()})
		case recent:
			r := RunningTask{ID: t.id, Name: t.label.Name, Point: t.point}
			if t.where != nil {
				r.Where = t.where()
			}
			e.Running = append(e.Running, r)
		}
	}
	return e
}

// StepLimitError reports a run that reached its bound of steps
// (Config.MaxSteps): a livelock, unless the bound was too small. It is
// [ErrStepLimit] for errors.Is.
type StepLimitError struct {
	Steps int64
	Now   time.Duration // virtual time of the report
	Live  int           // the tasks not done
	// Running is the tasks that ran in the run's last RecentSteps steps,
	// in ID order: those that kept it going.
	Running []RunningTask
	// Blocked is the tasks that wait and did not run in those steps, in
	// ID order.
	Blocked []BlockedTask
}

// RunningTask is one task of a [StepLimitError] that ran in its last steps.
type RunningTask struct {
	ID    int
	Name  string
	Point string       // the scheduling point it is parked at
	Where fmt.Stringer // where it is, when it said (see [Scheduler.SetWhere]); else nil
}

func (e *StepLimitError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v after %d steps (%d tasks live)", ErrStepLimit, e.Steps, e.Live)
	if len(e.Running) > 0 {
		fmt.Fprintf(&b, "\n  ran in the last %d steps:", RecentSteps)
	}
	for _, t := range e.Running {
		fmt.Fprintf(&b, "\n    task %d %s at %s", t.ID, t.Name, t.Point)
		if t.Where != nil {
			fmt.Fprintf(&b, ", %v", t.Where)
		}
	}
	for _, t := range e.Blocked {
		fmt.Fprintf(&b, "\n  task %d %s waits for %s", t.ID, t.Name, t.What)
	}
	return b.String()
}

// Is reports that e is [ErrStepLimit].
func (e *StepLimitError) Is(target error) bool { return target == ErrStepLimit }

// DeadlockError reports that every remaining task is blocked and nothing can
// wake any of them.
type DeadlockError struct {
	Now     time.Duration // virtual time of the report
	Blocked []BlockedTask // in task ID order
}

// BlockedTask is one entry of a [DeadlockError].
type BlockedTask struct {
	ID   int
	Name string
	What string
}

func (e *DeadlockError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "deadlock at virtual time %v: %d tasks blocked", e.Now, len(e.Blocked))
	blocked := append([]BlockedTask(nil), e.Blocked...)
	sort.Slice(blocked, func(i, j int) bool { return blocked[i].ID < blocked[j].ID })
	for _, t := range blocked {
		fmt.Fprintf(&b, "\n  task %d %s waits for %s", t.ID, t.Name, t.What)
	}
	return b.String()
}

// PanicError reports a task that panicked.
type PanicError struct {
	Task  string
	Value any
	Stack string
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("task %s panicked: %v\n%s", e.Task, e.Value, e.Stack)
}
