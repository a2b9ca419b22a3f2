package ptx

import (
	"math/rand/v2"
	"testing"
)

// TestFastMatchesALU runs every fast form, over every integer type and
// comparison, with register and immediate sources of random and edge
// values, both through runFast and through alu, and checks that they
// write the same register file. It also checks that the forms alu must
// keep (saturation, negated predicates, signed shifts right, unordered
// comparisons, floats) have none.
func TestFastMatchesALU(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	edges := []uint64{0, 1, 2, 31, 32, 33, 63, 64, 65, 0x7f, 0x80, 0xff, 0x7fff, 0x8000, 0xffff,
		0x7fffffff, 0x80000000, 0xffffffff, 1 << 62, 1 << 63, ^uint64(0),
		// f32: infinities, quiet and signalling NaNs, -0, subnormals, the
		// largest finite value, one.
		0x7f800000, 0xff800000, 0x7fc00000, 0xffc00001, 0x7f800001, 0x007fffff, 0x807fffff, 0x7f7fffff, 0x3f800000}
	draw := func() uint64 {
		if rng.IntN(2) == 0 {
			return edges[rng.IntN(len(edges))]
		}
		return rng.Uint64()
	}
	ints := []typ{tB8, tB16, tB32, tB64, tU8, tU16, tU32, tU64, tS8, tS16, tS32, tS64}
	type form struct {
		op   opcode
		cmp  cmpOp
		srcs int
		want uint8
		pred bool // also for .pred (registers only)
		all  bool // also for the float and packed types
		f32  bool // for .f32 only
	}
	var forms []form
	forms = append(forms, form{op: opMov, srcs: 1, want: fastMov, pred: true, all: true},
		form{op: opAdd, srcs: 2, want: fastAdd}, form{op: opSub, srcs: 2, want: fastSub},
		form{op: opAnd, srcs: 2, want: fastAnd, pred: true}, form{op: opOr, srcs: 2, want: fastOr, pred: true},
		form{op: opXor, srcs: 2, want: fastXor, pred: true}, form{op: opShl, srcs: 2, want: fastShl},
		form{op: opShr, srcs: 2, want: fastShrU})
	for c := cmpEq; c <= cmpGe; c++ {
		forms = append(forms, form{op: opSetp, cmp: c, srcs: 2, want: fastSetpU})
	}
	forms = append(forms, form{op: opAdd, srcs: 2, want: fastAddF32, f32: true})
	for c := cmpEq; c <= cmpNan; c++ {
		forms = append(forms, form{op: opSetp, cmp: c, srcs: 2, want: fastSetpF32, f32: true})
	}
	checked := 0
	for _, fm := range forms {
		types := ints
		if fm.f32 {
			types = []typ{tF32}
		}
		if fm.pred {
			types = append(types[:len(types):len(types)], tPred)
		}
		if fm.all {
			types = append(types[:len(types):len(types)], tF16, tBF16, tF32, tF64, tF16x2, tBF16x2)
		}

		for _, ty := range types {
			for shape := range 1 << fm.srcs { // bit i: source i an immediate
				if ty == tPred && shape != 0 {
					continue
				}
				for range 200 {
					in := inst{op: fm.op, t: ty, cmp: fm.cmp, guard: -1, vec: 1}
					in.ops = []operand{{kind: oReg, reg: 0}}
					for i := range fm.srcs {
						o := operand{kind: oReg, reg: 1 + i}
						if shape&(1<<i) != 0 {
							o = operand{kind: oImm, imm: draw()}
						}
						in.ops = append(in.ops, o)
					}
					want := fm.want
					if fm.op == opShr && ty.signed() {
						want = fastNone
					}
					if fm.op == opSetp && ty.signed() && !fm.f32 {
						want = fastSetpS
					}
					if got := fastForm(&in); got != want {
						t.Fatalf("%v %v shape %b: fast form %d, want %d", fm.op, ty, shape, got, want)
					}
					if want == fastNone {
						break
					}
					regs := []uint64{draw(), draw(), draw()}
					if ty == tPred {
						regs[1], regs[2] = regs[1]&1, regs[2]&1
					}
					slow := append([]uint64(nil), regs...)
					var th Thread
					if err := th.alu(&frame{regs: slow}, &in); err != nil {
						t.Fatalf("%v %v: alu: %v", fm.op, ty, err)
					}
					h := headOf(&in)
					runFast(regs, &h)
					if regs[0] != slow[0] {
						t.Fatalf("%v.%v cmp %d sources %#x %#x (shape %b): fast %#x, alu %#x", fm.op, ty, fm.cmp, slow[1], slow[2], shape, regs[0], slow[0])
					}
					checked++
				}
			}
		}
	}
	if checked < 10000 {
		t.Fatalf("only %d evaluations compared", checked)
	}
	// Forms that keep alu's path.
	for _, in := range []inst{
		{op: opAdd, t: tS32, sat: true, ops: []operand{{kind: oReg}, {kind: oReg, reg: 1}, {kind: oReg, reg: 2}}},
		{op: opAnd, t: tPred, ops: []operand{{kind: oReg}, {kind: oReg, reg: 1, not: true}, {kind: oReg, reg: 2}}},
		{op: opAnd, t: tPred, ops: []operand{{kind: oReg}, {kind: oReg, reg: 1}, {kind: oImm, imm: 1}}},
		{op: opSetp, t: tU32, cmp: cmpNan, ops: []operand{{kind: oReg}, {kind: oReg, reg: 1}, {kind: oReg, reg: 2}}},
		{op: opSetp, t: tS32, ops: []operand{{kind: oVec, vec: []int{0, 3}}, {kind: oReg, reg: 1}, {kind: oReg, reg: 2}}},
		{op: opAdd, t: tF32, ftz: true, ops: []operand{{kind: oReg}, {kind: oReg, reg: 1}, {kind: oReg, reg: 2}}},
		{op: opAdd, t: tF32, rmode: rnZero, ops: []operand{{kind: oReg}, {kind: oReg, reg: 1}, {kind: oReg, reg: 2}}},
		{op: opSub, t: tF32, ops: []operand{{kind: oReg}, {kind: oReg, reg: 1}, {kind: oReg, reg: 2}}},
		{op: opAdd, t: tF64, ops: []operand{{kind: oReg}, {kind: oReg, reg: 1}, {kind: oReg, reg: 2}}},
		{op: opSetp, t: tF32, ftz: true, ops: []operand{{kind: oReg}, {kind: oReg, reg: 1}, {kind: oReg, reg: 2}}},
		{op: opMov, t: tU32, ops: []operand{{kind: oReg}, {kind: oSpecial}}},
		{op: opMad, t: tF32, ops: []operand{{kind: oReg}, {kind: oReg, reg: 1}, {kind: oReg, reg: 2}, {kind: oReg, reg: 3}}},
		{op: opMul, t: tS32, ops: []operand{{kind: oReg}, {kind: oReg, reg: 1}, {kind: oReg, reg: 2}}},
		{op: opSelp, t: tU32, ops: []operand{{kind: oReg}, {kind: oReg, reg: 1}, {kind: oReg, reg: 2}, {kind: oReg, reg: 3}}},
	} {
		if f := fastForm(&in); f != fastNone {
			t.Fatalf("%v.%v with operands %+v: fast form %d, want none", in.op, in.t, in.ops, f)
		}
	}
}
