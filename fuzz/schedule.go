package fuzz

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/internal/pool"
)

// Decision is one scheduling choice that differs from the default policy
// (keep running the task that ran last, else the runnable task with the
// lowest ID): at step Step, task Task ran for the Run-th time (counting
// from 0).
type Decision struct {
	Step int64
	Task int
	Run  int
}

// Schedule is a run's decisions that differ from the default policy, in
// step order. Following it with a [Replay] strategy repeats the run.
type Schedule []Decision

// String is the text form "step:task.run ...", which ParseSchedule reads
// back.
func (s Schedule) String() string {
	var b strings.Builder
	for i, d := range s {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d:%d.%d", d.Step, d.Task, d.Run)
	}
	return b.String()
}

// ParseSchedule reads the text form of a schedule.
func ParseSchedule(s string) (Schedule, error) {
	var out Schedule
	for _, f := range strings.Fields(s) {
		step, rest, ok := strings.Cut(f, ":")
		task, run, ok2 := strings.Cut(rest, ".")
		if !ok || !ok2 {
			return nil, fmt.Errorf("schedule entry %q: want step:task.run", f)
		}
		var d Decision
		var err error
		if d.Step, err = strconv.ParseInt(step, 10, 64); err != nil || d.Step < 0 {
			return nil, fmt.Errorf("schedule entry %q: bad step", f)
		}
		if d.Task, err = strconv.Atoi(task); err != nil || d.Task < 0 {
			return nil, fmt.Errorf("schedule entry %q: bad task", f)
		}
		if d.Run, err = strconv.Atoi(run); err != nil || d.Run < 0 {
			return nil, fmt.Errorf("schedule entry %q: bad run count", f)
		}
		if n := len(out); n > 0 && out[n-1].Step >= d.Step {
			return nil, fmt.Errorf("schedule entry %q: steps must increase", f)
		}
		out = append(out, d)
	}
	return out, nil
}

// runCounts counts how many times each task (by ID) has run.
type runCounts []int

func (c *runCounts) of(id int) int {
	if id < len(*c) {
		return (*c)[id]
	}
	return 0
}

func (c *runCounts) ran(id int) {
	for len(*c) <= id {
		*c = append(*c, 0)
	}
	(*c)[id]++
}

// defaultChoice is the default policy: the task that ran last if it is
// runnable (no preemption), else the runnable task with the lowest ID.
// hint is where last stood in the list of the step before, looked at
// first: a task that yields keeps its place in the list of the next step
// unless a task before it came or went.
func defaultChoice(last int, runnable []*actor.Task, hint int) int {
	if hint >= 0 && hint < len(runnable) && runnable[hint].ID() == last {
		return hint
	}
	if i, found := actor.IndexOf(runnable, last); found {
		return i
	}
	return 0
}

// Recorder wraps a strategy and keeps every choice that differs from the
// default policy of [Replay] (the task that ran last while it is runnable,
// else the runnable task with the lowest ID): the [Schedule] that replays
// the run.
type Recorder struct {
	inner  actor.Strategy
	last   int
	lastAt int // last's index in the runnable list it was chosen from
	runs   runCounts
	sched  Schedule
}

// NewRecorder returns a recorder of the choices of inner.
func NewRecorder(inner actor.Strategy) *Recorder {
	return &Recorder{inner: inner, last: -1, lastAt: -1}
}

// Next asks the inner strategy and records its choice when it is not the
// default one.
func (r *Recorder) Next(step int64, runnable []*actor.Task) int {
	i := r.inner.Next(step, runnable)
	t := runnable[i]
	if t.ID() != r.last && i != defaultChoice(r.last, runnable, r.lastAt) {
		r.sched = append(r.sched, Decision{Step: step, Task: t.ID(), Run: r.runs.of(t.ID())})
	}
	r.last, r.lastAt = t.ID(), i
	r.runs.ran(t.ID())
	return i
}

// Schedule returns the decisions recorded so far.
func (r *Recorder) Schedule() Schedule { return slices.Clone(r.sched) }

// recordBuffers holds the decision buffers of finished runs for the
// recorders of later ones: a run records up to hundreds of thousands of
// decisions, which a buffer grown from empty pays in copies every run.
var recordBuffers = pool.Bounded[Schedule]{Max: 16}

// newPooledRecorder is NewRecorder with a buffer of an earlier run, which
// the run hands back with done.
func newPooledRecorder(inner actor.Strategy) *Recorder {
	r := NewRecorder(inner)
	if b, ok := recordBuffers.Get(); ok {
		r.sched = b[:0]
	}
	return r
}

// done returns the decisions recorded (nil: none) and hands the
// recorder's buffer on to a later run's; r records no more.
func (r *Recorder) done() Schedule {
	var out Schedule
	if len(r.sched) > 0 {
		out = r.Schedule()
	}
	if cap(r.sched) > 0 {
		recordBuffers.Put(r.sched[:0])
	}
	r.sched = nil
	return out
}

// replayWindow is how many pending decisions a diverged [Replay] considers.
const replayWindow = 1 << 30

// Replay is a strategy that follows a [Schedule]. While the run matches the
// recording it takes each decision at its step, so a whole schedule repeats
// its run exactly. Once a decision cannot be taken at its step (its task is
// not runnable there, or not due for the recorded run), the run has
// diverged, as it does when a shrink drops decisions: from then on each
// step takes the first of the next few pending decisions whose task is
// runnable and has not yet run past its recorded run (decisions whose task
// has are dropped), and otherwise the default policy: the task that ran last
// if runnable, else the runnable task with the lowest ID.
type Replay struct {
	pending  Schedule
	diverged bool
	last     int
	lastAt   int // last's index in the runnable list it was chosen from
	runs     runCounts
}

// NewReplay returns a strategy following s (in step order, as recorded).
func NewReplay(s Schedule) *Replay {
	return &Replay{pending: slices.Clone(s), last: -1, lastAt: -1}
}

// Diverged reports whether the run has left the recorded schedule.
func (p *Replay) Diverged() bool { return p.diverged }

// Next follows the schedule, or the default policy.
func (p *Replay) Next(step int64, runnable []*actor.Task) int {
	choice := defaultChoice(p.last, runnable, p.lastAt)
	if !p.diverged && len(p.pending) > 0 {
		switch d := p.pending[0]; {
		case d.Step > step:
		case d.Step == step && p.due(runnable, d, true) >= 0:
			choice = p.due(runnable, d, true)
			p.pending = p.pending[1:]
		default:
			p.diverged = true
		}
	}
	if p.diverged {
		p.pending = slices.DeleteFunc(p.pending, func(d Decision) bool { return p.runs.of(d.Task) > d.Run })
		for k := range min(replayWindow, len(p.pending)) {
			if i := p.due(runnable, p.pending[k], false); i >= 0 {
				choice = i
				p.pending = slices.Delete(p.pending, k, k+1)
				break
			}
		}
	}
	id := runnable[choice].ID()
	p.last, p.lastAt = id, choice
	p.runs.ran(id)
	return choice
}

// due returns the index of d's task in runnable if it is there and due for
// d's run (exactly, or when the task is behind: it catches up), else -1.
func (p *Replay) due(runnable []*actor.Task, d Decision, exact bool) int {
	for i, t := range runnable {
		if t.ID() == d.Task {
			if n := p.runs.of(d.Task); n == d.Run || (!exact && n < d.Run) {
				return i
			}
			return -1
		}
	}
	return -1
}
