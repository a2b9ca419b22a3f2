package ptx

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// TrapError is the error of a thread that reached trap or called
// __assertfail: the kernel stopped itself, as on a GPU.
type TrapError struct {
	What    string // "trap" or "assertion failed (__assertfail)"
	Printed string // the text of the thread's last vprintf before it, "" if none
}

func (e *TrapError) Error() string {
	if e.Printed != "" {
		return fmt.Sprintf("%s reached (the thread printed %q)", e.What, e.Printed)
	}
	return e.What + " reached"
}

// errDivZero is integer division by zero, whose result the PTX ISA leaves
// unspecified: reaching it is an error of the kernel.
var errDivZero = errors.New("integer division by zero (the PTX ISA leaves its result unspecified)")

// alu executes the instructions that only read and write registers.
func (t *Thread) alu(f *frame, in *inst) error {
	r := f.regs
	switch in.op {
	case opMov:
		return t.mov(f, in)
	case opSetp:
		a, b := t.value(f, &in.ops[1], in.t), t.value(f, &in.ops[2], in.t)
		var p bool
		if in.t.float() {
			p = fcompare(in.cmp, floatFormat(in.t), in.ftz, a, b)
		} else if in.t.signed() {
			p = ordered(in.cmp, sext(a, in.t), sext(b, in.t))
		} else {
			p = ordered(in.cmp, trunc(a, in.t), trunc(b, in.t))
		}
		if d := &in.ops[0]; d.kind == oVec {
			r[d.vec[0]], r[d.vec[1]] = b2u(p), b2u(!p)
		} else {
			r[d.reg] = b2u(p)
		}
	case opSelp:
		if t.value(f, &in.ops[3], tPred) != 0 {
			r[in.ops[0].reg] = t.value(f, &in.ops[1], in.t)
		} else {
			r[in.ops[0].reg] = t.value(f, &in.ops[2], in.t)
		}
	case opCvt:
		var w uint64
		if in.cvt == cvtPair || in.cvt == cvtToFP8Pair {
			w = t.value(f, &in.ops[2], in.t2)
		}
		v := convert(in, t.value(f, &in.ops[1], in.t2), w)
		r[in.ops[0].reg] = extend(v, in.t, in.dstSize)
	case opCvta:
		r[in.ops[0].reg] = t.value(f, &in.ops[1], in.t)
	case opMapa:
		// A cluster is one block: rank 0 is the block itself, whose
		// addresses stay as they are.
		if rank := t.value(f, &in.ops[2], tU32); uint32(rank) != 0 {
			return fmt.Errorf("mapa to block %d of the cluster: the simulator launches clusters of one block (rank 0)", uint32(rank))
		}
		r[in.ops[0].reg] = t.value(f, &in.ops[1], in.t)
	case opNop, opHint:
		// nanosleep, prefetch, griddepcontrol: no effect on what the
		// interpreter models (see hint).
	default:
		a := t.value(f, &in.ops[1], in.t)
		var b, c, e uint64
		if len(in.ops) > 2 {
			b = t.value(f, &in.ops[2], in.t)
		}
		if len(in.ops) > 3 {
			c = t.value(f, &in.ops[3], in.t)
		}
		if len(in.ops) > 4 {
			e = t.value(f, &in.ops[4], in.t)
		}
		v, err := compute(in, a, b, c, e, f, t)
		if err != nil {
			return err
		}
		r[in.ops[0].reg] = v
	}
	return nil
}

// mov copies a value, or packs registers into one or unpacks one into
// several ({a, b} operands).
func (t *Thread) mov(f *frame, in *inst) error {
	dst, src := &in.ops[0], &in.ops[1]
	switch {
	case src.kind == oVec:
		w := in.t.bits() / uint(len(src.vec))
		var v uint64
		for i, s := range src.vec {
			v |= (f.regs[s] & (1<<w - 1)) << (w * uint(i))
		}
		f.regs[dst.reg] = v
	case dst.kind == oVec:
		w := in.t.bits() / uint(len(dst.vec))
		v := t.value(f, src, in.t)
		for i, d := range dst.vec {
			f.regs[d] = (v >> (w * uint(i))) & (1<<w - 1)
		}
	default:
		f.regs[dst.reg] = t.value(f, src, in.t)
	}
	return nil
}

// compute evaluates the arithmetic, logic and bit instructions of
// operands a, b, c and e (as many as the instruction has).
func compute(in *inst, a, b, c, e uint64, f *frame, t *Thread) (uint64, error) {
	ty := in.t
	if ty.float() {
		return floatOp(in, a, b, c), nil
	}
	switch in.op {
	case opPrmt:
		return prmt(in.mode, uint32(a), uint32(b), uint32(c)), nil
	case opLop3:
		return trunc(lop3(a, b, c, uint8(e)), ty), nil
	case opBfe:
		return bfe(ty, a, b, c), nil
	case opBfi:
		return bfi(ty, a, b, c, e), nil
	case opPopc:
		return uint64(bits.OnesCount64(trunc(a, ty))), nil
	case opClz:
		return uint64(bits.LeadingZeros64(trunc(a, ty)) - (64 - int(ty.bits()))), nil
	case opBrev:
		return bits.Reverse64(a) >> (64 - ty.bits()), nil
	case opNot:
		if ty == tPred {
			return b2u(a == 0), nil
		}
		return trunc(^a, ty), nil
	case opCnot:
		return b2u(trunc(a, ty) == 0), nil
	case opNeg:
		return trunc(-a, ty), nil
	case opAbs:
		if sext(a, ty) < 0 {
			return trunc(-a, ty), nil
		}
		return trunc(a, ty), nil
	}
	return intArith(in, a, b, c)
}

// intArith evaluates the binary (and mad's ternary) integer and bitwise
// operations.
func intArith(in *inst, a, b, c uint64) (uint64, error) {
	ty := in.t
	if ty.simd16() {
		return minMax16x2(in.op == opMax, ty == tS16x2, in.relu, a, b), nil
	}
	if ty == tPred {
		switch in.op {
		case opAnd:
			return a & b, nil
		case opOr:
			return a | b, nil
		case opXor:
			return a ^ b, nil
		}
		return 0, errors.New("not a predicate operation")
	}
	switch in.op {
	case opAdd, opSub:
		if in.sat {
			x, y := int64(int32(a)), int64(int32(b))
			if in.op == opSub {
				y = -y
			}
			return trunc(uint64(min(max(x+y, math.MinInt32), math.MaxInt32)), ty), nil
		}
		if in.op == opSub {
			return trunc(a-b, ty), nil
		}
		return trunc(a+b, ty), nil
	case opMul:
		return mul(in, a, b), nil
	case opMad:
		if in.wide {
			return mul(in, a, b) + c, nil
		}
		return trunc(mul(in, a, b)+c, ty), nil
	case opDiv, opRem:
		if trunc(b, ty) == 0 {
			return 0, errDivZero
		}
		if ty.signed() {
			x, y := sext(a, ty), sext(b, ty)
			if y == -1 {
				// The quotient of the most negative value wraps; the
				// remainder is 0 (Go's x/-1 would do the same for int64).
				if in.op == opDiv {
					return trunc(uint64(-x), ty), nil
				}
				return 0, nil
			}
			if in.op == opDiv {
				return trunc(uint64(x/y), ty), nil
			}
			return trunc(uint64(x%y), ty), nil
		}
		a, b = trunc(a, ty), trunc(b, ty)
		if in.op == opDiv {
			return a / b, nil
		}
		return a % b, nil
	case opMin, opMax:
		less := trunc(a, ty) < trunc(b, ty)
		if ty.signed() {
			less = sext(a, ty) < sext(b, ty)
		}
		if less == (in.op == opMin) {
			return trunc(a, ty), nil
		}
		return trunc(b, ty), nil
	case opAnd:
		return a & b, nil
	case opOr:
		return a | b, nil
	case opXor:
		return a ^ b, nil
	case opShl, opShr:
		n := uint32(b)
		w := ty.bits()
		if in.op == opShl {
			if n >= uint32(w) {
				return 0, nil
			}
			return trunc(a<<n, ty), nil
		}
		if ty.signed() {
			n = min(n, uint32(w-1))
			return trunc(uint64(sext(a, ty)>>n), ty), nil
		}
		if n >= uint32(w) {
			return 0, nil
		}
		return trunc(a, ty) >> n, nil
	}
	return 0, errors.New("not an integer operation")
}

// mul is mul.lo, mul.hi or mul.wide (and mad's product) of type in.t.
func mul(in *inst, a, b uint64) uint64 {
	ty := in.t
	signed := ty.signed()
	switch {
	case in.wide:
		if signed {
			return uint64(sext(a, ty) * sext(b, ty))
		}
		return trunc(a, ty) * trunc(b, ty)
	case in.hi:
		w := ty.bits()
		if w == 64 {
			hi, _ := bits.Mul64(a, b)
			if signed {
				// Correct the unsigned high word for signed operands.
				if int64(a) < 0 {
					hi -= b
				}
				if int64(b) < 0 {
					hi -= a
				}
			}
			return hi
		}
		if signed {
			return trunc(uint64((sext(a, ty)*sext(b, ty))>>w), ty)
		}
		return trunc((trunc(a, ty)*trunc(b, ty))>>w, ty)
	}
	return trunc(a*b, ty)
}

// floatOp evaluates a float instruction; packed types operate on each
// half.
func floatOp(in *inst, a, b, c uint64) uint64 {
	if in.t == tF32x2 {
		lo := floatScalar(in, tF32, a&0xffffffff, b&0xffffffff, c&0xffffffff)
		hi := floatScalar(in, tF32, a>>32, b>>32, c>>32)
		return hi<<32 | lo
	}
	if in.t.packed() {
		lo := floatScalar(in, in.t.scalar(), a&0xffff, b&0xffff, c&0xffff)
		hi := floatScalar(in, in.t.scalar(), a>>16&0xffff, b>>16&0xffff, c>>16&0xffff)
		return hi<<16 | lo
	}
	return floatScalar(in, in.t, a, b, c)
}

func floatScalar(in *inst, ty typ, a, b, c uint64) uint64 {
	fm := floatFormat(ty)
	switch in.op {
	case opRsqrt:
		table, _ := rsqrtTable() // loaded when the instruction was decoded
		return rsqrtApprox(a, in.ftz, table)
	case opAdd:
		if ty == tF32 && (in.rmode == rnNone || in.rmode == rnEven) && !in.ftz && !in.sat {
			return f32Result(f32(a) + f32(b))
		}
		return farith(fAdd, fm, in.rmode, in.ftz, in.sat, a, b, 0)
	case opSub:
		return farith(fSub, fm, in.rmode, in.ftz, in.sat, a, b, 0)
	case opMul:
		if ty == tF32 && (in.rmode == rnNone || in.rmode == rnEven) && !in.ftz && !in.sat {
			return f32Result(f32(a) * f32(b))
		}
		return farith(fMul, fm, in.rmode, in.ftz, in.sat, a, b, 0)
	case opFma:
		return farith(fFma, fm, in.rmode, in.ftz, in.sat, a, b, c)
	case opDiv:
		if ty == tF32 && in.rmode == rnEven && !in.ftz && !in.sat {
			return f32Result(f32(a) / f32(b))
		}
		return farith(fDiv, fm, in.rmode, in.ftz, in.sat, a, b, 0)
	case opMin, opMax:
		return fminmax(in.op == opMax, fm, in.ftz, in.nanOut, a, b)
	case opNeg, opAbs:
		if in.ftz {
			a = fm.flush(a)
		}
		if fm.isNaN(a) {
			if ty == tF64 {
				return a | 1<<51 // quieted, its sign kept
			}
			return fm.nan()
		}
		if in.op == opNeg {
			return a ^ fm.signBit()
		}
		return a &^ fm.signBit()
	}
	return 0
}

// f32Result is the bits of an f32 result, a NaN made canonical.
func f32Result(x float32) uint64 {
	if x != x {
		return fmtF32.nan()
	}
	return uint64(math.Float32bits(x))
}

// prmt is the byte permute of a and b (bytes 0-3 and 4-7) by selector c.
func prmt(mode uint8, a, b, c uint32) uint64 {
	src := uint64(b)<<32 | uint64(a)
	byteAt := func(i uint32) uint32 { return uint32(src>>(8*(i&7))) & 0xff }
	var sel [4]uint32
	n := c & 3
	switch mode {
	case prmtGeneric:
		var d uint32
		for i := 0; i < 4; i++ {
			s := c >> (4 * i) & 0xf
			v := byteAt(s & 7)
			if s&8 != 0 {
				v = 0
				if byteAt(s&7)&0x80 != 0 {
					v = 0xff
				}
			}
			d |= v << (8 * i)
		}
		return uint64(d)
	case prmtF4e:
		sel = [4]uint32{n, n + 1, n + 2, n + 3}
	case prmtB4e:
		sel = [4]uint32{n, n + 7, n + 6, n + 5}
	case prmtRc8:
		sel = [4]uint32{n, n, n, n}
	case prmtEcl:
		sel = [4]uint32{n, max(n, 1), max(n, 2), 3}
	case prmtEcr:
		sel = [4]uint32{0, min(n, 1), min(n, 2), n}
	case prmtRc16:
		h := (n & 1) * 2
		sel = [4]uint32{h, h + 1, h, h + 1}
	}
	var d uint32
	for i, s := range sel {
		d |= byteAt(s) << (8 * i)
	}
	return uint64(d)
}

// lop3 is the logic operation of three inputs whose truth table is lut.
func lop3(a, b, c uint64, lut uint8) uint64 {
	var d uint64
	for i := 0; i < 8; i++ {
		if lut>>i&1 == 0 {
			continue
		}
		x, y, z := ^a, ^b, ^c
		if i&4 != 0 {
			x = a
		}
		if i&2 != 0 {
			y = b
		}
		if i&1 != 0 {
			z = c
		}
		d |= x & y & z
	}
	return d
}

// bfe extracts the bit field of a at position b&0xff and length c&0xff,
// sign-extended for the signed types.
func bfe(ty typ, a, b, c uint64) uint64 {
	msb := int(ty.bits()) - 1
	pos, n := fieldBounds(ty, b, c)
	var sbit uint64
	if ty.signed() && n > 0 {
		sbit = a >> uint(min(pos+n-1, msb)) & 1
	}
	var d uint64
	for i := 0; i <= msb; i++ {
		bit := sbit
		if i < n && pos+i <= msb {
			bit = a >> uint(pos+i) & 1
		}
		d |= bit << uint(i)
	}
	return d
}

// fieldBounds is the position and length of a bit field: the low 8 bits
// of the operands for 32-bit fields; the 64-bit forms use the whole 32-bit
// operands (as the GPU does).
func fieldBounds(ty typ, pos, n uint64) (int, int) {
	if ty.bits() == 64 {
		return int(min(uint32(pos), 1<<16)), int(min(uint32(n), 1<<16))
	}
	return int(pos & 0xff), int(n & 0xff)
}

// bfi inserts the field a of length e&0xff into b at position c&0xff.
func bfi(ty typ, a, b, c, e uint64) uint64 {
	msb := int(ty.bits()) - 1
	pos, n := fieldBounds(ty, c, e)
	d := trunc(b, ty)
	for i := 0; i < n && pos+i <= msb; i++ {
		d = d&^(1<<uint(pos+i)) | (a>>uint(i)&1)<<uint(pos+i)
	}
	return d
}

// ordered is an integer comparison of setp.
func ordered[T int64 | uint64](c cmpOp, x, y T) bool {
	switch c {
	case cmpEq:
		return x == y
	case cmpNe:
		return x != y
	case cmpLt:
		return x < y
	case cmpLe:
		return x <= y
	case cmpGt:
		return x > y
	case cmpGe:
		return x >= y
	}
	return false
}

// extend widens value v of type ty to a destination register of size
// bytes: sign-extended for the signed types, zero-extended otherwise (as
// ld and cvt do into wider registers).
func extend(v uint64, ty typ, size uint8) uint64 {
	if int(size) <= ty.size() || !ty.signed() {
		return trunc(v, ty)
	}
	return trunc(uint64(sext(v, ty)), sizeType(int(size)))
}

// sizeType is the unsigned type of size bytes.
func sizeType(size int) typ {
	switch size {
	case 1:
		return tU8
	case 2:
		return tU16
	case 4:
		return tU32
	}
	return tU64
}

// f32 reads the low 32 bits of a register as a float32.
func f32(v uint64) float32 { return math.Float32frombits(uint32(v)) }
