package ptx

// The commonest instructions of compiled kernels are integer adds, logic,
// shifts and comparisons, f32 adds and comparisons rounding to nearest,
// and moves, of registers and immediates (about 70% of the ALU
// instructions the fuzzer's default programs run). The decoder marks them
// (inst.fast) and Run evaluates them in one call, with the very
// arithmetic of alu, rather than through alu, value, compute and
// intArith or floatOp.

// Fast forms of an instruction (inst.fast).
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

// markFast sets the fast form of every instruction of code.
func markFast(code []inst) {
	for i := range code {
		code[i].fast = fastForm(&code[i])
	}
}

// fastValue is source operand o of a fast instruction of type ty.
func fastValue(regs []uint64, o *operand, ty typ) uint64 {
	if o.kind == oReg {
		return regs[o.reg]
	}
	return trunc(o.imm, ty)
}

// runFast evaluates in, an instruction with a fast form, in regs.
func runFast(regs []uint64, in *inst) {
	ty := in.t
	a := fastValue(regs, &in.ops[1], ty)
	var v uint64
	switch in.fast {
	case fastMov:
		v = a
	case fastAdd:
		v = trunc(a+fastValue(regs, &in.ops[2], ty), ty)
	case fastSub:
		v = trunc(a-fastValue(regs, &in.ops[2], ty), ty)
	case fastAnd:
		v = a & fastValue(regs, &in.ops[2], ty)
	case fastOr:
		v = a | fastValue(regs, &in.ops[2], ty)
	case fastXor:
		v = a ^ fastValue(regs, &in.ops[2], ty)
	case fastShl:
		if n := uint32(fastValue(regs, &in.ops[2], ty)); n < uint32(ty.bits()) {
			v = trunc(a<<n, ty)
		}
	case fastShrU:
		if n := uint32(fastValue(regs, &in.ops[2], ty)); n < uint32(ty.bits()) {
			v = trunc(a, ty) >> n
		}
	case fastSetpS:
		v = b2u(ordered(in.cmp, sext(a, ty), sext(fastValue(regs, &in.ops[2], ty), ty)))
	case fastSetpU:
		v = b2u(ordered(in.cmp, trunc(a, ty), trunc(fastValue(regs, &in.ops[2], ty), ty)))
	case fastAddF32:
		v = f32Result(f32(a) + f32(fastValue(regs, &in.ops[2], ty)))
	case fastSetpF32:
		v = b2u(fcompare(in.cmp, fmtF32, false, a, fastValue(regs, &in.ops[2], ty)))
	}
	regs[in.ops[0].reg] = v
}
