package ptx

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// NumBarriers is the number of named barriers of a block (a CTA).
const NumBarriers = 16

// The forms of bar and barrier (inst.bar).
const (
	barSync uint8 = iota
	barArrive
	barRed
)

// bar.red's operations (inst.mode).
const (
	redPopc uint8 = iota + 1
	redAnd
	redOr
)

var redNames = map[string]uint8{"popc": redPopc, "and": redAnd, "or": redOr}

// ErrDeadlock is the error (wrapped) of threads waiting at barriers that
// can never complete: every thread of the block that has not exited waits
// at a barrier, and none of those barriers has the arrivals it needs.
var ErrDeadlock = errors.New("barrier deadlock")

// BarrierEnv is implemented by an [Env] that runs bar.arrive and barriers
// with a thread count. A thread that arrives at such a barrier calls
// Arrive; one that waits (bar.sync, bar.red) waits through WaitWarp until
// the barrier's phase completes and then calls Leave. For the memory
// model, arrival is a release and completion an acquire, at CTA scope, of
// the threads of the phase: a thread released from a phase learns what
// the phase's arrivals released, nothing more.
//
// A barrier without a thread count (every thread of the block) does not
// go through BarrierEnv: [Thread.Run] returns [AtBarrier] and the block
// resumes its threads with [Thread.Release], as for __syncthreads.
type BarrierEnv interface {
	WarpWaiter
	// Arrive tells that the thread arrived at phase phase of barrier id:
	// it releases what the thread did so far to the threads the phase
	// releases, and raises *released to a token standing for that (a
	// phase's waiters learn the largest token of its arrivals). It is a
	// scheduling point, after the release.
	Arrive(id int, phase uint64, released *uint64)
	// Leave tells that the thread was released by the completion of
	// phase phase of barrier id: it acquires what the threads arrived
	// (their indices in the block, the thread's own among them) released
	// at that phase; released is the largest of their tokens.
	Leave(id int, phase uint64, arrived []uint32, released uint64)
}

// barPhase is one phase of a named barrier: its arrivals, from the first
// until the count it expects is reached, which completes it; the
// barrier's next arrival starts its next phase.
type barPhase struct {
	id    int
	n     uint64 // the phase's number: 0 for the barrier's first
	all   bool   // no thread count: every thread that has not exited
	count int    // the thread count, a multiple of the warp size
	red   uint8  // bar.red's operation; 0 for bar.sync and bar.arrive
	line  int    // the line of the first arrival

	warps  []uint32 // per warp, the lanes that arrived
	full   []bool   // per warp, whether its arrival is complete
	nfull  int      // warps whose arrival is complete
	lanes  []uint32 // the threads that arrived, in order
	popc   int      // arrivals whose bar.red predicate was true
	done   bool
	result uint64 // bar.red's result, once done
	// released is the largest token the arrivals' Arrive returned.
	released uint64
}

// barrierPhase returns the current phase of barrier id, starting it when
// it has none.
func (mem *BlockMem) barrierPhase(id int) *barPhase {
	ph := mem.bars[id]
	if ph == nil {
		ph = &barPhase{id: id, n: mem.barPhases[id], warps: make([]uint32, len(mem.warps)), full: make([]bool, len(mem.warps))}
		mem.bars[id] = ph
	}
	return ph
}

// arrive records that the thread of dim arrived at barrier id by in, with
// a thread count (0: every thread of the block) and, for bar.red, its
// predicate. It returns the phase the thread arrived at, which its arrival
// may have completed.
func (mem *BlockMem) arrive(dim Dim, id int, in *inst, count int, pred bool) (*barPhase, error) {
	ph := mem.barrierPhase(id)
	all := count == 0
	red := uint8(0)
	if in.bar == barRed {
		red = in.mode
	}
	if len(ph.lanes) == 0 {
		ph.all, ph.count, ph.red, ph.line = all, count, red, in.line
	} else {
		switch {
		case ph.all != all || ph.count != count:
			return nil, fmt.Errorf("barrier %d expects %s (line %d) in this phase, but this arrival says %s",
				id, threadCount(ph.count), ph.line, threadCount(count))
		case (ph.red == 0) != (red == 0):
			return nil, fmt.Errorf("barrier %d: bar.red and bar.sync or bar.arrive in one phase (lines %d and %d), whose result PTX leaves unpredictable",
				id, ph.line, in.line)
		case ph.red != red:
			return nil, fmt.Errorf("barrier %d: two reductions in one phase (lines %d and %d)", id, ph.line, in.line)
		}
	}
	w, bit := dim.Tid/32, uint32(1)<<(dim.Tid%32)
	if ph.warps[w]&bit != 0 {
		return nil, fmt.Errorf("thread %d arrives at barrier %d again before its phase %d completed (a bar.arrive followed by another barrier instruction of the same barrier)",
			dim.Tid, id, ph.n)
	}
	ph.warps[w] |= bit
	ph.lanes = append(ph.lanes, dim.Tid)
	if pred {
		ph.popc++
	}
	mem.checkWarp(ph, int(w))
	return ph, nil
}

func threadCount(n int) string {
	if n == 0 {
		return "every thread of the block"
	}
	return strconv.Itoa(n) + " threads"
}

// checkWarp counts warp w's arrival at ph once every lane of it that has
// not exited arrived, and completes ph when that was the last it needed.
func (mem *BlockMem) checkWarp(ph *barPhase, w int) {
	if ph.done || ph.full[w] || ph.warps[w] == 0 {
		return
	}
	wp := mem.warps[w]
	for l := uint32(0); l < 32; l++ {
		if wp.lanes>>l&1 == 1 && ph.warps[w]>>l&1 == 0 && wp.state[l] != laneExited {
			return
		}
	}
	ph.full[w] = true
	ph.nfull++
	mem.checkPhase(ph)
}

// checkPhase completes ph when it has the arrivals it expects: with a
// thread count, that many threads' worth of warps; without, every thread
// that has not exited.
func (mem *BlockMem) checkPhase(ph *barPhase) {
	if ph.done || len(ph.lanes) == 0 {
		return
	}
	if ph.all && len(ph.lanes) < mem.live || !ph.all && 32*ph.nfull < ph.count {
		return
	}
	ph.done = true
	switch ph.red {
	case redPopc:
		ph.result = uint64(ph.popc)
	case redAnd:
		ph.result = b2u(ph.popc == len(ph.lanes))
	case redOr:
		ph.result = b2u(ph.popc > 0)
	}
	mem.bars[ph.id] = nil
	mem.barPhases[ph.id] = ph.n + 1
}

// exited updates the barriers after the thread of dim exited: its warp's
// arrival may now be complete, and a barrier without a thread count no
// longer waits for it.
func (mem *BlockMem) exited(dim Dim) {
	mem.live--
	for _, ph := range mem.bars {
		if ph == nil {
			continue
		}
		if ph.all {
			mem.checkPhase(ph)
		} else {
			mem.checkWarp(ph, int(dim.Tid/32))
		}
	}
}

// stuck reports whether no thread of the block can run: each has exited
// or waits at a barrier.
func (mem *BlockMem) stuck() bool { return mem.running == 0 }

// Deadlock returns an error wrapping [ErrDeadlock] that says which
// threads of the block wait at which line and how far the barriers they
// wait at are: the error of a block none of whose threads can run while
// none of those barriers completed.
func (mem *BlockMem) Deadlock() error {
	type wait struct {
		from, to uint32
		line     int
	}
	var waits []wait
	for wi, w := range mem.warps {
		for l := uint32(0); l < 32; l++ {
			if w.lanes>>l&1 == 0 || w.state[l] != laneAtBarrier {
				continue
			}
			tid := uint32(wi)*32 + l
			if n := len(waits); n > 0 && waits[n-1].to+1 == tid && waits[n-1].line == w.barLine[l] {
				waits[n-1].to = tid
			} else {
				waits = append(waits, wait{tid, tid, w.barLine[l]})
			}
		}
	}
	var b strings.Builder
	for i, wt := range waits {
		if i > 0 {
			b.WriteString("; ")
		}
		if wt.from == wt.to {
			fmt.Fprintf(&b, "thread %d", wt.from)
		} else {
			fmt.Fprintf(&b, "threads %d-%d", wt.from, wt.to)
		}
		fmt.Fprintf(&b, " at line %d", wt.line)
	}
	b.WriteString(" wait, and no thread can arrive:")
	for id, ph := range mem.bars {
		if ph != nil && len(ph.lanes) > 0 {
			fmt.Fprintf(&b, " barrier %d has %s", id, ph.progress())
		}
	}
	return fmt.Errorf("%w: %s", ErrDeadlock, b.String())
}

// progress says how far ph is: "32 of 64 threads (phase 0)".
func (ph *barPhase) progress() string {
	if ph.all {
		return fmt.Sprintf("%d arrivals of every thread that has not exited (phase %d);", len(ph.lanes), ph.n)
	}
	return fmt.Sprintf("%d of %d threads (phase %d);", 32*ph.nfull, ph.count, ph.n)
}

// barrier executes bar or barrier. A barrier without a thread count that
// the thread waits at stops the thread (stop is true): its block resumes
// it. Any other runs here, through the [BarrierEnv].
func (t *Thread) barrier(f *frame, in *inst) (stop bool, err error) {
	at := 0
	if in.bar == barRed {
		at = 1 // after the destination
	}
	id := t.value(f, &in.ops[at], tU32)
	if id >= NumBarriers {
		return false, fmt.Errorf("barrier %d: a block has barriers 0 to %d", id, NumBarriers-1)
	}
	count := 0
	if len(in.ops) > at+1+boolInt(in.bar == barRed) {
		c := t.value(f, &in.ops[at+1], tU32)
		block := 32 * uint64(len(t.mem.warps))
		switch {
		case c == 0 || c%32 != 0:
			return false, fmt.Errorf("thread count %d is not a positive multiple of the warp size", c)
		case c > block:
			return false, fmt.Errorf("thread count %d exceeds the block's %d threads (%d warps)", c, t.dim.Ntid, len(t.mem.warps))
		}
		count = int(c)
	}
	env, _ := t.env.(BarrierEnv)
	if count > 0 && env == nil {
		return false, fmt.Errorf("%s with a thread count needs an environment that lets threads wait for one another (BarrierEnv)", in.text)
	}
	pred := in.bar == barRed && t.value(f, &in.ops[len(in.ops)-1], tPred) != 0
	ph, err := t.mem.arrive(t.dim, int(id), in, count, pred)
	if err != nil {
		return false, err
	}
	t.bar, t.barInst = ph, in
	if count == 0 {
		t.mem.leave(t.dim, laneAtBarrier, in.line)
		return true, nil
	}
	env.Arrive(ph.id, ph.n, &ph.released)
	if in.bar == barArrive {
		return false, nil
	}
	if !ph.done {
		t.mem.leave(t.dim, laneAtBarrier, in.line)
		what := fmt.Sprintf("barrier %d at line %d: %s", id, in.line, ph.progress())
		werr := env.WaitWarp(what, func() bool { return ph.done || t.mem.failure != nil || t.mem.stuck() })
		t.mem.leave(t.dim, laneRunning, 0)
		if !ph.done {
			switch {
			case t.mem.failure != nil:
				return false, errAbandoned
			case werr != nil:
				return false, werr
			}
			return false, t.mem.Deadlock()
		}
	}
	env.Leave(ph.id, ph.n, ph.lanes, ph.released)
	t.leaveBarrier()
	return false, nil
}

// errAbandoned is the error of a thread that stopped waiting at a barrier
// because another thread of its block failed: Run returns that thread's
// error instead.
var errAbandoned = errors.New("abandoned")

// leaveBarrier ends the thread's wait at its barrier: bar.red writes the
// phase's result.
func (t *Thread) leaveBarrier() {
	if in := t.barInst; in.bar == barRed {
		t.frames[len(t.frames)-1].regs[in.ops[0].reg] = t.bar.result
	}
	t.bar, t.barInst = nil, nil
}

// decodeBar checks the form of a bar or barrier instruction: sync, arrive
// or red with its operation, and the types they take.
func decodeBar(in *inst, types []typ, sawSync bool) error {
	switch {
	case in.bar == barSync && !sawSync:
		return unsupported(in)
	case in.bar == barRed && in.mode == 0:
		return fmt.Errorf("line %d: %s: bar.red needs an operation (popc, and or or)", in.line, in.text)
	case in.bar == barRed && in.mode == redPopc:
		if len(types) != 1 || types[0] != tU32 {
			return fmt.Errorf("line %d: %s: bar.red.popc is .u32", in.line, in.text)
		}
	case in.bar == barRed:
		if len(types) != 1 || types[0] != tPred {
			return fmt.Errorf("line %d: %s: bar.red.and and bar.red.or are .pred", in.line, in.text)
		}
	case len(types) > 0:
		return unsupported(in)
	}
	return nil
}

// checkBarOperands checks the operands of bar and barrier: "a{, b}" for
// sync, "a, b" for arrive, "d, a{, b}, {!}c" for red; an immediate barrier
// id must be 0 to 15 and an immediate thread count a positive multiple of
// the warp size that a block can hold.
func checkBarOperands(in *inst) error {
	ops := in.ops
	if in.bar == barRed {
		if len(ops) != 3 && len(ops) != 4 {
			return fmt.Errorf("line %d: %s: want d, a{, b}, {!}c", in.line, in.text)
		}
		if ops[0].kind != oReg || ops[0].not {
			return fmt.Errorf("line %d: %s: the destination is not a register", in.line, in.text)
		}
		c := ops[len(ops)-1]
		if c.kind != oReg && c.kind != oImm {
			return fmt.Errorf("line %d: %s: the predicate operand is neither a register nor an immediate", in.line, in.text)
		}
		ops = ops[1 : len(ops)-1]
	} else if len(ops) != 2 && (in.bar == barArrive || len(ops) != 1) {
		if in.bar == barArrive {
			return fmt.Errorf("line %d: %s: want a, b (bar.arrive needs a thread count)", in.line, in.text)
		}
		return fmt.Errorf("line %d: %s: want a{, b}", in.line, in.text)
	}
	for i, o := range ops {
		what := "barrier id"
		if i == 1 {
			what = "thread count"
		}
		if o.kind != oReg && o.kind != oImm || o.not {
			return fmt.Errorf("line %d: %s: the %s is neither a register nor an immediate", in.line, in.text, what)
		}
		if o.kind != oImm {
			continue
		}
		switch v := o.imm; {
		case i == 0 && v >= NumBarriers:
			return fmt.Errorf("line %d: %s: barrier %d: a block has barriers 0 to %d", in.line, in.text, v, NumBarriers-1)
		case i == 1 && (v == 0 || v%32 != 0 || v > maxBlockThreads):
			return fmt.Errorf("line %d: %s: thread count %d is not a positive multiple of the warp size of at most %d", in.line, in.text, v, maxBlockThreads)
		}
	}
	return nil
}

// maxBlockThreads is the most threads a block (CTA) has.
const maxBlockThreads = 1024
