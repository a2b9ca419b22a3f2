package actor

import (
	"math/rand/v2"
	"slices"
)

// DefaultSpinLimit is how many times in a row [PCT] runs one task at the same
// scheduling point before it demotes the task as spinning.
const DefaultSpinLimit = 4

// PCT is the probabilistic concurrency testing strategy of Burckhardt et al.
// (ASPLOS 2010) with depth d: every task gets a random priority when it is
// first seen, d-1 priority change points are drawn over an estimate of the
// run's length, and the highest-priority runnable task always runs. At the
// i-th change point the task about to run drops to priority i, below every
// initial priority, so that some other task runs instead. A bug that needs
// d ordering constraints is found with probability at least 1/(n·k^(d-1))
// per run (n tasks, k steps), independently of how unlikely a uniform
// random walk is to hit it.
//
// Strict priorities would let a task that spins (a Yield in a loop, or a
// wait that is woken without making progress) run forever while the task it
// waits for never does. PCT therefore demotes a task that runs
// [DefaultSpinLimit] times in a row at the same scheduling point below every
// other task; spin loops cost a few steps, not the search.
//
// A PCT is deterministic given its seed and the sequence of runnable sets it
// is shown. It is not safe for concurrent use.
type PCT struct {
	rng     *rand.Rand
	depth   int
	steps   int64
	changes []changePoint // sorted by step
	next    int           // index of the next change point in changes

	prio    []int64 // by task ID; 0 means not seen yet
	maxSeen int     // the highest task ID seen, -1 at first
	// ranked holds the tasks seen, highest priority first (the lowest ID
	// first among equals); finished ones are dropped from time to time.
	ranked    []rankedTask
	compacted int    // len(ranked) after the last compaction
	lowest    int64  // the last demotion priority handed out
	last      int    // the task chosen last, -1 at first
	lastPt    string // the point it was parked at when chosen
	repeats   int    // consecutive choices of last at lastPt
	spin      int
}

type changePoint struct {
	step int64
	prio int64
}

// Priorities: initial ones are drawn from [initialBase, 2·initialBase); the
// i-th change point gives changeBase+i; demotions count down from
// changeBase. 0 marks a task not seen yet.
const (
	initialBase = int64(1) << 40
	changeBase  = int64(1) << 39
)

// NewPCT returns a PCT strategy of the given depth (at least 1; depth 1 has
// no change points: random priorities only) whose change points are drawn
// uniformly from the first steps scheduling steps (the estimated length of a
// run; values below 1 count as 1).
func NewPCT(seed uint64, depth int, steps int64) *PCT {
	depth = max(depth, 1)
	steps = max(steps, 1)
	p := &PCT{
		rng:     rand.New(rand.NewPCG(seed, seed^0x5ca1ab1e0ddba11)),
		depth:   depth,
		steps:   steps,
		lowest:  changeBase,
		last:    -1,
		maxSeen: -1,
		spin:    DefaultSpinLimit,
	}
	for i := 1; i < depth; i++ {
		p.changes = append(p.changes, changePoint{step: p.rng.Int64N(steps), prio: changeBase + int64(i)})
	}
	slices.SortStableFunc(p.changes, func(a, b changePoint) int {
		switch {
		case a.step < b.step:
			return -1
		case a.step > b.step:
			return 1
		}
		return 0
	})
	return p
}

// Depth is the strategy's depth.
func (p *PCT) Depth() int { return p.depth }

// Steps is the run length the change points were drawn over.
func (p *PCT) Steps() int64 { return p.steps }

// ChangePoints lists the steps at which priorities change, in order.
func (p *PCT) ChangePoints() []int64 {
	out := make([]int64, len(p.changes))
	for i, c := range p.changes {
		out[i] = c.step
	}
	return out
}

// Next runs the highest-priority runnable task, applying the change points
// due at step and demoting a spinning task first.
func (p *PCT) Next(step int64, runnable []*Task) int {
	p.seeNew(runnable)
	best := p.highest(runnable)
	for p.next < len(p.changes) && p.changes[p.next].step <= step {
		// The task about to run drops below every initial priority.
		p.setPrio(runnable[best], p.changes[p.next].prio)
		p.next++
		best = p.highest(runnable)
	}
	t := runnable[best]
	if t.id == p.last && t.point == p.lastPt {
		p.repeats++
	} else {
		p.last, p.lastPt, p.repeats = t.id, t.point, 1
	}
	if p.repeats >= p.spin && len(runnable) > 1 {
		p.lowest--
		p.setPrio(t, p.lowest)
		p.repeats = 0
		best = p.highest(runnable)
		t = runnable[best]
		p.last, p.lastPt, p.repeats = t.id, t.point, 1
	}
	return best
}

// seeNew gives the tasks of runnable seen for the first time ([Unseen])
// a random initial priority each, in ID order.
func (p *PCT) seeNew(runnable []*Task) {
	for _, t := range Unseen(runnable, p.maxSeen) {
		if t.id >= len(p.prio) {
			p.prio = append(p.prio, make([]int64, t.id+1-len(p.prio))...)
		}
		p.prio[t.id] = initialBase + p.rng.Int64N(initialBase)
		p.insert(t)
		p.maxSeen = t.id
	}
}

// rankedTask is a task of the ranking with its priority and ID, so that
// finding a place in the ranking reads the ranking alone, not the tasks.
type rankedTask struct {
	prio int64
	id   int
	t    *Task
}

// before reports whether a ranks before b: a higher priority, or the same
// and a lower ID.
func (a rankedTask) before(b rankedTask) bool {
	return a.prio > b.prio || (a.prio == b.prio && a.id < b.id)
}

// entry is t's entry in the ranking at its current priority.
func (p *PCT) entry(t *Task) rankedTask { return rankedTask{p.prio[t.id], t.id, t} }

// insert adds t to the ranking at its priority's place.
func (p *PCT) insert(t *Task) {
	e := p.entry(t)
	p.ranked = slices.Insert(p.ranked, p.place(e), e)
	if len(p.ranked) >= 2*p.compacted+64 {
		p.compact()
	}
}

// place is where e is or would be in the ranking.
func (p *PCT) place(e rankedTask) int {
	lo, hi := 0, len(p.ranked)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if p.ranked[m].before(e) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// setPrio changes t's priority and its place in the ranking.
func (p *PCT) setPrio(t *Task, prio int64) {
	if i := p.place(p.entry(t)); i < len(p.ranked) && p.ranked[i].t == t {
		p.ranked = removeAt(p.ranked, i)
	}
	p.prio[t.id] = prio
	p.insert(t)
}

// compact drops the tasks that will never run again from the ranking.
func (p *PCT) compact() {
	p.ranked = slices.DeleteFunc(p.ranked, func(e rankedTask) bool { return e.t.state == taskDone || e.t.halted })
	p.compacted = len(p.ranked)
}

// highest is the index in runnable (which is in ID order) of its task with
// the highest priority, the lowest ID among equals: the first task of the
// ranking that is runnable.
func (p *PCT) highest(runnable []*Task) int {
	for j := 0; j < len(p.ranked); j++ {
		t := p.ranked[j].t
		if t.state == taskDone || t.halted {
			p.ranked = removeAt(p.ranked, j) // it never runs again
			j--
			continue
		}
		if t.state == taskBlocked && !t.wakeable {
			continue // not in a scheduler's runnable list
		}
		if i, found := IndexOf(runnable, t.id); found && runnable[i] == t {
			return i
		}
	}
	return 0 // unreachable: every runnable task is ranked
}
