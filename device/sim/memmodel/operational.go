package memmodel

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// The operational model runs a program one step at a time under a seeded
// scheduler, as the simulator runs kernels: at each step a seeded choice
// picks the thread that moves and, for a load, the store it reads among
// those the thread may still see. It is a view-based semantics with scopes
// (in the manner of C11Tester's): every location keeps the history of its
// stores in coherence order (the order they ran); a thread's view says, per
// location, the oldest store it may read; release writes (and strong
// writes after a fence) carry views that acquire reads (and fences after
// strong reads) join when the two are morally strong; fence.sc joins the
// views of earlier morally strong fence.sc; bar.cta.sync joins the views
// of the threads it releases (without a count it waits for every thread of
// the CTA that has not finished and has a barrier instruction that can
// name it). Read-modify-writes read the newest store. A store that is not
// a read-modify-write goes, half the time, at a uniformly chosen place of
// its location's history after the oldest store its thread may read there
// (but not right before a read-modify-write's store) rather than at the
// end: two stores of a thread to different locations may then become
// visible in the other order (placeStore).
// It allows a subset of what the exact model allows: never a forbidden
// outcome, but not the outcomes that need a store to be seen before an
// earlier load of its thread (load buffering), nor weak reads that go back
// in coherence order.

// view is, per location, the index of the oldest store a thread may read.
type view []int

func (v view) join(o view) {
	for i, x := range o {
		v[i] = max(v[i], x)
	}
}

func (v view) clone() view { return append(view(nil), v...) }

// message is one store in a location's history.
type message struct {
	val    int64
	thread int
	rmw    bool // a read-modify-write's: it stays right after what it read
	// rel[s] is the view released to acquirers that need scope s (nil:
	// nothing released at s).
	rel [Sys + 1]view
}

// opThread is a thread's state in the operational model.
type opThread struct {
	pc   int
	regs map[string]int64
	cur  view
	done bool
	// relFence[s]: the view released by the latest fence of scope s or
	// wider; relLoc[loc][s]: by the latest release write to loc.
	relFence [Sys + 1]view
	relLoc   map[int]*[Sys + 1]view
	// pend[s]: views strong reads observed, for a later fence of scope s or
	// wider; pendLoc[loc][s]: for a later acquire read of loc.
	pend    [Sys + 1]view
	pendLoc map[int]*[Sys + 1]view
	// Barrier wait: the barrier and the arrival count that releases it.
	waiting bool
	bar     barrierKey
	need    int  // quorum barriers: arrivals needed
	quorum  bool // whether the barrier has a count
}

// opBarrier is the state of one barrier of one CTA.
type opBarrier struct {
	arrivals int
	view     view // the join of the arrivals' views
}

// scFence is what the fence.sc of one thread released.
type scFence struct {
	thread int
	scope  Scope
	v      view
}

// Simulate runs p once under the operational model with the given seed and
// returns the final values of obs. ok is false when the run did not finish
// within maxSteps steps or deadlocked (no final state).
func Simulate(p *Program, obs []Observable, seed uint64, maxSteps int) (vals []int64, ok bool, err error) {
	if err := p.Validate(); err != nil {
		return nil, false, err
	}
	locs := p.locations()
	li := map[string]int{}
	for i, l := range locs {
		li[l] = i
	}
	// An alias is its physical location: the operational model orders
	// every access of a location as if through one proxy, which allows
	// less than the PTX model, never more.
	for n := range p.Aliases {
		li[n] = li[p.physical(n)]
	}
	hist := make([][]message, len(locs))
	for i, l := range locs {
		hist[i] = []message{{val: p.Init[l], thread: -1}}
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	ths := make([]*opThread, len(p.Threads))
	for i, t := range p.Threads {
		regs := map[string]int64{}
		for k, v := range t.Regs {
			regs[k] = v
		}
		ths[i] = &opThread{regs: regs, cur: make(view, len(locs)), relLoc: map[int]*[Sys + 1]view{}, pendLoc: map[int]*[Sys + 1]view{}}
	}
	x := &explorer{prog: p}
	bars := map[barrierKey]*opBarrier{}
	var scs []scFence
	for step := 0; step < maxSteps; step++ {
		x.releaseBarriers(ths, bars)
		var ready []int
		for i, t := range ths {
			if !t.done && !t.waiting {
				ready = append(ready, i)
			}
		}
		if len(ready) == 0 {
			for _, t := range ths {
				if !t.done {
					return nil, false, nil // deadlock
				}
			}
			out := make([]int64, len(obs))
			for k, o := range obs {
				if o.Thread >= 0 {
					out[k] = ths[o.Thread].regs[o.Name]
				} else {
					h := hist[li[o.Name]]
					out[k] = h[len(h)-1].val
				}
			}
			return out, true, nil
		}
		ti := ready[rng.IntN(len(ready))]
		t := ths[ti]
		code := p.Threads[ti].Code
		if t.pc >= len(code) {
			t.done = true
			continue
		}
		in := &code[t.pc]
		val := func(o Operand) int64 {
			if o.Reg != "" {
				return t.regs[o.Reg]
			}
			return o.Imm
		}
		switch in.Op {
		case OpLoad, OpAtom:
			l := li[in.Loc]
			h := hist[l]
			idx := len(h) - 1
			if in.Op == OpLoad && t.cur[l] < idx {
				idx = t.cur[l] + rng.IntN(idx-t.cur[l]+1)
			}
			m := &h[idx]
			t.cur[l] = max(t.cur[l], idx)
			rsem := in.Sem
			if in.Op == OpAtom {
				rsem = readSem(in.Sem)
			}
			if rsem != Weak && m.thread >= 0 {
				need := x.needed(m.thread, ti)
				if in.Scope >= need && m.rel[need] != nil {
					t.pend[need] = joinView(t.pend[need], m.rel[need])
					pl := t.pendLoc[l]
					if pl == nil {
						pl = &[Sys + 1]view{}
						t.pendLoc[l] = pl
					}
					pl[need] = joinView(pl[need], m.rel[need])
				}
				if rsem == Acquire {
					if pl := t.pendLoc[l]; pl != nil {
						for s := CTA; s <= in.Scope; s++ {
							if pl[s] != nil {
								t.cur.join(pl[s])
							}
						}
					}
				}
			}
			old := m.val
			if in.Dst != "" {
				t.regs[in.Dst] = old
			}
			if in.Op == OpAtom {
				var a, b int64
				if len(in.Args) > 0 {
					a = val(in.Args[0])
				}
				if len(in.Args) > 1 {
					b = val(in.Args[1])
				}
				if in.AtomOp != "cas" || old == a {
					nv, err := atomValue(in.AtomOp, old, a, b)
					if err != nil {
						return nil, false, err
					}
					// The write continues the read store's release sequence.
					carried := m.rel
					x.write(t, ti, hist, len(hist[l]), l, nv, writeSem(in.Sem), in.Scope, carried)
					hist[l][len(hist[l])-1].rmw = true
				}
			}
		case OpStore:
			l := li[in.Loc]
			at := placeStore(t.cur[l], hist[l], rng)
			if at < len(hist[l]) {
				shiftViews(ths, hist, scs, bars, l, at)
			}
			x.write(t, ti, hist, at, l, val(in.Args[0]), in.Sem, in.Scope, [Sys + 1]view{})
		case OpFence:
			for s := CTA; s <= in.Scope; s++ {
				if t.pend[s] != nil {
					t.cur.join(t.pend[s])
				}
			}
			if in.Sem == SC {
				for _, f := range scs {
					if f.thread == ti {
						continue
					}
					need := x.needed(f.thread, ti)
					if f.scope >= need && in.Scope >= need {
						t.cur.join(f.v)
					}
				}
				scs = append(scs, scFence{thread: ti, scope: in.Scope, v: t.cur.clone()})
			}
			v := t.cur.clone()
			for s := CTA; s <= in.Scope; s++ {
				t.relFence[s] = v
			}
		case OpBarrier:
			th := &p.Threads[ti]
			key := barrierKey{gpu: th.GPU, cta: th.CTA, instance: val(in.Instance)}
			if in.ID != nil {
				key.id, key.hasID = val(*in.ID), true
			}
			b := bars[key]
			if b == nil {
				b = &opBarrier{view: make(view, len(locs))}
				bars[key] = b
			}
			b.arrivals++
			b.view.join(t.cur)
			if in.Arrive {
				break
			}
			t.waiting, t.bar, t.quorum = true, key, in.Quorum != nil
			if t.quorum {
				q := int(val(*in.Quorum))
				if q <= 0 {
					return nil, false, fmt.Errorf("%s line %d: barrier thread count %d is not positive", th.Name, in.Line, q)
				}
				t.need = max(b.arrivals, q)
			}
			continue
		case OpLocal:
			args := make([]int64, len(in.Args))
			for i, a := range in.Args {
				args[i] = val(a)
			}
			v, err := localValue(in.AtomOp, args)
			if err != nil {
				return nil, false, err
			}
			t.regs[in.Dst] = v
		case OpBranch, OpJump:
			taken := true
			if in.Op == OpBranch {
				if taken, err = holds(in.Cond, val(in.Args[0]), val(in.Args[1])); err != nil {
					return nil, false, err
				}
			}
			if taken {
				t.pc = in.Target
				continue
			}
		}
		t.pc++
	}
	return nil, false, nil
}

// write puts a store at index at of location l's history (its end, or a
// place shiftViews made room at) and makes it the oldest store the thread
// may read there; a strong store carries what the thread released.
func (x *explorer) write(t *opThread, ti int, hist [][]message, at, l int, v int64, sem Sem, sc Scope, carried [Sys + 1]view) {
	m := message{val: v, thread: ti}
	hist[l] = slices.Insert(hist[l], at, m)
	t.cur[l] = at
	mm := &hist[l][at]
	if sem == Weak {
		return
	}
	rl := t.relLoc[l]
	if sem == Release {
		if rl == nil {
			rl = &[Sys + 1]view{}
			t.relLoc[l] = rl
		}
		for s := CTA; s <= sc; s++ {
			rl[s] = t.cur.clone()
		}
	}
	for s := CTA; s <= sc; s++ {
		mm.rel[s] = joinView(mm.rel[s], t.relFence[s])
		if rl != nil {
			mm.rel[s] = joinView(mm.rel[s], rl[s])
		}
		mm.rel[s] = joinView(mm.rel[s], carried[s])
	}
}

// releaseBarriers lets go the threads whose barrier completed: with a
// count, once enough threads arrived; without, once every thread of the
// CTA that has not finished and has a barrier instruction that can name
// it waits at it. A released thread sees what every
// arrival so far saw.
func (x *explorer) releaseBarriers(ths []*opThread, bars map[barrierKey]*opBarrier) {
	for i, t := range ths {
		if !t.waiting {
			continue
		}
		b := bars[t.bar]
		if t.quorum {
			if b.arrivals >= t.need {
				t.waiting = false
				t.cur.join(b.view)
				t.pc++
			}
			continue
		}
		me := &x.prog.Threads[i]
		var group []*opThread
		complete := true
		for k, o := range ths {
			th := &x.prog.Threads[k]
			if o.done || th.GPU != me.GPU || th.CTA != me.CTA || !mayArrive(th, t.bar) {
				continue
			}
			if !o.waiting || o.bar != t.bar || o.quorum {
				complete = false
				break
			}
			group = append(group, o)
		}
		if !complete {
			continue
		}
		for _, o := range group {
			o.waiting = false
			o.cur.join(b.view)
			o.pc++
		}
	}
}

// mayArrive reports whether thread th has a barrier instruction that can
// name barrier key. A register operand names its initial value when the
// thread never writes the register, and can name any value otherwise.
func mayArrive(th *Thread, key barrierKey) bool {
	names := func(o Operand, v int64) bool {
		if o.Reg == "" {
			return o.Imm == v
		}
		for _, in := range th.Code {
			if in.Dst == o.Reg {
				return true
			}
		}
		return th.Regs[o.Reg] == v
	}
	for _, in := range th.Code {
		if in.Op != OpBarrier || in.Quorum != nil {
			continue
		}
		if !names(in.Instance, key.instance) || (in.ID != nil) != key.hasID {
			continue
		}
		if in.ID != nil && !names(*in.ID, key.id) {
			continue
		}
		return true
	}
	return false
}

// needed is the narrowest scope that includes threads a and b.
func (x *explorer) needed(a, b int) Scope {
	for s := CTA; s < Sys; s++ {
		if x.inScope(s, a, b) {
			return s
		}
	}
	return Sys
}

func joinView(a, b view) view {
	if b == nil {
		return a
	}
	if a == nil {
		return b.clone()
	}
	c := a.clone()
	c.join(b)
	return c
}

// placeStore returns where in h a store goes whose thread may read h's
// stores from index from on: the end, or half the time (as a seeded
// decision) a place after from, not right before a read-modify-write's
// store, when there is one.
func placeStore(from int, h []message, rng *rand.Rand) int {
	var at []int
	for p := from + 1; p < len(h); p++ {
		if !h[p].rmw {
			at = append(at, p)
		}
	}
	if len(at) == 0 {
		return len(h)
	}
	if r := rng.IntN(2 * len(at)); r < len(at) {
		return at[r]
	}
	return len(h)
}

// shiftViews makes room for a store at index at of location l: every
// view's index of l at or past at moves up one. Views share their
// arrays (a fence's view serves every scope, a read-modify-write carries
// the release it read), so each array moves once.
func shiftViews(ths []*opThread, hist [][]message, scs []scFence, bars map[barrierKey]*opBarrier, l, at int) {
	seen := map[*int]bool{}
	shift := func(v view) {
		if v == nil || seen[&v[0]] {
			return
		}
		seen[&v[0]] = true
		if v[l] >= at {
			v[l]++
		}
	}
	for _, t := range ths {
		shift(t.cur)
		for s := range t.relFence {
			shift(t.relFence[s])
			shift(t.pend[s])
		}
		for _, rl := range t.relLoc {
			for _, v := range rl {
				shift(v)
			}
		}
		for _, pl := range t.pendLoc {
			for _, v := range pl {
				shift(v)
			}
		}
	}
	for _, h := range hist {
		for i := range h {
			for _, v := range h[i].rel {
				shift(v)
			}
		}
	}
	for _, f := range scs {
		shift(f.v)
	}
	for _, b := range bars {
		shift(b.view)
	}
}
