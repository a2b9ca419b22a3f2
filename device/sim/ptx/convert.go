package ptx

import (
	"fmt"
	"math"
	"math/bits"
)

// F32ToF16 is cvt.rn.f16.f32: f rounded to IEEE binary16 to nearest even,
// overflowing to infinity, with subnormal results kept; a NaN becomes the
// canonical NaN 0x7fff.
func F32ToF16(f float32) uint16 {
	return uint16(fromF64(float64(f), fmtF16, rnEven))
}

// F16ToF32 is cvt.f32.f16: exact; a NaN becomes the canonical NaN.
func F16ToF32(h uint16) float32 {
	return math.Float32frombits(uint32(widen(uint64(h), fmtF16, fmtF32)))
}

// F32ToBF16 is cvt.rn.bf16.f32: f rounded to bfloat16 to nearest even,
// overflowing to infinity; a NaN becomes the canonical NaN 0x7fff.
func F32ToBF16(f float32) uint16 {
	return uint16(fromF64(float64(f), fmtBF16, rnEven))
}

// widen converts bits b of format from to the wider format to exactly.
// NaNs convert as the GPU converts them: to f64 with sign and payload,
// quieted; from bf16 to f32 bit for bit; from f16 to f32 to the canonical
// NaN.
func widen(b uint64, from, to fpFormat) uint64 {
	if from.isNaN(b) {
		switch {
		case from == fmtBF16 && to == fmtF32:
			return b << 16
		case to == fmtF64:
			return math.Float64bits(toF64(b, from))
		}
		return to.nan()
	}
	return fromF64(toF64(b, from), to, rnEven)
}

// narrowNaN is the NaN a narrowing conversion of NaN b of format from
// gives: from f64, the sign with the default quiet NaN; from f32, the
// canonical NaN.
func narrowNaN(b uint64, from, to fpFormat) uint64 {
	if from != fmtF64 {
		return to.nan()
	}
	var s uint64
	if b&from.signBit() != 0 {
		s = to.signBit()
	}
	return s | to.expMax()<<(to.p-1) | 1<<(to.p-2)
}

// floatFormat is the format of a floating-point type.
func floatFormat(t typ) fpFormat {
	switch t {
	case tF16:
		return fmtF16
	case tBF16:
		return fmtBF16
	case tF32:
		return fmtF32
	}
	return fmtF64
}

// cvtRule is how a decoded cvt converts.
type cvtRule uint8

const (
	cvtIntInt cvtRule = iota
	cvtIntFloat
	cvtFloatInt
	cvtFloatWiden
	cvtFloatNarrow
	cvtFloatRound // same format: round to an integral value (.rni etc.) or flush/saturate
	cvtPair       // cvt.rn.f16x2.f32 / cvt.rn.bf16x2.f32: two sources
)

// decodeCvt checks that cvt's types and modifiers form a conversion the
// interpreter performs exactly and records how.
func decodeCvt(in *inst) error {
	dst, src := in.t, in.t2
	intRound := in.irnd
	switch {
	case dst == tF16x2 || dst == tBF16x2:
		if src != tF32 || in.rmode != rnEven && in.rmode != rnZero || intRound || in.ftz || in.sat {
			return fmt.Errorf("line %d: unsupported conversion %s", in.line, in.text)
		}
		in.cvt = cvtPair
	case !dst.float() && !src.float():
		if in.rmode != rnNone || in.ftz || in.relu {
			return fmt.Errorf("line %d: %s: no rounding between integers", in.line, in.text)
		}
		in.cvt = cvtIntInt
	case (dst == tBF16 || src == tBF16) && (dst.size() == 1 || src.size() == 1):
		return fmt.Errorf("line %d: unsupported conversion %s", in.line, in.text)
	case dst.float() && !src.float():
		if in.rmode == rnNone || intRound || in.relu {
			return fmt.Errorf("line %d: %s: an integer-to-float conversion needs .rn, .rz, .rm or .rp", in.line, in.text)
		}
		in.cvt = cvtIntFloat
	case !dst.float() && src.float():
		if !intRound || in.relu {
			return fmt.Errorf("line %d: %s: a float-to-integer conversion needs .rni, .rzi, .rmi or .rpi", in.line, in.text)
		}
		in.cvt = cvtFloatInt
	case dst == src:
		if in.rmode != rnNone && !intRound || in.relu {
			return fmt.Errorf("line %d: unsupported conversion %s", in.line, in.text)
		}
		in.cvt = cvtFloatRound
	case floatFormat(dst).p > floatFormat(src).p && floatFormat(dst).ebits >= floatFormat(src).ebits:
		if in.rmode != rnNone || intRound || in.relu {
			return fmt.Errorf("line %d: %s: a widening conversion takes no rounding", in.line, in.text)
		}
		in.cvt = cvtFloatWiden
	default:
		if in.rmode == rnNone || intRound {
			return fmt.Errorf("line %d: %s: a narrowing conversion needs .rn, .rz, .rm or .rp", in.line, in.text)
		}
		in.cvt = cvtFloatNarrow
	}
	return nil
}

// convert is cvt from in.t2 to in.t of the source value v (and, for the
// packed conversions, the second source w).
func convert(in *inst, v, w uint64) uint64 {
	dst, src := in.t, in.t2
	switch in.cvt {
	case cvtIntInt:
		if in.sat {
			return satInt(v, src, dst)
		}
		if src.signed() {
			return trunc(uint64(sext(v, src)), dst)
		}
		return trunc(trunc(v, src), dst)
	case cvtIntFloat:
		f := floatFormat(dst)
		var r uint64
		if src.signed() {
			x := sext(v, src)
			if x < 0 {
				r = round(true, uint64(-x), 0, false, f, in.rmode)
			} else {
				r = round(false, uint64(x), 0, false, f, in.rmode)
			}
		} else {
			r = round(false, trunc(v, src), 0, false, f, in.rmode)
		}
		return postFloat(in, r, f)
	case cvtFloatInt:
		f := floatFormat(src)
		if in.ftz {
			v = flush32(v, f)
		}
		return floatToInt(v, f, dst, in.rmode)
	case cvtFloatWiden:
		from, to := floatFormat(src), floatFormat(dst)
		if in.ftz {
			v = flush32(v, from)
		}
		return postFloat(in, widen(v, from, to), to)
	case cvtFloatNarrow:
		from, to := floatFormat(src), floatFormat(dst)
		if in.ftz {
			v = flush32(v, from)
		}
		if from.isNaN(v) {
			return postFloat(in, narrowNaN(v, from, to), to)
		}
		return postFloat(in, fromF64(toF64(v, from), to, in.rmode), to)
	case cvtFloatRound:
		f := floatFormat(dst)
		if in.ftz {
			v = f.flush(v)
		}
		switch {
		case f.isNaN(v) && f == fmtF64:
			v |= 1 << 51
		case f.isNaN(v):
			v = f.nan()
		case in.irnd:
			v = roundIntegral(v, f, in.rmode)
		}
		return postFloat(in, v, f)
	case cvtToFP8Pair, cvtToFP8Packed, cvtFromFP8:
		return convertFP8(in, v, w)
	case cvtPair:
		f := floatFormat(dst.scalar())
		hi := postFloat(in, fromF64(toF64(v, fmtF32), f, in.rmode), f)
		lo := postFloat(in, fromF64(toF64(w, fmtF32), f, in.rmode), f)
		return hi<<16 | lo
	}
	return 0
}

// flush32 is a conversion's .ftz of a source or result v of format f: it
// acts on f32 values only (a subnormal f16 or bf16 is kept, as an H200
// keeps it), flushing a subnormal to a zero of its sign and making a NaN
// the canonical one (cvt.ftz.f64.f32 of 0x7fc00000 is 0x7fffffffe0000000,
// cvt.ftz.f32.bf16 of 0x7fc0 is 0x7fffffff).
func flush32(v uint64, f fpFormat) uint64 {
	switch {
	case f != fmtF32:
		return v
	case f.isNaN(v):
		return f.nan()
	}
	return f.flush(v)
}

// postFloat applies a conversion's .ftz, .sat and .relu to its result.
func postFloat(in *inst, r uint64, f fpFormat) uint64 {
	if in.ftz {
		r = flush32(r, f)
	}
	if in.sat {
		r = saturate(r, f)
	}
	if in.relu && (r&f.signBit() != 0 && !f.isNaN(r)) {
		r = 0
	}
	if in.relu && f.isNaN(r) {
		r = f.nan()
	}
	return r
}

// satInt is cvt.sat between integer types: the source value clamped to
// the destination's range.
func satInt(v uint64, src, dst typ) uint64 {
	w := dst.bits()
	if src.signed() {
		x := sext(v, src)
		lo, hi := int64(0), int64(math.MaxInt64)
		if dst.signed() {
			lo, hi = -1<<(w-1), 1<<(w-1)-1
		} else if w < 64 {
			hi = 1<<w - 1
		}
		return trunc(uint64(min(max(x, lo), hi)), dst)
	}
	x := trunc(v, src)
	hi := uint64(math.MaxUint64)
	if dst.signed() {
		hi = 1<<(w-1) - 1
	} else if w < 64 {
		hi = 1<<w - 1
	}
	return trunc(min(x, hi), dst)
}

// roundIntegral rounds bits v of format f to an integral value in mode
// (cvt.rni.f32.f32 and the like); NaN gives the canonical NaN.
func roundIntegral(v uint64, f fpFormat, mode rmode) uint64 {
	neg, m, e, c := unpack(v, f)
	switch {
	case c == fpNaN:
		return f.nan()
	case c == fpInf || e >= 0 || m == 0:
		return v
	}
	n, inexact := shiftRound(neg, m, -e, mode)
	if n == 0 {
		if neg {
			return f.signBit()
		}
		return 0
	}
	_ = inexact
	return round(neg, n, 0, false, f, rnEven)
}

// shiftRound rounds m / 2^s to an integer in mode (neg is the sign of the
// value) and says whether it was inexact.
func shiftRound(neg bool, m uint64, s int, mode rmode) (uint64, bool) {
	var n, rem uint64
	var half, above bool
	switch {
	case s >= 65:
		n, rem = 0, m
	case s == 64:
		n, rem = 0, m
		above = m > 1<<63
		half = m == 1<<63
	default:
		n, rem = m>>uint(s), m&(1<<uint(s)-1)
		h := uint64(1) << uint(s-1)
		half, above = rem == h, rem > h
	}
	inexact := rem != 0
	up := false
	switch mode {
	case rnZero:
	case rnDown:
		up = neg && inexact
	case rnUp:
		up = !neg && inexact
	default:
		up = above || half && n&1 == 1
	}
	if up {
		n++
	}
	return n, inexact
}

// floatToInt converts bits v of format f to integer type dst, rounding in
// mode and saturating to dst's range. NaN converts to 0, except from f64
// or to a 64-bit integer, where it gives the top bit alone (as the GPU
// does).
func floatToInt(v uint64, f fpFormat, dst typ, mode rmode) uint64 {
	neg, m, e, c := unpack(v, f)
	w := dst.bits()
	var maxMag uint64 // the largest magnitude of dst in the value's direction
	switch {
	case dst.signed() && neg:
		maxMag = 1 << (w - 1)
	case dst.signed():
		maxMag = 1<<(w-1) - 1
	case neg:
		maxMag = 0
	case w == 64:
		maxMag = math.MaxUint64
	default:
		maxMag = 1<<w - 1
	}
	var mag uint64
	switch {
	case c == fpNaN && (f == fmtF64 || w == 64):
		return 1 << (w - 1)
	case c == fpNaN:
		return 0
	case c == fpInf:
		mag = maxMag
	case e >= 0:
		if bits.Len64(m)+e > 64 {
			mag = maxMag
		} else {
			mag = min(m<<uint(e), maxMag)
		}
	default:
		n, _ := shiftRound(neg, m, -e, mode)
		mag = min(n, maxMag)
	}
	if neg {
		return trunc(-mag, dst)
	}
	return trunc(mag, dst)
}
