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
// Arrive, then waits through WaitWarp until its warp arrived (every lane
// of it that has not exited did) and, for bar.sync and bar.red, until the
// barrier's phase completed, when it calls Leave. For the memory model,
// arrival is a release and completion an acquire, at CTA scope, of the
// threads of the phase: a thread released from a phase learns what the
// phase's arrivals released, nothing more.
//
// bar.warp.sync of warp w arrives and leaves as barrier NumBarriers+w,
// its phase the lanes of its member mask; barrier.cluster as barrier
// ClusterBarrierID, its phase every thread of the block that has not
// exited.
//
// A barrier without a thread count (every thread of the block) does not
// go through BarrierEnv: [Thread.Run] returns [AtBarrier] and the block
// resumes its threads with [Thread.Release], as for __syncthreads.
type BarrierEnv interface {
	WarpWaiter
	// Arrive tells that the thread makes arrival n at barrier id (0 for
	// its first there): it releases what the thread did so far to the
	// threads the arrival's phase will release, and raises *released to
	// a token standing for that (a phase's waiters learn the largest
	// token of its arrivals). It is a scheduling point, after the
	// release.
	Arrive(id int, n uint64, released *uint64)
	// Leave tells that the thread was released by the completion of a
	// phase of barrier id: it acquires what the phase's arrivals (its own
	// among them) released; released is the largest of their tokens.
	Leave(id int, arrivals []Arrival, released uint64)
}

// Arrival names one arrival at a barrier: the thread (its index in the
// block) and which of its arrivals there it is (0 for its first).
type Arrival struct {
	Thread uint32
	N      uint64
}

// barState is one named barrier of a block.
type barState struct {
	id   int
	cur  *barPhase // the phase warps arrive at next; nil until one does
	next uint64    // the number of the next phase
	pend []barWarp // per warp, the lanes that arrived before all did
	seq  []uint64  // per thread, its arrivals so far
}

// barWarp is the arrival of one warp at a barrier while its lanes
// arrive: the warp arrives once every lane of it that has not exited did.
type barWarp struct {
	lanes    uint32 // the lanes that arrived
	arrive   uint32 // those of them that do not wait for the phase (bar.arrive)
	count    int    // the thread count of the first lane (0: every thread)
	red      uint8  // its bar.red operation; 0 for none
	in       *inst  // its instruction
	popc     int    // lanes whose bar.red predicate was true
	released uint64 // the largest token of the lanes' arrivals
}

// barPhase is one phase of a named barrier: the warps that arrive at it,
// from the first until the count it expects is reached, which completes
// it.
type barPhase struct {
	n uint64 // 0 for the barrier's first phase
	// count is the thread count, a multiple of the warp size; 0 for
	// every thread of the block that has not exited.
	count  int
	red    uint8  // bar.red's operation; 0 for bar.sync and bar.arrive
	line   int    // the line of the first arrival
	warps  []bool // the warps that arrived
	nwarps int

	arrivals []Arrival // the threads of the warps that arrived, in order
	popc     int       // arrivals whose bar.red predicate was true
	done     bool
	result   uint64 // bar.red's result, once done
	released uint64 // the largest token of the arrivals
}

// bar returns the state of barrier id, made on first use.
func (mem *BlockMem) bar(id int) *barState {
	b := mem.bars[id]
	if b == nil {
		b = &barState{id: id, pend: make([]barWarp, len(mem.warps)), seq: make([]uint64, 32*len(mem.warps))}
		mem.bars[id] = b
	}
	return b
}

// compatible says why an arrival with count and red cannot join one made
// with count0 and red0 at line0 ("" when it can).
func compatible(id, count0 int, red0 uint8, line0, count int, red uint8, line int) string {
	switch {
	case count0 != count:
		return fmt.Sprintf("barrier %d expects %s (line %d) in this phase, but an arrival at line %d says %s",
			id, threadCount(count0), line0, line, threadCount(count))
	case (red0 == 0) != (red == 0):
		return fmt.Sprintf("barrier %d: bar.red and bar.sync or bar.arrive in one phase (lines %d and %d), whose result PTX leaves unpredictable",
			id, line0, line)
	case red0 != red:
		return fmt.Sprintf("barrier %d: two reductions in one phase (lines %d and %d)", id, line0, line)
	}
	return ""
}

func threadCount(n int) string {
	if n == 0 {
		return "every thread of the block"
	}
	return strconv.Itoa(n) + " threads"
}

// arrive records that the thread of dim arrives at barrier id by in, with
// a thread count (0: every thread of the block) and, for bar.red, its
// predicate; its warp arrives later (checkWarp). It returns the number of
// the thread's arrival there.
func (mem *BlockMem) arrive(dim Dim, id int, in *inst, count int, pred bool) (uint64, error) {
	b := mem.bar(id)
	red := uint8(0)
	if in.bar == barRed {
		red = in.mode
	}
	w, bit := dim.Tid/32, uint32(1)<<(dim.Tid%32)
	p := &b.pend[w]
	if p.lanes == 0 {
		*p = barWarp{count: count, red: red, in: in}
	} else if why := compatible(id, p.count, p.red, p.in.line, count, red, in.line); why != "" {
		return 0, errors.New(why)
	} else if in != p.in && (in.aligned || p.in.aligned) {
		return 0, fmt.Errorf("barrier %d: lanes of warp %d arrive at lines %d and %d, but an .aligned barrier (bar, or barrier with .aligned) must be executed by every lane of the warp at the same instruction",
			id, w, p.in.line, in.line)
	}
	p.lanes |= bit
	if in.bar == barArrive {
		p.arrive |= bit
	}
	if pred {
		p.popc++
	}
	n := b.seq[dim.Tid]
	b.seq[dim.Tid]++
	wp := mem.warps[w]
	wp.barAt[dim.Tid%32] = nil
	wp.barN[dim.Tid%32] = n
	return n, nil
}

// checkWarp makes warp w arrive at barrier b's current phase once every
// lane of it that has not exited arrived: the lanes of bar.arrive run on,
// and the phase completes if that was the arrival it needed.
func (mem *BlockMem) checkWarp(b *barState, w int) error {
	p := &b.pend[w]
	wp := mem.warps[w]
	if p.lanes == 0 {
		return nil
	}
	if wp.lanes&^p.lanes&^wp.exited != 0 {
		return nil // a lane that has not exited has yet to arrive
	}
	ph := b.cur
	if ph == nil {
		ph = &barPhase{n: b.next, count: p.count, red: p.red, line: p.in.line, warps: make([]bool, len(mem.warps))}
		b.cur, b.next = ph, b.next+1
	} else if why := compatible(b.id, ph.count, ph.red, ph.line, p.count, p.red, p.in.line); why != "" {
		return errors.New(why)
	}
	if ph.warps[w] {
		return fmt.Errorf("warp %d arrives at barrier %d again (line %d) before its phase %d completed (a bar.arrive followed by another barrier instruction of the same barrier)",
			w, b.id, p.in.line, ph.n)
	}
	ph.warps[w] = true
	ph.nwarps++
	ph.popc += p.popc
	ph.released = max(ph.released, p.released)
	for l := uint32(0); l < 32; l++ {
		if p.lanes>>l&1 == 0 {
			continue
		}
		tid := uint32(w)*32 + l
		ph.arrivals = append(ph.arrivals, Arrival{Thread: tid, N: wp.barN[l]})
		wp.barAt[l] = ph
		if p.arrive>>l&1 == 1 && wp.state[l] == laneAtBarrier {
			mem.leave(Dim{Tid: tid}, laneRunning, 0)
		}
	}
	*p = barWarp{}
	mem.checkPhase(b)
	return nil
}

// checkPhase completes b's current phase when it has the arrivals it
// expects: with a thread count, that many threads' worth of warps;
// without, every thread that has not exited. The threads that wait there
// can run again.
func (mem *BlockMem) checkPhase(b *barState) {
	ph := b.cur
	if ph == nil || ph.count == 0 && len(ph.arrivals) < mem.live || ph.count > 0 && 32*ph.nwarps < ph.count {
		return
	}
	ph.done = true
	b.cur = nil
	for _, a := range ph.arrivals {
		if w := mem.warps[a.Thread/32]; w.state[a.Thread%32] == laneAtBarrier && w.barAt[a.Thread%32] == ph {
			mem.leave(Dim{Tid: a.Thread}, laneRunning, 0)
		}
	}
	switch ph.red {
	case redPopc:
		ph.result = uint64(ph.popc)
	case redAnd:
		ph.result = b2u(ph.popc == len(ph.arrivals))
	case redOr:
		ph.result = b2u(ph.popc > 0)
	}
}

// exited updates the barriers after the thread of dim exited: its warp's
// arrival may now be complete, and a barrier without a thread count no
// longer waits for it. An error is the block's failure.
func (mem *BlockMem) exited(dim Dim) {
	mem.live--
	mem.clusterRelease()
	for _, b := range mem.bars {
		if b == nil {
			continue
		}
		if err := mem.checkWarp(b, int(dim.Tid/32)); err != nil && mem.failure == nil {
			mem.failure = fmt.Errorf("ptx: thread %d exited: %w", dim.Tid, err)
		}
		if b.cur != nil && b.cur.count == 0 {
			mem.checkPhase(b)
		}
	}
}

// Err returns the first error of a thread of the block, nil when none
// failed.
func (mem *BlockMem) Err() error { return mem.failure }

// stuck reports whether no thread of the block can run: each has exited,
// failed or waits at a barrier.
func (mem *BlockMem) stuck() bool { return mem.running == 0 }

// Deadlock returns an error wrapping [ErrDeadlock] that says which
// threads of the block wait at which line and how far the barriers they
// wait at are: the error of a block none of whose threads can run while
// none of those barriers completed.
func (mem *BlockMem) Deadlock() error {
	type wait struct {
		from, to uint32
		id, line int
	}
	var waits []wait
	for wi, w := range mem.warps {
		for l := uint32(0); l < 32; l++ {
			if w.lanes>>l&1 == 0 || w.state[l] != laneAtBarrier {
				continue
			}
			tid := uint32(wi)*32 + l
			if n := len(waits); n > 0 && waits[n-1].to+1 == tid && waits[n-1].id == w.barID[l] && waits[n-1].line == w.barLine[l] {
				waits[n-1].to = tid
			} else {
				waits = append(waits, wait{tid, tid, w.barID[l], w.barLine[l]})
			}
		}
	}
	var s strings.Builder
	for i, wt := range waits {
		if i > 0 {
			s.WriteString("; ")
		}
		if wt.from == wt.to {
			fmt.Fprintf(&s, "thread %d waits", wt.from)
		} else {
			fmt.Fprintf(&s, "threads %d-%d wait", wt.from, wt.to)
		}
		fmt.Fprintf(&s, " at %s (line %d)", barrierName(wt.id), wt.line)
	}
	s.WriteString(", and no thread can arrive:")
	for _, b := range mem.bars {
		if b != nil {
			if p := b.progress(); p != "" {
				fmt.Fprintf(&s, " barrier %d has %s;", b.id, p)
			}
		}
	}
	return fmt.Errorf("%w: %s", ErrDeadlock, s.String())
}

// progress says how far b's current phase is ("32 of 64 threads (phase
// 0)", with the warps still arriving), "" when nothing arrived.
func (b *barState) progress() string {
	var s strings.Builder
	if ph := b.cur; ph != nil {
		if ph.count == 0 {
			fmt.Fprintf(&s, "%d arrivals of every thread that has not exited (phase %d)", len(ph.arrivals), ph.n)
		} else {
			fmt.Fprintf(&s, "%d of %d threads (phase %d)", 32*ph.nwarps, ph.count, ph.n)
		}
	}
	for w, p := range b.pend {
		if p.lanes != 0 {
			if s.Len() > 0 {
				s.WriteString(", ")
			}
			fmt.Fprintf(&s, "lanes %#08x of warp %d arriving", p.lanes, w)
		}
	}
	return s.String()
}

// barrier executes bar or barrier. A barrier without a thread count
// stops the thread (stop is true): its block resumes it. Any other runs
// here, through the [BarrierEnv].
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
		switch {
		case c == 0 || c%32 != 0:
			return false, fmt.Errorf("thread count %d is not a positive multiple of the warp size", c)
		case c > 32*uint64(len(t.mem.warps)):
			return false, fmt.Errorf("thread count %d exceeds the block's %d threads (%d warps)", c, t.dim.Ntid, len(t.mem.warps))
		}
		count = int(c)
	}
	env, _ := t.env.(BarrierEnv)
	if count > 0 && env == nil {
		return false, fmt.Errorf("%s with a thread count needs an environment that lets threads wait for one another (BarrierEnv)", in.text)
	}
	pred := in.bar == barRed && t.value(f, &in.ops[len(in.ops)-1], tPred) != 0
	n, err := t.mem.arrive(t.dim, int(id), in, count, pred)
	if err != nil {
		return false, err
	}
	b := t.mem.bars[id]
	w, lane := t.dim.Tid/32, t.dim.Tid%32
	wp := t.mem.warps[w]
	t.barInst, wp.barID[lane] = in, int(id)
	if count > 0 {
		env.Arrive(int(id), n, &b.pend[w].released)
	}
	t.mem.leave(t.dim, laneAtBarrier, in.line)
	if err := t.mem.checkWarp(b, int(w)); err != nil {
		return false, err
	}
	if count == 0 {
		return true, nil
	}
	ready := func() bool {
		ph := wp.barAt[lane]
		return ph != nil && (in.bar == barArrive || ph.done)
	}
	if !ready() {
		what := fmt.Sprintf("barrier %d at line %d: %s", id, in.line, b.progress())
		werr := env.WaitWarp(what, func() bool { return ready() || t.mem.failure != nil || t.mem.stuck() })
		if !ready() {
			switch {
			case t.mem.failure != nil:
				return false, errAbandoned
			case werr != nil:
				return false, werr
			}
			return false, t.mem.Deadlock()
		}
	}
	t.mem.leave(t.dim, laneRunning, 0)
	if in.bar != barArrive {
		ph := wp.barAt[lane]
		env.Leave(int(id), ph.arrivals, ph.released)
		t.leaveBarrier(ph)
	}
	return false, nil
}

// errAbandoned is the error of a thread that stopped waiting at a barrier
// because another thread of its block failed: Run returns that thread's
// error instead.
var errAbandoned = errors.New("abandoned")

// leaveBarrier ends the thread's wait at phase ph: bar.red writes the
// phase's result.
func (t *Thread) leaveBarrier(ph *barPhase) {
	if in := t.barInst; in.bar == barRed {
		t.frames[len(t.frames)-1].regs[in.ops[0].reg] = ph.result
	}
	t.barInst = nil
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

// barrierName names barrier id in messages: "barrier 3", or "the cluster
// barrier".
func barrierName(id int) string {
	if id == ClusterBarrierID {
		return "the cluster barrier"
	}
	return fmt.Sprintf("barrier %d", id)
}
