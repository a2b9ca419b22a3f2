package actor

import (
	"iter"

	"github.com/symmem/symmem/internal/pool"
)

// worker is a coroutine that runs tasks one after another: a run does not
// pay for a new goroutine per task, nor for growing its stack again (rank
// programs and actor message handlers run deep, and each step of growth
// copies the stack). Control passes between the goroutine that runs the
// scheduler's steps and the workers as between coroutines (iter.Pull):
// straight from one to the other, without waking the Go scheduler's other
// threads, which a channel hand-off between goroutines does at every step
// when the process has idle processors. Between the tasks of a run a
// worker waits in its scheduler's idle list; when the run ends it waits in
// a process-wide pool of at most maxPooledWorkers for the tasks of later
// runs ([ReleaseWorkers] ends them). Which worker runs a task has no effect
// on the run: the scheduler alone decides what runs.
type worker struct {
	job job // the task to start when resumed between tasks
	// resume runs the worker until its task parks or ends; stop ends a
	// worker that waits between tasks.
	resume func() (struct{}, bool)
	stop   func()
	// yield, inside the worker, passes control back to resume's caller;
	// it returns false when the worker is stopped.
	yield func(struct{}) bool
}

// job is a task for a worker, the function it runs and its scheduler.
type job struct {
	s  *Scheduler
	t  *Task
	fn Continuation
}

// newWorker returns a worker that has not started.
func newWorker() *worker {
	w := &worker{}
	w.resume, w.stop = iter.Pull(func(yield func(struct{}) bool) {
		w.yield = yield
		for {
			j := w.job
			// An idle worker must not keep its last run (scheduler,
			// devices, memory) reachable.
			w.job = job{}
			if j.s == nil || !j.s.body(w, j.t, j.fn) {
				return // no task, or an aborted one: the worker ends
			}
			if w.job.s != nil {
				continue // handed a parked task that holds no worker
			}
			if !yield(struct{}{}) {
				return
			}
		}
	})
	return w
}

// maxPooledWorkers bounds the idle workers kept between runs: enough for
// a few simulations of dozens of tasks at a time.
const maxPooledWorkers = 128

// workers holds the idle workers of finished runs, the one pooled last
// first (its stack is the most likely to be grown already).
var workers = pool.Bounded[*worker]{Max: maxPooledWorkers}

// takeWorker returns an idle worker or a new one.
func takeWorker() *worker {
	if w, ok := workers.Get(); ok {
		return w
	}
	return newWorker()
}

// poolWorkers pools the idle workers of a finished run, ending those
// beyond maxPooledWorkers.
func poolWorkers(ws []*worker) {
	for _, w := range ws {
		if !workers.Put(w) {
			w.stop()
		}
	}
}

// ReleaseWorkers ends the idle goroutines that finished runs keep for the
// tasks of later runs, for programs and tests that check that no goroutine
// outlives their simulations. Runs started later start new ones.
func ReleaseWorkers() {
	for _, w := range workers.Drain() {
		w.stop()
	}
}
