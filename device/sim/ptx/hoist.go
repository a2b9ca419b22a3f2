package ptx

import "slices"

// Load buffering. The memory model lets a thread's store be seen before an
// earlier load (or relaxed read-modify-write) of its own when nothing
// orders the two: different addresses, no dependency (the store's
// address, data and guard do not come from the load, directly or through
// the register arithmetic between them), no fence, barrier,
// branch or other memory access between them, the load not acquire and
// the store not release. The interpreter produces such outcomes by
// performing the store first, when the environment agrees ([Reorderer]):
// a load may then read a value that depends on the thread's own later
// store, through another thread.
//
// The model allows a few more, which the interpreter keeps in order (so
// kernel runs miss them, and never show what the model forbids): a weak
// store after an acquire load seen first through a read-modify-write of
// another thread (the litmus test LB+RMW-a), where running the store
// first would also let a plain read see it (LB+RMW-b, forbidden); and a
// release store seen first by a relaxed read, where running it first
// would release less than the model says to a reader that acquires.

// Reorderer is implemented by an [Env] that lets the interpreter perform a
// store before an earlier load that the model does not order with it.
type Reorderer interface {
	// Hoist reports whether the store of storeSize bytes at storeAddr is
	// performed before the load of loadSize bytes at loadAddr (a
	// scheduling decision of the environment).
	Hoist(loadAddr uint64, loadSize int, storeAddr uint64, storeSize int) bool
}

// hoistWindow bounds how far after a load the interpreter looks for a
// store to perform first.
const hoistWindow = 8

// markHoists records in every load and atom of code the store after it
// that may run first, as far as the code alone decides: the load not
// acquire (an atom relaxed), both in global memory (or generic), only
// register arithmetic between them, the store not release and none of its
// registers written by the load or the instructions between. First, a
// load followed by register arithmetic that neither reads what the load
// writes nor writes what the load reads is moved after that arithmetic
// (no branch may enter between): registers alone see the difference, and
// the store's operands are then computed before the load.
func markHoists(code []inst) {
	targets := map[int]bool{}
	for i := range code {
		if code[i].op == opBra {
			targets[code[i].target] = true
		}
	}
	for i := range code {
		ld := &code[i]
		if (ld.op != opLd && ld.op != opAtom) || (ld.space != spGlobal && ld.space != spGeneric) ||
			ld.op == opLd && ld.sem == Acquire || ld.op == opAtom && ld.sem != Relaxed {
			continue
		}
		if sinkLoad(code, i, targets) {
			continue // the load is further on, where the loop finds it again
		}
		// defs: the registers the load and the instructions between write.
		var defs [16]int
		n := 0
		full := false
		def := func(r *int) {
			if n == len(defs) {
				full = true
				return
			}
			defs[n] = *r
			n++
		}
		ld.regRefs(func(*int) {}, def)
		at := -1
		for j := i + 1; j < len(code) && j <= i+hoistWindow; j++ {
			in := &code[j]
			if in.op == opSt {
				at = j
				break
			}
			if !aluOnly(in.op) {
				break
			}
			in.regRefs(func(*int) {}, def)
		}
		if at < 0 || full {
			continue
		}
		st := &code[at]
		if st.sem == Release || (st.space != spGlobal && st.space != spGeneric) {
			continue
		}
		dependent := false
		st.regRefs(func(r *int) {
			for _, d := range defs[:n] {
				if d == *r {
					dependent = true
				}
			}
		}, func(*int) {})
		if !dependent {
			ld.hoist = at + 1
		}
	}
}

// sinkLoad moves the load or atom at i after the register arithmetic that
// follows it, up to a store, when that arithmetic neither reads a register
// the load writes nor writes one it reads, and no branch enters it; it
// reports whether it did.
func sinkLoad(code []inst, i int, targets map[int]bool) bool {
	ld := &code[i]
	var uses, defs []int
	ld.regRefs(func(r *int) { uses = append(uses, *r) }, func(r *int) { defs = append(defs, *r) })
	end := i + 1
	for ; end < len(code) && end <= i+hoistWindow && aluOnly(code[end].op); end++ {
		if targets[end] {
			return false
		}
		ok := true
		code[end].regRefs(func(r *int) { ok = ok && !slices.Contains(defs, *r) },
			func(r *int) { ok = ok && !slices.Contains(defs, *r) && !slices.Contains(uses, *r) })
		if !ok {
			return false
		}
	}
	if end == i+1 || end == len(code) || code[end].op != opSt {
		return false
	}
	l := *ld
	copy(code[i:end-1], code[i+1:end])
	code[end-1] = l
	return true
}

// hoist performs, before the load or atom ld (the instruction at f.pc-1),
// the store markHoists found for it (ld.hoist is not 0) when it runs, the
// addresses differ and the environment agrees; Run then skips that store.
// It returns the store and the error it failed with, if it did.
func (t *Thread) hoist(f *frame, ld *inst) (*inst, error) {
	r, ok := t.env.(Reorderer)
	if !ok {
		return nil, nil
	}
	at := ld.hoist - 1
	st := &f.fn.code[at]
	if st.guard >= 0 && (f.regs[st.guard] != 0) == st.neg {
		return nil, nil // the store does not run
	}
	la, sa := t.addr(f, &ld.ops[1]), t.addr(f, &st.ops[0])
	ln, sn := ld.t.size()*ld.vec, st.t.size()*st.vec
	if !global(la) || !global(sa) || la < sa+uint64(sn) && sa < la+uint64(ln) {
		return nil, nil
	}
	if !r.Hoist(la, ln, sa, sn) {
		return nil, nil
	}
	// The store is the instruction executing: its accesses name its line.
	pc, line := f.pc, t.line
	f.pc, t.line = at+1, st.line
	err := t.memory(f, st)
	f.pc, t.line = pc, line
	if err != nil {
		return st, err
	}
	f.hoisted = at + 1
	return nil, nil
}

// aluOnly reports whether op only computes registers: no memory, fence,
// barrier, branch, call or warp operation.
func aluOnly(op opcode) bool {
	switch op {
	case opLd, opSt, opAtom, opMembar, opBar, opBra, opRet, opCall, opTrap, opShfl, opVote, opActivemask, opWarpSync, opPrintf, opClusterBar:
		return false
	}
	return true
}

// global reports whether a generic address is in global memory (none of
// the parameter, shared and local windows).
func global(a uint64) bool {
	for _, w := range [...]uint64{ParamWindow, SharedWindow, LocalWindow, GlobalVarWindow} {
		if a >= w && a < w+windowSize {
			return false
		}
	}
	return true
}
