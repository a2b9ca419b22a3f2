package ptx

import "errors"

// PlainEnv is implemented by an [Env] whose threads may run in lockstep
// with their warp ([Lockstep]).
type PlainEnv interface {
	// PlainNow reports whether a plain (weak) access of n bytes of global
	// memory at addr may be made now through Load or Store with no
	// scheduling point and no error. Lockstep leaves a thread before an
	// access for which it reports false; the thread's own Run makes it.
	PlainNow(addr uint64, n int, write bool) bool
	// SharedNow reports whether a plain access of the block's shared
	// memory may be made now with no scheduling point, as PlainNow for
	// global memory.
	SharedNow() bool
}

// WarpEnv is implemented by a [PlainEnv] that takes the plain accesses of
// global memory that the lanes of a warp make at one instruction in
// lockstep as one: [Lockstep] calls WarpBegin on the first lane's Env
// before the lanes make their accesses of one ld or st (each through its
// own Env, as ever) and WarpEnd after the last of them, before any other
// call of an Env; between the two, the Envs may hold back what the
// accesses report and hand it on at WarpEnd.
type WarpEnv interface {
	WarpBegin()
	WarpEnd()
}

// Lockstep runs threads, lanes of one warp of a block that stand at one
// place (the same frames, each at the same instruction), together: it
// decodes each instruction once and executes it for every lane, as a
// warp executes it, for as long as the lanes take every branch the same
// way and the instruction is none that makes a scheduling point or
// needs one lane at a time. It executes register arithmetic, branches,
// and plain loads and stores of global and shared memory, of the
// kernel's parameters and of local memory (a global or shared one only
// where the lane's Env, a [PlainEnv], says it may be made now); it stops
// before any other instruction (strong, atomic and fenced accesses,
// barriers, warp collectives, calls, returns, traps, prints), before a
// branch its lanes take differently, and before an access the model may
// reorder with a later store (hoist.go). Each thread is left before the
// first instruction it did not execute, from where [Thread.Run]
// continues it, with the registers, memory accesses, instruction count
// and loops that running it alone there would have given.
//
// Threads not at the place of the first are left as they are. Lockstep
// returns the lane-instructions it executed.
func Lockstep(threads []*Thread) uint64 {
	var w Warp
	return w.Lockstep(threads)
}

// Warp holds what [Lockstep] needs for a call, kept from one call to the
// next so that a caller that runs warps in lockstep again and again
// allocates nothing for it. The zero Warp is ready; a Warp serves one
// call at a time.
type Warp struct {
	lanes  []*Thread
	frames []*frame
}

// Lockstep is [Lockstep], with w's buffers.
func (w *Warp) Lockstep(threads []*Thread) uint64 {
	if len(threads) < 2 || threads[0].stacks == nil {
		return 0
	}
	lanes := w.lanes[:0]
	for _, t := range threads {
		if t.stacks != nil && t.barInst == nil && samePlace(threads[0], t) {
			lanes = append(lanes, t)
		}
	}
	w.lanes = lanes
	defer clear(lanes) // hold no thread past the call
	if len(lanes) < 2 {
		return 0
	}
	for _, t := range lanes {
		if _, ok := t.env.(PlainEnv); !ok {
			return 0
		}
	}
	warp, _ := lanes[0].env.(WarpEnv) // takes each ld or st's accesses as one
	top := len(lanes[0].frames) - 1
	frames := w.frames[:0]
	for _, t := range lanes {
		frames = append(frames, &t.frames[top])
	}
	w.frames = frames
	f0 := frames[0]
	heads, code := f0.fn.heads, f0.fn.code
	pc := f0.pc
	// The budget is the smallest of the lanes' (see Thread.Budget),
	// spent as Run spends it.
	budget := DefaultBudget
	for _, t := range lanes {
		if t.Budget > 0 {
			budget = min(budget, t.Budget)
		}
	}
	left := budget
	var done uint64
	// moved: lanes 0 to moved-1 executed the instruction at pc already
	// (an access that some lanes made before one could not): they stand
	// at pc+1.
	moved := 0
	defer func() {
		for i, f := range frames {
			if i < moved {
				if lanes[i].stacks != nil {
					f.pc = pc + 1
				}
				continue
			}
			f.pc = pc
		}
		clear(frames)
	}()
	// part ends the lockstep inside the instruction at pc: lanes 0 to n-1
	// executed it, the others did not. It returns their instructions.
	part := func(n int) uint64 {
		if n == 0 {
			return 0
		}
		moved = n
		for _, t := range lanes[:n] {
			t.executed++
		}
		return uint64(n)
	}
	for {
		h := &heads[pc]
		in := &code[pc]
		switch {
		case h.fast != fastNone:
			for _, f := range frames {
				if h.runs(f.regs) {
					runFast(f.regs, h)
				}
			}
		case h.op == opBra:
			taken := h.runs(f0.regs)
			for _, f := range frames[1:] {
				if h.runs(f.regs) != taken {
					return done // the warp diverges: each lane goes its own way
				}
			}
			if taken && in.target <= pc {
				if left -= pc + 1 - in.target; left < 0 {
					return done // Run reports the budget, lane by lane
				}
				for _, t := range lanes {
					t.loops++
					t.loop = in.line
				}
			}
			for _, t := range lanes {
				t.executed++
			}
			done += uint64(len(lanes))
			if taken {
				pc = in.target
			} else {
				pc++
			}
			continue
		case h.op == opLd || h.op == opSt:
			if in.sem != Weak || in.hoist != 0 {
				return done
			}
			for _, f := range frames {
				if h.op == opSt && f.hoisted == pc+1 {
					return done
				}
			}
			left = budget
			if warp != nil {
				warp.WarpBegin()
			}
			stop := -1 // the lane whose access could not be made now
			for i, t := range lanes {
				if f := frames[i]; h.runs(f.regs) && !t.plainMemory(f, in) {
					stop = i
					break
				}
			}
			if warp != nil {
				warp.WarpEnd()
			}
			if stop >= 0 {
				return done + part(stop)
			}
		case h.op == opBar && wholeBlockBarrier(in) || h.op == opRet && top == 0:
			// Every lane stops here, as Run would return: at the barrier
			// (bar.sync or bar.red of every thread, which involves no
			// Env) or at its exit.
			for _, f := range frames[1:] {
				if h.runs(f.regs) != h.runs(f0.regs) {
					return done
				}
			}
			if !h.runs(f0.regs) {
				break // no lane stops: the next instruction
			}
			stopped := 0
			for i, t := range lanes {
				if h.op == opRet {
					t.frames = t.frames[:0]
					t.mem.leave(t.dim, laneExited, 0)
					t.mem.exited(t.dim)
					t.exit()
				} else {
					frames[i].pc = pc + 1
					t.line = in.line
					if stop, err := t.barrier(frames[i], in); err != nil || !stop {
						// Not expected of a barrier of every thread; Run
						// meets the error itself.
						frames[i].pc = pc
						break
					}
				}
				stopped++
			}
			return done + part(stopped)
		case aluOnly(h.op):
			if !aluSafe(in) {
				return done
			}
			for i, t := range lanes {
				f := frames[i]
				if !h.runs(f.regs) {
					continue
				}
				if err := t.alu(f, in); err != nil {
					// Run meets the error again, lane by lane; alu
					// writes no register before it fails.
					return done + part(i)
				}
			}
		default:
			return done
		}
		for _, t := range lanes {
			t.executed++
		}
		done += uint64(len(lanes))
		pc++
	}
}

// runs reports whether the instruction of head h runs in a lane of
// registers regs: its guard, if any, holds.
func (h *head) runs(regs []uint64) bool {
	return h.guard < 0 || (regs[h.guard] != 0) != h.neg
}

// wholeBlockBarrier reports whether in, a bar or barrier instruction,
// waits for every thread of the block: bar.sync or bar.red without a
// thread count.
func wholeBlockBarrier(in *inst) bool {
	at := 0
	if in.bar == barRed {
		at = 1
	}
	return in.bar != barArrive && len(in.ops) <= at+1+boolInt(in.bar == barRed)
}

// Stopped reports whether the thread stopped where [Thread.Run] returns:
// at a barrier of every thread, which [Thread.Release] ends, or at its
// exit. Lockstep may leave lanes so.
func (t *Thread) Stopped() (Stop, bool) {
	switch {
	case t.stacks == nil:
		return Exited, true
	case t.barInst != nil:
		return AtBarrier, true
	}
	return 0, false
}

// samePlace reports whether threads a and b stand at the same place: the
// same functions called from the same instructions, each frame at the
// same instruction.
func samePlace(a, b *Thread) bool {
	if len(a.frames) != len(b.frames) || len(a.frames) == 0 {
		return false
	}
	for i := range a.frames {
		fa, fb := &a.frames[i], &b.frames[i]
		if fa.fn != fb.fn || fa.pc != fb.pc || fa.call != fb.call {
			return false
		}
	}
	return true
}

// aluSafe reports whether in, an instruction of aluOnly's, may run in
// lockstep: not one reading a special register whose value depends on
// when a lane reads it (the clocks), which the lanes read one at a time.
func aluSafe(in *inst) bool {
	for i := range in.ops {
		if o := &in.ops[i]; o.kind == oSpecial {
			switch o.sp {
			case spGlobaltimer, spClock64, spClock:
				return false
			}
		}
	}
	return true
}

// plainMemory executes ld or st in, a plain access, for t in frame f, as
// Run's memory does, and reports true; or, for an access that Run must
// make (one the Env will not make now, or one that fails), it changes
// nothing and reports false: access stops before any Env call that would
// be a scheduling point (errNotNow), and it and move check an access
// before they make it.
func (t *Thread) plainMemory(f *frame, in *inst) bool {
	line := t.line
	t.line, t.lockstep = in.line, true
	err := t.memory(f, in)
	t.lockstep = false
	if err != nil {
		t.line = line // Run makes the access again, and meets the error itself
		return false
	}
	return true
}

// errNotNow is access's error, in lockstep, for an access a lane must make
// alone (Thread.lockstep).
var errNotNow = errors.New("ptx: the access is a scheduling point")
