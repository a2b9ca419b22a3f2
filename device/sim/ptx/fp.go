package ptx

import (
	"math"
	"math/bits"
)

// This file holds the floating-point arithmetic of the interpreter: one
// rounding routine for every binary format, and exact operations that
// compute in float64 with rounding to odd (so that the final rounding to a
// narrower format is a single correct rounding in any mode).

// fpFormat describes an IEEE binary format.
type fpFormat struct {
	p     uint // precision in bits, with the implicit bit
	ebits uint // exponent bits
	bias  int
}

var (
	fmtF16  = fpFormat{p: 11, ebits: 5, bias: 15}
	fmtBF16 = fpFormat{p: 8, ebits: 8, bias: 127}
	fmtF32  = fpFormat{p: 24, ebits: 8, bias: 127}
	fmtF64  = fpFormat{p: 53, ebits: 11, bias: 1023}
)

func (f fpFormat) width() uint      { return 1 + f.ebits + f.p - 1 }
func (f fpFormat) emin() int        { return 1 - f.bias }
func (f fpFormat) expMax() uint64   { return 1<<f.ebits - 1 }
func (f fpFormat) signBit() uint64  { return 1 << (f.width() - 1) }
func (f fpFormat) mantMask() uint64 { return 1<<(f.p-1) - 1 }

// nan is the canonical NaN the GPU produces in format f.
func (f fpFormat) nan() uint64 {
	return 1<<(f.width()-1) - 1
}

// isNaN reports whether bits b of format f are a NaN.
func (f fpFormat) isNaN(b uint64) bool {
	return (b>>(f.p-1))&f.expMax() == f.expMax() && b&f.mantMask() != 0
}

// isSubnormal reports whether b is a nonzero subnormal of format f.
func (f fpFormat) isSubnormal(b uint64) bool {
	return (b>>(f.p-1))&f.expMax() == 0 && b&f.mantMask() != 0
}

// flush is .ftz: a subnormal becomes a zero of its sign.
func (f fpFormat) flush(b uint64) uint64 {
	if f.isSubnormal(b) {
		return b & f.signBit()
	}
	return b
}

// rmode is a rounding mode.
type rmode uint8

const (
	rnNone rmode = iota // no rounding modifier
	rnEven              // .rn / .rni
	rnZero              // .rz / .rzi
	rnDown              // .rm / .rmi
	rnUp                // .rp / .rpi
)

// round returns the bits, in format f, of (m + s) * 2^e rounded in mode,
// where s is an infinitesimal positive amount when sticky is set (the
// value lies strictly between m and m+1 units of 2^e) and neg is the sign.
func round(neg bool, m uint64, e int, sticky bool, f fpFormat, mode rmode) uint64 {
	var sign uint64
	if neg {
		sign = f.signBit()
	}
	if m == 0 && !sticky {
		return sign
	}
	p := int(f.p)
	var q int // the exponent of the result's last bit
	if m == 0 {
		q = f.emin() - (p - 1)
		if e > q {
			q = e
		}
	} else {
		top := e + bits.Len64(m) - 1
		q = max(top-(p-1), f.emin()-(p-1))
	}
	shift := q - e
	var mant uint64
	half, above, exact := false, false, !sticky
	switch {
	case shift <= 0:
		mant = m << uint(-shift)
	case shift > 64:
		mant = 0
		above = false
		exact = exact && m == 0
	default:
		var rem uint64
		if shift == 64 {
			mant, rem = 0, m
		} else {
			mant, rem = m>>uint(shift), m&(1<<uint(shift)-1)
		}
		h := uint64(1) << uint(shift-1)
		half = rem == h
		above = rem > h
		exact = exact && rem == 0
	}
	up := false
	switch mode {
	case rnZero:
	case rnDown:
		up = neg && !exact
	case rnUp:
		up = !neg && !exact
	default:
		up = above || (half && (sticky || mant&1 == 1))
	}
	if up {
		mant++
	}
	if mant == 1<<uint(p) {
		mant >>= 1
		q++
	}
	var exp uint64
	if mant >= 1<<uint(p-1) {
		exp = uint64(q + p - 1 + f.bias)
	}
	if q+p-1+f.bias >= int(f.expMax()) && mant >= 1<<uint(p-1) {
		inf := f.expMax() << (f.p - 1)
		maxFinite := inf - 1
		switch {
		case mode == rnZero, mode == rnDown && !neg, mode == rnUp && neg:
			return sign | maxFinite
		}
		return sign | inf
	}
	return sign | exp<<(f.p-1) | mant&f.mantMask()
}

// decoded is a finite value of a format as m * 2^e.
type fpClass uint8

const (
	fpFinite fpClass = iota
	fpInf
	fpNaN
)

// unpack splits bits b of format f into sign, mantissa and exponent.
func unpack(b uint64, f fpFormat) (neg bool, m uint64, e int, c fpClass) {
	neg = b&f.signBit() != 0
	exp := (b >> (f.p - 1)) & f.expMax()
	mant := b & f.mantMask()
	switch {
	case exp == f.expMax() && mant != 0:
		return neg, mant, 0, fpNaN
	case exp == f.expMax():
		return neg, 0, 0, fpInf
	case exp == 0:
		return neg, mant, f.emin() - int(f.p-1), fpFinite
	}
	return neg, mant | 1<<(f.p-1), int(exp) - f.bias - int(f.p-1), fpFinite
}

// toF64 widens bits b of format f exactly (a NaN keeps its payload,
// quieted).
func toF64(b uint64, f fpFormat) float64 {
	if f == fmtF64 {
		return math.Float64frombits(b)
	}
	neg, m, e, c := unpack(b, f)
	var v float64
	switch c {
	case fpNaN:
		s := uint64(0)
		if neg {
			s = 1 << 63
		}
		return math.Float64frombits(s | 0x7ff8_0000_0000_0000 | m<<(53-f.p))
	case fpInf:
		v = math.Inf(1)
	default:
		v = math.Ldexp(float64(m), e)
	}
	if neg {
		v = -v
	}
	return v
}

// fromF64 rounds x to format f in mode; a NaN becomes f's canonical NaN.
func fromF64(x float64, f fpFormat, mode rmode) uint64 {
	b := math.Float64bits(x)
	neg, m, e, c := unpack(b, fmtF64)
	switch c {
	case fpNaN:
		return f.nan()
	case fpInf:
		inf := f.expMax() << (f.p - 1)
		if neg {
			return f.signBit() | inf
		}
		return inf
	}
	return round(neg, m, e, false, f, mode)
}

// nudgeOdd makes the round-to-nearest result s of an operation whose exact
// value is s+err (err's sign is what matters) the round-to-odd result.
func nudgeOdd(s float64, errSign float64) float64 {
	if errSign == 0 || math.IsInf(s, 0) || math.IsNaN(s) || math.Float64bits(s)&1 == 1 {
		return s
	}
	if errSign > 0 {
		return math.Nextafter(s, math.Inf(1))
	}
	return math.Nextafter(s, math.Inf(-1))
}

// addOdd is a+b rounded to odd (exact for operands of narrower formats,
// which cannot overflow the error computation).
func addOdd(a, b float64) float64 {
	s := a + b
	if math.IsInf(s, 0) || math.IsNaN(s) {
		return s
	}
	bb := s - a
	err := (a - (s - bb)) + (b - bb)
	return nudgeOdd(s, err)
}

// divOdd is a/b rounded to odd, for operands of narrower formats.
func divOdd(a, b float64) float64 {
	q := a / b
	if math.IsInf(q, 0) || math.IsNaN(q) || q == 0 || math.IsInf(a, 0) || math.IsInf(b, 0) {
		return q
	}
	r := math.FMA(-q, b, a) // exact: a - q*b
	if r == 0 {
		return q
	}
	if (r > 0) == (b > 0) {
		return nudgeOdd(q, 1)
	}
	return nudgeOdd(q, -1)
}

// fop is a floating-point operation of the interpreter.
type fop uint8

const (
	fAdd fop = iota
	fSub
	fMul
	fFma
	fDiv
)

// farith computes op on operands a, b, c (bits of format f) rounded in
// mode, with .ftz and .sat applied as asked. f64 operations support only
// round to nearest (the decoder refuses the others).
func farith(op fop, f fpFormat, mode rmode, ftz, sat bool, a, b, c uint64) uint64 {
	if ftz {
		a, b, c = f.flush(a), f.flush(b), f.flush(c)
	}
	if mode == rnNone {
		mode = rnEven
	}
	x, y, z := toF64(a, f), toF64(b, f), toF64(c, f)
	var r uint64
	if f == fmtF64 {
		// A NaN operand propagates, quieted, in the order the GPU picks
		// them; an invalid operation gives the default NaN.
		order := [...]uint64{b, a, c}
		if op == fDiv {
			order = [...]uint64{a, b, 0}
		}
		for _, v := range order[:nOperands(op)] {
			if f.isNaN(v) {
				return v | 1<<51
			}
		}
		var v float64
		switch op {
		case fAdd:
			v = x + y
		case fSub:
			v = x - y
		case fMul:
			v = x * y
		case fFma:
			v = math.FMA(x, y, z)
		case fDiv:
			v = x / y
		}
		if math.IsNaN(v) {
			r = 0xfff8_0000_0000_0000
		} else {
			r = math.Float64bits(v)
		}
	} else {
		var v float64
		switch op {
		case fAdd:
			v = addOdd(x, y)
		case fSub:
			v = addOdd(x, -y)
		case fMul:
			v = x * y // exact for the narrower formats
		case fFma:
			v = addOdd(x*y, z)
		case fDiv:
			v = divOdd(x, y)
		}
		if v == 0 && mode == rnDown && op != fMul && op != fDiv {
			v = zeroSum(op, x, y, z)
		}
		if ftz && tinyAfterRounding(v, f, mode) {
			v = math.Copysign(0, v)
		}
		r = fromF64(v, f, mode)
	}
	if ftz {
		r = f.flush(r)
	}
	if sat {
		r = saturate(r, f)
	}
	return r
}

// tinyAfterRounding reports whether v, nonzero, rounded in mode to the
// precision of f with an unbounded exponent, lies below f's smallest
// normal: what .ftz flushes. A value just below the smallest normal that
// rounds up to it is kept (fma.rn.ftz.f32 of 2^-126, 2^-126 and -2^-126 is
// -2^-126 on an H200, not -0).
func tinyAfterRounding(v float64, f fpFormat, mode rmode) bool {
	if v == 0 || math.Abs(v) >= math.Ldexp(1, f.emin()) {
		return false
	}
	// Scaled so that the smallest normal is 1, v rounds as a normal of f.
	w := toF64(fromF64(math.Ldexp(v, -f.emin()), f, mode), f)
	return math.Abs(w) < 1
}

func nOperands(op fop) int {
	if op == fFma {
		return 3
	}
	return 2
}

// zeroSum is the zero that an exact sum of zero rounds to downwards: -0,
// unless both terms are +0.
func zeroSum(op fop, x, y, z float64) float64 {
	p, q := x, y
	switch op {
	case fSub:
		q = -y
	case fFma:
		p, q = x*y, z
	}
	if p == 0 && q == 0 && !math.Signbit(p) && !math.Signbit(q) {
		return 0
	}
	return math.Copysign(0, -1)
}

// saturate is .sat: the result clamped to [0.0, 1.0], NaN to 0.
func saturate(r uint64, f fpFormat) uint64 {
	if f.isNaN(r) || r&f.signBit() != 0 {
		return 0
	}
	one := uint64(f.bias) << (f.p - 1)
	if r > one {
		return one
	}
	return r
}

// fminmax is min or max of a and b of format f: a NaN operand yields the
// other; -0 is less than +0. With nanOut (.NaN), any NaN operand gives the
// canonical NaN.
func fminmax(isMax bool, f fpFormat, ftz, nanOut bool, a, b uint64) uint64 {
	if ftz {
		a, b = f.flush(a), f.flush(b)
	}
	an, bn := f.isNaN(a), f.isNaN(b)
	switch {
	case an && bn && f == fmtF64:
		return b | 1<<51
	case an && bn, (an || bn) && nanOut:
		return f.nan()
	case an:
		return b
	case bn:
		return a
	}
	less := fless(f, a, b)
	if less != isMax {
		return a
	}
	return b
}

// fless orders two non-NaN values of format f, -0 below +0.
func fless(f fpFormat, a, b uint64) bool {
	as, bs := a&f.signBit() != 0, b&f.signBit() != 0
	switch {
	case as && !bs:
		return true
	case !as && bs:
		return false
	case as:
		return a > b
	}
	return a < b
}

// fcompare is setp's comparison of two values of format f.
func fcompare(c cmpOp, f fpFormat, ftz bool, a, b uint64) bool {
	if ftz {
		a, b = f.flush(a), f.flush(b)
	}
	var x, y float64
	if f == fmtF32 {
		// Widening is exact, and a comparison never looks at a NaN's
		// payload.
		x, y = float64(math.Float32frombits(uint32(a))), float64(math.Float32frombits(uint32(b)))
	} else {
		x, y = toF64(a, f), toF64(b, f)
	}
	nan := x != x || y != y
	switch c {
	case cmpEq:
		return x == y
	case cmpNe:
		return !nan && x != y
	case cmpLt:
		return x < y
	case cmpLe:
		return x <= y
	case cmpGt:
		return x > y
	case cmpGe:
		return x >= y
	case cmpEqu:
		return nan || x == y
	case cmpNeu:
		return x != y
	case cmpLtu:
		return nan || x < y
	case cmpLeu:
		return nan || x <= y
	case cmpGtu:
		return nan || x > y
	case cmpGeu:
		return nan || x >= y
	case cmpNum:
		return !nan
	case cmpNan:
		return nan
	}
	return false
}
