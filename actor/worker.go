package actor

import "github.com/symmem/symmem/internal/pool"

// worker is a goroutine that runs tasks one after another: a run does not
// pay for a new goroutine per task, nor for growing its stack again (rank
// programs and actor message handlers run deep, and each step of growth
// copies the stack). Between the tasks of a run a worker waits in its
// scheduler's idle list; when the run ends it waits in a process-wide pool
// of at most maxPooledWorkers for the tasks of later runs
// ([ReleaseWorkers] ends them). Which worker runs a task has no effect on
// the run: the scheduler alone decides what runs.
type worker struct {
	jobs   chan job  // the next task to run; closed to end the worker
	resume chan bool // the running task's resumptions: true aborts it
}

// job is a task for a worker, the function it runs and its scheduler.
type job struct {
	s  *Scheduler
	t  *Task
	fn func()
}

// serve runs the jobs handed to w until one is aborted (its task unwinds
// with runtime.Goexit, or was aborted before it started) or w is closed.
func serve(w *worker) {
	var j job
	for {
		var ok bool
		if j, ok = <-w.jobs; !ok {
			return
		}
		reusable := j.s.body(w, j.t, j.fn)
		// An idle worker must not keep its last run (scheduler, devices,
		// memory) reachable.
		j = job{}
		if !reusable {
			return
		}
	}
}

// maxPooledWorkers bounds the idle workers kept between runs: enough for
// a few simulations of dozens of tasks at a time.
const maxPooledWorkers = 128

// workers holds the idle workers of finished runs, the one pooled last
// first (its stack is the most likely to be grown already).
var workers = pool.Bounded[*worker]{Max: maxPooledWorkers}

// takeWorker returns an idle worker or starts a new one.
func takeWorker() *worker {
	if w, ok := workers.Get(); ok {
		return w
	}
	w := &worker{jobs: make(chan job, 1), resume: make(chan bool)}
	go serve(w)
	return w
}

// poolWorkers pools the idle workers of a finished run, ending those
// beyond maxPooledWorkers.
func poolWorkers(ws []*worker) {
	for _, w := range ws {
		if !workers.Put(w) {
			close(w.jobs)
		}
	}
}

// ReleaseWorkers ends the idle goroutines that finished runs keep for the
// tasks of later runs, for programs and tests that check that no goroutine
// outlives their simulations. Runs started later start new ones.
func ReleaseWorkers() {
	for _, w := range workers.Drain() {
		close(w.jobs)
	}
}
