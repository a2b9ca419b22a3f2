package ptx

// The commonest instructions of compiled kernels are integer adds, logic,
// shifts and comparisons, f32 adds and comparisons rounding to nearest,
// and moves, of registers and immediates (about 70% of the ALU
// instructions the fuzzer's default programs run). Their heads say so
// (head.fast) and Run evaluates them in one call, with the very
// arithmetic of alu, rather than through alu, value, compute and
// intArith or floatOp.

// Fast forms of an instruction (head.fast).
const (
	fastNone    uint8 = iota
	fastMov           // mov d, a
	fastAdd           // add d, a, b: trunc(a+b)
	fastSub           // sub d, a, b: trunc(a-b)
	fastAnd           // and d, a, b: a&b
	fastOr            // or d, a, b: a|b
	fastXor           // xor d, a, b: a^b
	fastShl           // shl d, a, b: 0 past the width, else trunc(a<<b)
	fastShrU          // shr (unsigned) d, a, b: 0 past the width, else trunc(a)>>b
	fastSetpS         // setp.cmp (signed) d, a, b
	fastSetpU         // setp.cmp (unsigned, bits) d, a, b
	fastAddF32        // add.f32 d, a, b rounding to nearest: f32Result(a+b)
	fastSetpF32       // setp.cmp.f32 d, a, b: fcompare
)

// fastForm returns the fast form of in, fastNone when it has none: its
// destination a register, its sources registers (not negated) or, for
// types other than pred, immediates.
func fastForm(in *inst) uint8 {
	ty := in.t
	if len(in.ops) == 0 || in.ops[0].kind != oReg {
		return fastNone
	}
	for i := 1; i < len(in.ops); i++ {
		switch o := &in.ops[i]; {
		case o.kind == oReg && !o.not:
		case o.kind == oImm && ty != tPred:
		default:
			return fastNone
		}
	}
	switch n := len(in.ops); {
	case in.op == opMov && n == 2:
		return fastMov // of any type: a copy
	case n != 3:
		return fastNone
	case ty == tF32 && !in.ftz && !in.sat:
		switch {
		case in.op == opAdd && (in.rmode == rnNone || in.rmode == rnEven):
			return fastAddF32
		case in.op == opSetp:
			return fastSetpF32
		}
		return fastNone
	case ty.float() || ty.packed():
		return fastNone
	}
	switch in.op {
	case opAdd, opSub:
		if in.sat || ty == tPred {
			return fastNone
		}
		if in.op == opAdd {
			return fastAdd
		}
		return fastSub
	case opAnd:
		return fastAnd
	case opOr:
		return fastOr
	case opXor:
		return fastXor
	case opShl:
		if ty != tPred {
			return fastShl
		}
	case opShr:
		if ty != tPred && !ty.signed() {
			return fastShrU
		}
	case opSetp:
		if ty == tPred || in.cmp > cmpGe {
			return fastNone
		}
		if ty.signed() {
			return fastSetpS
		}
		return fastSetpU
	}
	return fastNone
}

// head is what Run reads of an instruction before it needs the rest:
// its guard, its opcode and, for an instruction with a fast form, all
// that runFast needs. Heads sit in an array of their own (Func.heads,
// one per instruction of Func.code), 40 bytes each, so that the loop's
// commonest instructions read one small record where an inst and its
// operands span several cache lines.
type head struct {
	op    opcode
	fast  uint8 // the fast form, fastNone for none
	neg   bool  // @!p
	t     typ
	cmp   cmpOp
	guard int32 // predicate register, -1 for none
	// A fast instruction's destination register and sources: a and b
	// are registers, or -1 for an immediate, ia and ib, truncated to t.
	dst, a, b int32
	ia, ib    uint64
}

// headOf is the head of in.
func headOf(in *inst) head {
	h := head{op: in.op, fast: fastForm(in), neg: in.neg, t: in.t, cmp: in.cmp, guard: int32(in.guard), a: -1, b: -1}
	if h.fast == fastNone {
		return h
	}
	h.dst = int32(in.ops[0].reg)
	src := func(o *operand) (int32, uint64) {
		if o.kind == oReg {
			return int32(o.reg), 0
		}
		return -1, trunc(o.imm, in.t)
	}
	h.a, h.ia = src(&in.ops[1])
	if len(in.ops) > 2 {
		h.b, h.ib = src(&in.ops[2])
	}
	return h
}

// makeHeads builds the heads of fn's instructions; fn's registers are
// final.
func makeHeads(fn *Func) {
	fn.heads = make([]head, len(fn.code))
	for i := range fn.code {
		fn.heads[i] = headOf(&fn.code[i])
	}
}

// fastValue is a source of a fast instruction: register r, or the
// immediate imm when r is -1.
func fastValue(regs []uint64, r int32, imm uint64) uint64 {
	if r >= 0 {
		return regs[r]
	}
	return imm
}

// runFast evaluates the instruction of head h, which has a fast form, in
// regs.
func runFast(regs []uint64, h *head) {
	ty := h.t
	a := fastValue(regs, h.a, h.ia)
	var v uint64
	switch h.fast {
	case fastMov:
		v = a
	case fastAdd:
		v = trunc(a+fastValue(regs, h.b, h.ib), ty)
	case fastSub:
		v = trunc(a-fastValue(regs, h.b, h.ib), ty)
	case fastAnd:
		v = a & fastValue(regs, h.b, h.ib)
	case fastOr:
		v = a | fastValue(regs, h.b, h.ib)
	case fastXor:
		v = a ^ fastValue(regs, h.b, h.ib)
	case fastShl:
		if n := uint32(fastValue(regs, h.b, h.ib)); n < uint32(ty.bits()) {
			v = trunc(a<<n, ty)
		}
	case fastShrU:
		if n := uint32(fastValue(regs, h.b, h.ib)); n < uint32(ty.bits()) {
			v = trunc(a, ty) >> n
		}
	case fastSetpS:
		v = b2u(ordered(h.cmp, sext(a, ty), sext(fastValue(regs, h.b, h.ib), ty)))
	case fastSetpU:
		v = b2u(ordered(h.cmp, trunc(a, ty), trunc(fastValue(regs, h.b, h.ib), ty)))
	case fastAddF32:
		v = f32Result(f32(a) + f32(fastValue(regs, h.b, h.ib)))
	case fastSetpF32:
		v = b2u(fcompare(h.cmp, fmtF32, false, a, fastValue(regs, h.b, h.ib)))
	}
	regs[h.dst] = v
}
