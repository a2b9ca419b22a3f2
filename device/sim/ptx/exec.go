package ptx

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Env is what a running thread reaches outside its block: global memory
// (every generic address outside the parameter and shared windows), fences
// and the clock. The simulator implements it; its methods may block the
// thread (scheduling points).
type Env interface {
	// Load reads len(dst) bytes of global memory at addr with the access's
	// semantics and scope (scope is meaningful for strong accesses only).
	Load(addr uint64, dst []byte, sem Sem, scope Scope) error
	// Store writes src to global memory at addr.
	Store(addr uint64, src []byte, sem Sem, scope Scope) error
	// Atomic performs op on the size-byte (4 or 8) word at addr: a is the
	// operand (cas: the compare value), b the cas's new value. It returns
	// the value the word held.
	Atomic(addr uint64, size int, op AtomOp, sem Sem, scope Scope, a, b uint64) (old uint64, err error)
	// Fence is a membar or fence instruction: sem is SC (fence.sc and
	// membar) or AcqRel (fence.acq_rel).
	Fence(sem Sem, scope Scope)
	// Shared is told of every access to the block's shared memory before it
	// happens: n bytes at offset off, a write or not, with semantics sem
	// (Weak for a plain ld or st), an atom or not.
	Shared(off uint64, n int, write bool, sem Sem, atomic bool)
	// Clock is %globaltimer in nanoseconds.
	Clock() uint64
}

// Dim is a thread's place in its launch, in the x dimension (the y and z
// indices are 0, their sizes 1).
type Dim struct {
	Tid, Ntid, Ctaid, Nctaid uint32
}

// BlockMem is the memory a block's threads share: the launch's parameter
// bytes and the block's shared memory (the static variables, then the
// dynamic shared memory), and the meeting points of its warps.
type BlockMem struct {
	Params []byte
	Shared []byte

	dynBase int // offset of the dynamic shared memory in Shared
	warps   []*warp

	bars    [NumBarriers]*barState // the named barriers, made on first use
	cluster clusterBar             // the cluster barrier (barrier.cluster)
	live    int                    // threads that have not exited
	running int                    // threads that neither exited, failed nor wait at a barrier
	failure error                  // the first error of a thread of the block
}

// NewBlockMem returns the memory of one block of a launch of entry with
// the given parameter bytes (which it keeps), without dynamic shared
// memory. It decodes the entry and the functions it calls, whose shared
// variables the block holds.
func (m *Module) NewBlockMem(entry string, params []byte) (*BlockMem, error) {
	return m.NewBlockMemDynamic(entry, params, 0)
}

// NewBlockMemDynamic is [Module.NewBlockMem] for a launch that gives the
// block dynamicShared bytes of dynamic shared memory (the size a CUDA
// launch passes as its third configuration argument), which the module's
// .extern .shared arrays address.
func (m *Module) NewBlockMemDynamic(entry string, params []byte, dynamicShared int) (*BlockMem, error) {
	if dynamicShared < 0 {
		return nil, fmt.Errorf("ptx: negative dynamic shared memory size %d", dynamicShared)
	}
	if err := m.eachReachable(entry, func(*Func) {}); err != nil {
		return nil, err
	}
	m.mu.Lock()
	n := alignUp(m.sharedSize, 16)
	m.mu.Unlock()
	return &BlockMem{Params: params, Shared: make([]byte, n+dynamicShared), dynBase: n}, nil
}

// Stop says why [Thread.Run] returned.
type Stop int

// Reasons to stop.
const (
	// Exited: the thread returned from its entry.
	Exited Stop = iota
	// AtBarrier: the thread waits at a barrier without a thread count
	// (bar.sync or bar.red of every thread of the block); its block
	// resumes it with [Thread.Release] once the barrier completed.
	AtBarrier
	// Parked: the thread's Env returned [ErrPark] from the Load, Store
	// or Atomic of an ld, st or atom; the thread stands before that
	// instruction, which the next Run executes again (the Env then makes
	// the access).
	Parked
)

// ErrPark is what an Env's Load, Store or Atomic returns, before it touches
// anything, when the access must wait for a scheduling step and
// [Thread.Parkable] says the thread may stop before its instruction:
// [Thread.Run] then returns Parked, leaving the instruction to execute
// again, as if it had not begun.
var ErrPark = errors.New("ptx: the thread parks before its access")

// Barrier describes the barrier a stopped thread waits at.
type Barrier struct {
	ID   int // the barrier's number, 0 to 15
	Line int // the line of the barrier instruction
	// Done: the phase completed (every thread of the block that has not
	// exited arrived), so [Thread.Release] may resume the thread.
	Done bool
}

// Thread is one CUDA thread running a function of a module.
type Thread struct {
	// The fields Run reads first come first: a thread chosen among
	// thousands is a cache miss, and its stacks are its own (own), not a
	// record of their own to chase.
	*stacks         // own while the thread runs, nil once it exited
	executed uint64 // the instructions executed (see [Thread.Executed])
	// Budget bounds the instructions a Run executes between two calls
	// into Env or barriers: a loop that never touches memory would hang
	// the simulator. 0 means DefaultBudget. It is counted where loops go
	// round (code without a backward branch ends): each backward branch
	// taken spends the length of the code it jumps back over.
	Budget int
	// line is the source line of the last instruction that called into
	// Env or stopped at a barrier (see [Thread.Line]).
	line int
	own  stacks
	// entry backs own.frames while it holds the entry's frame alone, as
	// it does but in calls.
	entry [1]frame
	env   Env
	mem   *BlockMem
	unit  int  // the element size of the ld or st that Env.Load or Env.Store serves
	nc    bool // the ld that Env.Load serves is ld.global.nc
	// lockstep: Lockstep makes the access that access serves, which
	// returns errNotNow rather than make a scheduling point.
	lockstep bool
	// parkable: Run serves an ld, st or atom that may stop before it
	// ([ErrPark]).
	parkable bool
	buf      [16]byte
	m        *Module
	dim      Dim
	barInst  *inst  // the barrier instruction the thread is at
	loops    uint64 // backward branches taken
	loop     int    // the line of the last backward branch taken
	// printed is the text of the thread's last vprintf (printf.go).
	printed string
	// given is the record the module's pool gave the thread's stacks in,
	// which exit gives them back in.
	given *stacks
}

// Parkable reports whether the Env's Load, Store or Atomic now called may
// return [ErrPark]: it serves an ld, st or atom of [Thread.Run] that no
// earlier store was hoisted into (see Hoist), outside lockstep.
func (t *Thread) Parkable() bool { return t.parkable }

// DefaultBudget is the default [Thread.Budget].
const DefaultBudget = 1 << 26

// stacks are the memory of a thread's frames: their registers, .param
// storage and local memory, each a stack with the innermost frame on top.
// A thread that exits gives its stacks (but for its frames) back to its
// module, whose next threads reuse them; every frame clears what it takes.
type stacks struct {
	frames []frame
	regs   []uint64
	params []byte
	local  []byte
}

type frame struct {
	fn *Func
	pc int
	// hoisted is 1 + the index of a store performed before an earlier
	// load (hoist.go), which Run then skips; 0 for none.
	hoisted int
	regs    []uint64 // the frame's registers, in stacks.regs
	params  []byte   // the frame's .param storage, in stacks.params
	reg     int      // offset of regs in stacks.regs
	param   int      // offset of params in stacks.params
	local   int      // offset of the frame's local memory in stacks.local
	call    *inst    // the caller's call instruction (nil for the entry)
}

// NewThread starts a thread at the entry point entry with the block's
// memory mem. Every thread of a block is started before any of them runs:
// the block's barriers and warps count them.
func (m *Module) NewThread(entry string, env Env, mem *BlockMem, dim Dim) (*Thread, error) {
	t := new(Thread)
	if err := m.InitThread(t, entry, env, mem, dim); err != nil {
		return nil, err
	}
	return t, nil
}

// InitThread is NewThread of a thread the caller allocated, as part of a
// record of its own (a simulator's lane): t must be the zero Thread, and
// must not be copied or moved after (it refers to itself).
func (m *Module) InitThread(t *Thread, entry string, env Env, mem *BlockMem, dim Dim) error {
	fn, err := m.Func(entry)
	if err != nil {
		return err
	}
	if !fn.Entry {
		return fmt.Errorf("ptx: %s is not an entry point", entry)
	}
	need := 0
	for _, p := range fn.params {
		need = max(need, p.offset+p.size)
	}
	if len(mem.Params) < need {
		return fmt.Errorf("ptx: entry %s takes %d bytes of parameters, the launch has %d", entry, need, len(mem.Params))
	}
	if dim.Tid >= dim.Ntid {
		return fmt.Errorf("ptx: thread %d of a block of %d", dim.Tid, dim.Ntid)
	}
	t.m, t.env, t.mem, t.dim = m, env, mem, dim
	if st, _ := m.stacks.Get().(*stacks); st != nil {
		t.own, t.given = *st, st
	}
	t.own.frames = t.entry[:0]
	t.stacks = &t.own
	mem.join(dim)
	t.push(fn, nil)
	return nil
}

// push starts a frame of fn on top of the thread's stacks, its registers,
// parameters and local memory zero.
func (t *Thread) push(fn *Func, call *inst) {
	var reg, param, local int
	if n := len(t.frames); n > 0 {
		top := &t.frames[n-1]
		reg, param, local = top.reg+top.fn.nregs, top.param+top.fn.frameSize, top.local+top.fn.localSize
	}
	// A stack that grows moves; the frames below keep the slices they
	// took of the old one, which stays theirs alone.
	if need := reg + fn.nregs; need > len(t.regs) {
		t.regs = append(t.regs, make([]uint64, need-len(t.regs))...)
		t.regs = t.regs[:cap(t.regs)]
	}
	if need := param + fn.frameSize; need > len(t.params) {
		t.params = append(t.params, make([]byte, need-len(t.params))...)
		t.params = t.params[:cap(t.params)]
	}
	if need := local + fn.localSize; need > len(t.local) {
		t.local = append(t.local, make([]byte, need-len(t.local))...)
	}
	f := frame{fn: fn, regs: t.regs[reg : reg+fn.nregs], params: t.params[param : param+fn.frameSize],
		reg: reg, param: param, local: local, call: call}
	clear(f.regs)
	clear(f.params)
	clear(t.local[local : local+fn.localSize])
	t.frames = append(t.frames, f)
}

// exit gives the stacks of a thread that returned from its entry back to
// its module (the next thread copies them into its own; the copy given
// keeps the exited thread, and what it refers to, collectable), in the
// record its own came in, if any.
func (t *Thread) exit() {
	st := t.given
	if st == nil {
		st = new(stacks)
	}
	*st = stacks{regs: t.regs, params: t.params, local: t.local}
	t.stacks, t.own, t.given = nil, stacks{}, nil
	t.m.stacks.Put(st)
}

// Executed is the number of instructions the thread executed so far,
// those whose guard failed included: its lane-instructions, which
// benchmarks divide by time.
func (t *Thread) Executed() uint64 { return t.executed }

// Warm reads the thread's fields that Run reads first and returns a
// value of no meaning, so that a caller can start those loads ahead of
// Run.
func (t *Thread) Warm() uint64 {
	if t.stacks == nil || len(t.frames) == 0 {
		return t.executed
	}
	return uint64(t.frames[len(t.frames)-1].pc)
}

// Loops counts the backward branches the thread took: a loop went round
// between two accesses when it changed.
func (t *Thread) Loops() uint64 { return t.loops }

// LoopLine is the source line of the last backward branch the thread took
// (the end of the loop it is in, when it loops), 0 before one.
func (t *Thread) LoopLine() int { return t.loop }

// AppendState appends to b what the thread's next instructions depend on
// besides memory outside it: each frame's position, registers and .param
// storage, and local memory. A thread that reaches one instruction twice
// with the same state, having read the same bytes of global and shared
// memory in between, goes round the same way again.
func (t *Thread) AppendState(b []byte) []byte {
	for i := range t.frames {
		f := &t.frames[i]
		b = binary.LittleEndian.AppendUint64(b, uint64(f.pc))
		for _, r := range f.regs {
			b = binary.LittleEndian.AppendUint64(b, r)
		}
		b = append(b, f.params...)
	}
	if n := len(t.frames); n > 0 {
		top := &t.frames[n-1]
		b = append(b, t.local[:top.local+top.fn.localSize]...)
	}
	return b
}

// Barrier is the barrier the thread waits at after Run returned
// AtBarrier.
func (t *Thread) Barrier() Barrier {
	if t.barInst == nil {
		return Barrier{}
	}
	w, lane := t.mem.warps[t.dim.Tid/32], t.dim.Tid%32
	b := Barrier{ID: w.barID[lane], Line: t.barInst.line}
	if ph := w.barAt[lane]; ph != nil {
		b.Done = ph.done
	}
	return b
}

// Release resumes a thread stopped at a barrier whose phase completed
// (bar.red's destination gets the reduction over the threads that
// arrived); it returns an error when the phase has not.
func (t *Thread) Release() error {
	if t.stacks == nil || t.barInst == nil {
		return errors.New("ptx: the thread waits at no barrier")
	}
	w, lane := t.mem.warps[t.dim.Tid/32], t.dim.Tid%32
	ph := w.barAt[lane]
	if ph == nil || !ph.done {
		id := w.barID[lane]
		return fmt.Errorf("ptx: barrier %d (line %d) has not completed: %s", id, t.barInst.line, t.mem.bars[id].progress())
	}
	t.mem.leave(t.dim, laneRunning, 0)
	t.leaveBarrier(ph)
	return nil
}

// ExecError is an error of a running thread: where it happened.
type ExecError struct {
	Func string
	Line int
	Inst string
	Err  error
}

func (e *ExecError) Error() string {
	return fmt.Sprintf("ptx: %s line %d: %s: %v", e.Func, e.Line, e.Inst, e.Err)
}

func (e *ExecError) Unwrap() error { return e.Err }

// errBudget is the error of a thread that ran out of its instruction budget.
var errBudget = errors.New("instruction budget exhausted without touching memory (a loop that cannot end?)")

// Run executes the thread until it exits or reaches a barrier.
func (t *Thread) Run() (Stop, error) {
	if t.stacks == nil {
		return 0, errors.New("ptx: the thread has exited")
	}
	budget := t.Budget
	if budget <= 0 {
		budget = DefaultBudget
	}
	left := budget
	// The running frame, its code and registers, taken again when a call
	// or a return changes the frame.
	f := &t.frames[len(t.frames)-1]
	heads, code, regs := f.fn.heads, f.fn.code, f.regs
	for {
		h := &heads[f.pc]
		f.pc++
		t.executed++
		if h.guard >= 0 && (regs[h.guard] != 0) == h.neg {
			continue
		}
		if h.fast != fastNone {
			runFast(regs, h)
			continue
		}
		in := &code[f.pc-1]
		switch h.op {
		case opLd, opSt, opAtom:
			left, t.line = budget, in.line
			if in.op == opSt && f.hoisted == f.pc {
				f.hoisted = 0 // done before an earlier load
				continue
			}
			if in.hoist != 0 {
				if st, err := t.hoist(f, in); err != nil {
					return 0, t.fail(f, st, err)
				}
			}
			t.parkable = in.hoist == 0
			err := t.memory(f, in)
			t.parkable = false
			if err != nil {
				if err == ErrPark && in.hoist == 0 {
					f.pc--
					t.executed--
					return Parked, nil
				}
				return 0, t.fail(f, in, err)
			}
		case opMembar:
			left, t.line = budget, in.line
			t.env.Fence(in.sem, in.scope)
		case opBar:
			left, t.line = budget, in.line
			stop, err := t.barrier(f, in)
			switch {
			case err == errAbandoned:
				t.mem.leave(t.dim, laneFailed, 0)
				return 0, t.mem.failure
			case err != nil:
				return 0, t.fail(f, in, err)
			case stop:
				return AtBarrier, nil
			}
		case opBra:
			if in.target < f.pc {
				t.loops++
				t.loop = in.line
				if left -= f.pc - in.target; left < 0 {
					return 0, t.fail(f, in, errBudget)
				}
			}
			f.pc = in.target
		case opRet:
			t.frames = t.frames[:len(t.frames)-1]
			if len(t.frames) == 0 {
				t.mem.leave(t.dim, laneExited, 0)
				t.mem.exited(t.dim)
				t.exit()
				return Exited, nil
			}
			caller := &t.frames[len(t.frames)-1]
			if call := f.call; call != nil {
				for i, p := range f.fn.rets {
					a := call.rets[i].sym
					copy(caller.params[a.offset:a.offset+min(a.size, p.size)], f.params[p.offset:])
				}
			}
			f = caller
			heads, code, regs = f.fn.heads, f.fn.code, f.regs
		case opCall:
			callee, err := t.m.Func(in.callee)
			if err != nil {
				return 0, t.fail(f, in, err)
			}
			if callee.Entry || len(callee.params) != len(in.ops) {
				return 0, t.fail(f, in, fmt.Errorf("call of %s with %d arguments: it takes %d", in.callee, len(in.ops), len(callee.params)))
			}
			if len(callee.rets) != len(in.rets) {
				return 0, t.fail(f, in, fmt.Errorf("call of %s with %d return values: it has %d", in.callee, len(in.rets), len(callee.rets)))
			}
			if len(t.frames) >= maxDepth {
				return 0, t.fail(f, in, fmt.Errorf("call depth %d exceeded", maxDepth))
			}
			t.push(callee, in)
			nf := &t.frames[len(t.frames)-1]
			caller := &t.frames[len(t.frames)-2]
			for i, p := range callee.params {
				a := in.ops[i].sym
				copy(nf.params[p.offset:p.offset+p.size], caller.params[a.offset:a.offset+min(a.size, p.size)])
			}
			f = nf
			heads, code, regs = f.fn.heads, f.fn.code, f.regs
		case opTrap:
			return 0, t.fail(f, in, &TrapError{What: in.trap, Printed: t.printed})
		case opPrintf:
			if err := t.printf(f, in); err != nil {
				return 0, t.fail(f, in, err)
			}
		case opClusterBar:
			left, t.line = budget, in.line
			switch err := t.clusterBarrier(in); {
			case err == errAbandoned:
				t.mem.leave(t.dim, laneFailed, 0)
				return 0, t.mem.failure
			case err != nil:
				return 0, t.fail(f, in, err)
			}
		case opShfl, opVote, opActivemask, opWarpSync:
			left, t.line = budget, in.line
			if err := t.warpOp(f, in); err != nil {
				return 0, t.fail(f, in, err)
			}
		default:
			if err := t.alu(f, in); err != nil {
				return 0, t.fail(f, in, err)
			}
		}
	}
}

const maxDepth = 64

// fail returns the error of the thread at in, which ends it: the block's
// barriers no longer wait for it.
func (t *Thread) fail(f *frame, in *inst, err error) error {
	e := &ExecError{Func: f.fn.Name, Line: in.line, Inst: in.text, Err: err}
	t.mem.leave(t.dim, laneFailed, 0)
	if t.mem.failure == nil {
		t.mem.failure = e
	}
	return e
}

// value reads operand o as type ty: a register directly, any other kind
// through operand (value is small enough to be inlined).
func (t *Thread) value(f *frame, o *operand, ty typ) uint64 {
	if o.kind == oReg && !o.not {
		return f.regs[o.reg]
	}
	return t.operand(f, o, ty)
}

// operand reads operand o as type ty.
func (t *Thread) operand(f *frame, o *operand, ty typ) uint64 {
	switch o.kind {
	case oReg:
		if o.not {
			return b2u(f.regs[o.reg] == 0)
		}
		return f.regs[o.reg]
	case oImm:
		if ty == tPred {
			return b2u(o.imm != 0)
		}
		return trunc(o.imm, ty)
	case oSpecial:
		return t.special(o.sp)
	case oSym:
		switch o.sym.kind {
		case symKernelParam:
			return ParamWindow + uint64(o.sym.offset)
		case symShared:
			return SharedWindow + uint64(o.sym.offset)
		case symDynShared:
			return SharedWindow + uint64(t.mem.dynBase)
		case symLocal:
			return LocalWindow + uint64(f.local+o.sym.offset)
		case symGlobal:
			return GlobalVarWindow + uint64(o.sym.offset)
		}
	}
	return 0
}

func (t *Thread) special(sp special) uint64 {
	switch sp {
	case spTidX:
		return uint64(t.dim.Tid)
	case spNtidX:
		return uint64(t.dim.Ntid)
	case spCtaidX:
		return uint64(t.dim.Ctaid)
	case spNctaidX:
		return uint64(t.dim.Nctaid)
	case spNtidY, spNtidZ, spNctaidY, spNctaidZ:
		return 1
	case spLaneid:
		return uint64(t.dim.Tid % 32)
	case spWarpid:
		return uint64(t.dim.Tid / 32)
	case spGlobaltimer, spClock64:
		return t.env.Clock()
	case spClock:
		return t.env.Clock() & 0xffffffff
	case spLanemaskEq:
		return 1 << (t.dim.Tid % 32)
	case spLanemaskLt:
		return 1<<(t.dim.Tid%32) - 1
	case spLanemaskLe:
		return 1<<(t.dim.Tid%32+1) - 1
	case spLanemaskGt:
		return 0xffffffff &^ (1<<(t.dim.Tid%32+1) - 1)
	case spLanemaskGe:
		return 0xffffffff &^ (1<<(t.dim.Tid%32) - 1)
	case spClusteridX:
		return uint64(t.dim.Ctaid)
	case spNclusteridX:
		return uint64(t.dim.Nctaid)
	case spOne:
		return 1
	}
	return 0
}

// trunc keeps the bits of type ty (zero-extended).
func trunc(v uint64, ty typ) uint64 {
	switch ty.size() {
	case 1:
		return v & 0xff
	case 2:
		return v & 0xffff
	case 4:
		return v & 0xffffffff
	}
	return v
}

// sext sign-extends the low bits of type ty.
func sext(v uint64, ty typ) int64 {
	switch ty.size() {
	case 1:
		return int64(int8(v))
	case 2:
		return int64(int16(v))
	case 4:
		return int64(int32(v))
	}
	return int64(v)
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// memory executes ld, st and atom.
func (t *Thread) memory(f *frame, in *inst) error {
	switch in.op {
	case opLd:
		n := in.t.size()
		buf := t.buf[:n*in.vec]
		if err := t.access(f, in, &in.ops[1], buf, false); err != nil {
			return err
		}
		dsts := []int{in.ops[0].reg}
		if in.vec > 1 {
			dsts = in.ops[0].vec
		}
		for i, d := range dsts {
			f.regs[d] = extend(load(buf[i*n:], in.t), in.t, in.dstSize)
		}
		return nil
	case opSt:
		n := in.t.size()
		buf := t.buf[:n*in.vec]
		if in.vec > 1 {
			for i, s := range in.ops[1].vec {
				put(buf[i*n:], f.regs[s], n)
			}
		} else {
			put(buf, t.value(f, &in.ops[1], in.t), n)
		}
		return t.access(f, in, &in.ops[0], buf, true)
	}
	// atom
	addr := t.addr(f, &in.ops[1])
	if addr >= ParamWindow && addr < SharedWindow+windowSize {
		if addr >= SharedWindow {
			return t.sharedAtomic(f, in, addr-SharedWindow)
		}
		return errors.New("atomic on a parameter")
	}
	if in.space == spShared {
		return t.sharedAtomic(f, in, addr)
	}
	a := t.value(f, &in.ops[2], in.t)
	var b uint64
	if in.aop == AtomCAS {
		b = t.value(f, &in.ops[3], in.t)
	}
	if addr >= LocalWindow && addr < LocalWindow+windowSize {
		return errors.New("atomic on local memory")
	}
	if addr >= GlobalVarWindow && addr < GlobalVarWindow+windowSize {
		return t.m.globalAccess(addr-GlobalVarWindow, nil, true)
	}
	old, err := t.env.Atomic(addr, in.t.size(), in.aop, in.sem, in.scope, a, b)
	if err != nil {
		return err
	}
	f.regs[in.ops[0].reg] = trunc(old, in.t)
	return nil
}

// sharedAtomic performs an atom on shared memory (no other thread runs
// while it does).
func (t *Thread) sharedAtomic(f *frame, in *inst, off uint64) error {
	n := uint64(in.t.size())
	if off+n > uint64(len(t.mem.Shared)) || off%n != 0 {
		return fmt.Errorf("shared atomic at offset %d of %d bytes", off, len(t.mem.Shared))
	}
	t.env.Shared(off, int(n), true, in.sem, true)
	b := t.mem.Shared[off : off+n]
	old := load(b, in.t)
	a := t.value(f, &in.ops[2], in.t)
	var c uint64
	if in.aop == AtomCAS {
		c = t.value(f, &in.ops[3], in.t)
	}
	put(b, AtomicResult(in.aop, int(n), old, a, c), int(n))
	f.regs[in.ops[0].reg] = old
	return nil
}

// AtomicResult is the value op leaves in a size-byte word that held old:
// a is the operand (cas: the compare value) and b the cas's new value.
func AtomicResult(op AtomOp, size int, old, a, b uint64) uint64 {
	var v uint64
	switch op {
	case AtomCAS:
		v = old
		if old == a {
			v = b
		}
	case AtomExch:
		v = a
	case AtomAdd:
		v = old + a
	case AtomMin, AtomMax:
		v = min(trunc(old, sizeType(size)), trunc(a, sizeType(size)))
		if op == AtomMax {
			v = max(trunc(old, sizeType(size)), trunc(a, sizeType(size)))
		}
	case AtomMinS, AtomMaxS:
		x, y := sext(old, sizeType(size)), sext(a, sizeType(size))
		if (x < y) == (op == AtomMinS) {
			v = old
		} else {
			v = a
		}
	case AtomAddF:
		if size == 4 {
			v = farith(fAdd, fmtF32, rnEven, true, false, old&0xffffffff, a&0xffffffff, 0)
		} else if fmtF64.isNaN(a) || fmtF64.isNaN(old) {
			v = a // a NaN propagates unquieted
			if !fmtF64.isNaN(a) {
				v = old
			}
		} else {
			v = farith(fAdd, fmtF64, rnEven, false, false, old, a, 0)
		}
	case AtomInc:
		v = old + 1
		if uint32(old) >= uint32(a) {
			v = 0
		}
	case AtomDec:
		v = old - 1
		if uint32(old) == 0 || uint32(old) > uint32(a) {
			v = a
		}
	case AtomAnd:
		v = old & a
	case AtomOr:
		v = old | a
	case AtomXor:
		v = old ^ a
	}
	if size == 4 {
		v &= 0xffffffff
	}
	return v
}

// addr computes an address operand's value.
func (t *Thread) addr(f *frame, o *operand) uint64 {
	v := uint64(o.off)
	if o.base >= 0 {
		v += f.regs[o.base]
	}
	if o.sym != nil {
		switch o.sym.kind {
		case symKernelParam:
			v += ParamWindow + uint64(o.sym.offset)
		case symShared:
			v += SharedWindow + uint64(o.sym.offset)
		case symDynShared:
			v += SharedWindow + uint64(t.mem.dynBase)
		case symLocal:
			v += LocalWindow + uint64(f.local+o.sym.offset)
		case symGlobal:
			v += GlobalVarWindow + uint64(o.sym.offset)
		case symFrameParam:
			v += uint64(o.sym.offset)
		}
	}
	return v
}

// access moves buf to or from the address of o in in's state space.
func (t *Thread) access(f *frame, in *inst, o *operand, buf []byte, write bool) error {
	addr := t.addr(f, o)
	if addr%uint64(in.t.size()*in.vec) != 0 {
		return fmt.Errorf("misaligned address %#x for a %d-byte access", addr, len(buf))
	}
	sp := in.space
	if sp == spParam && o.sym != nil && o.sym.kind == symFrameParam {
		// A function's parameter or a call argument, in the frame.
		return move(f.params, addr, buf, write, "parameter")
	}
	if sp == spGeneric || sp == spParam || sp == spShared || sp == spLocal {
		switch {
		case addr >= ParamWindow && addr < ParamWindow+windowSize:
			sp, addr = spParam, addr-ParamWindow
		case addr >= SharedWindow && addr < SharedWindow+windowSize:
			sp, addr = spShared, addr-SharedWindow
		case addr >= LocalWindow && addr < LocalWindow+windowSize:
			sp, addr = spLocal, addr-LocalWindow
		case sp == spGeneric:
			sp = spGlobal
		case (sp == spShared || sp == spLocal) && addr < 1<<32:
			// An address in the state space itself, as a 32-bit register
			// holds it (mov.u32 %r, var keeps the window's low 32 bits,
			// which are zero): an offset in the space, as atom.shared
			// takes it too.
		default:
			return fmt.Errorf("address %#x is not in the %s window", addr, map[space]string{spParam: "parameter", spShared: "shared", spLocal: "local"}[sp])
		}
	}
	switch sp {
	case spLocal:
		return move(t.local, addr, buf, write, "local")
	case spParam:
		if write {
			return errors.New("store to a kernel parameter")
		}
		return move(t.mem.Params, addr, buf, false, "kernel parameter")
	case spShared:
		if t.lockstep && (in.sem != Weak || !t.env.(PlainEnv).SharedNow()) {
			return errNotNow
		}
		if addr <= uint64(len(t.mem.Shared)) && uint64(len(buf)) <= uint64(len(t.mem.Shared))-addr {
			t.env.Shared(addr, len(buf), write, in.sem, false)
		}
		return move(t.mem.Shared, addr, buf, write, "shared")
	}
	if addr >= GlobalVarWindow && addr < GlobalVarWindow+windowSize {
		return t.m.globalAccess(addr-GlobalVarWindow, buf, write)
	}
	if sp == spConst {
		return fmt.Errorf("address %#x is not in the constant window", addr)
	}
	if t.lockstep && (in.sem != Weak || !t.env.(PlainEnv).PlainNow(addr, len(buf), write)) {
		return errNotNow
	}
	t.unit, t.nc = in.t.size(), in.nc
	if write {
		return t.env.Store(addr, buf, in.sem, in.scope)
	}
	return t.env.Load(addr, buf, in.sem, in.scope)
}

// move copies between buf and mem at offset off.
func move(mem []byte, off uint64, buf []byte, write bool, what string) error {
	if off > uint64(len(mem)) || uint64(len(buf)) > uint64(len(mem))-off {
		return fmt.Errorf("%s access at offset %d of %d bytes outside its %d bytes", what, off, len(buf), len(mem))
	}
	if write {
		copy(mem[off:], buf)
	} else {
		copy(buf, mem[off:])
	}
	return nil
}

// load decodes a little-endian value of type ty, zero-extended (registers
// hold a type's bits; signed operations sign-extend when they read them).
func load(b []byte, ty typ) uint64 {
	var v uint64
	switch ty.size() {
	case 1:
		v = uint64(b[0])
	case 2:
		v = uint64(binary.LittleEndian.Uint16(b))
	case 4:
		v = uint64(binary.LittleEndian.Uint32(b))
	default:
		v = binary.LittleEndian.Uint64(b)
	}
	return v
}

func put(b []byte, v uint64, n int) {
	switch n {
	case 1:
		b[0] = byte(v)
	case 2:
		binary.LittleEndian.PutUint16(b, uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(b, uint32(v))
	default:
		binary.LittleEndian.PutUint64(b, v)
	}
}
