package ptx

import "fmt"

// This file holds the forms of nvcc's newer targets: SIMD16 min and max,
// f32x2 arithmetic (in alu.go's floatOp), fp8 conversions, the hints
// (prefetch, griddepcontrol) and bar.warp.sync.

// minMax16x2 is min or max of .u16x2 or .s16x2: each 16-bit lane of a and
// b on its own; with .relu (s16x2), a negative lane result is 0.
func minMax16x2(isMax, signed, relu bool, a, b uint64) uint64 {
	var out uint64
	for sh := uint(0); sh < 32; sh += 16 {
		x, y := a>>sh&0xffff, b>>sh&0xffff
		var r uint64
		if signed {
			xs, ys := int16(x), int16(y)
			r = x
			if (ys < xs) != isMax && ys != xs {
				r = y
			}
			if relu && int16(r) < 0 {
				r = 0
			}
		} else {
			r = min(x, y)
			if isMax {
				r = max(x, y)
			}
		}
		out |= r << sh
	}
	return out
}

// hint decodes the instructions that change nothing the interpreter
// models: prefetch{.global,.local}.{L1,L2} and prefetchu.L1 (cache
// hints), and griddepcontrol.wait and .launch_dependents (programmatic
// dependent launch: the simulator runs the kernels of a stream one after
// the other, each starting once the one before it completed and its
// memory is visible, so a kernel has nothing to wait for and starting
// the next early is never done).
func hint(in *inst, base string, mods []string) error {
	ok := false
	switch base {
	case "griddepcontrol":
		ok = len(mods) == 1 && (mods[0] == "wait" || mods[0] == "launch_dependents")
	case "prefetchu":
		ok = len(mods) == 1 && mods[0] == "L1"
	case "prefetch":
		if len(mods) == 2 && (mods[0] == "global" || mods[0] == "local") {
			mods = mods[1:]
		}
		ok = len(mods) == 1 && (mods[0] == "L1" || mods[0] == "L2" || mods[0] == "L2::evict_last" || mods[0] == "L2::evict_normal")
	}
	if !ok {
		return unsupported(in)
	}
	return nil
}

// isFP8 reports whether t is an fp8 pair type.
func isFP8(t typ) bool { return t == tE4M3x2 || t == tE5M2x2 }

// Conversion rules of the fp8 forms.
const (
	cvtToFP8Pair   cvtRule = 100 + iota // cvt.rn.satfinite{.relu}.f8x2.f32 d, a, b
	cvtToFP8Packed                      // cvt.rn.satfinite{.relu}.f8x2.f16x2 d, a
	cvtFromFP8                          // cvt.rn{.relu}.f16x2.f8x2 d, a
)

// decodeCvtFP8 checks an fp8 conversion: to an fp8 pair from two f32 or
// from an f16x2, with .rn and .satfinite (which PTX requires), or from an
// fp8 pair to f16x2 with .rn; .relu is allowed on both.
func decodeCvtFP8(in *inst) error {
	bad := fmt.Errorf("line %d: unsupported conversion %s", in.line, in.text)
	if in.rmode != rnEven || in.irnd || in.ftz || in.sat {
		return bad
	}
	switch {
	case isFP8(in.t) && in.t2 == tF32 && in.satfin:
		in.cvt = cvtToFP8Pair
	case isFP8(in.t) && in.t2 == tF16x2 && in.satfin:
		in.cvt = cvtToFP8Packed
	case in.t == tF16x2 && isFP8(in.t2) && !in.satfin:
		in.cvt = cvtFromFP8
	default:
		return bad
	}
	return nil
}

// fp8 formats: e5m2 is an IEEE format (infinities, NaNs with exponent
// 31); e4m3 has no infinities and one NaN per sign (S.1111.111), so its
// exponent 15 holds normal values up to 448. Rounding to e4m3 uses
// fmtE4M3Wide, its layout with an exponent field wide enough that no
// value of it overflows; the bits of a result of at most 448 are then the
// e4m3 bits.
var (
	fmtE5M2     = fpFormat{p: 3, ebits: 5, bias: 15}
	fmtE4M3Wide = fpFormat{p: 4, ebits: 5, bias: 7}
)

const (
	e4m3Max = 0x7e // 448
	e4m3NaN = 0x7f
	e5m2Max = 0x7b // 57344
	e5m2NaN = 0x7f
)

// toFP8 converts bits v of format from (f32 or f16) to fp8 (e4m3 when
// e4m3, e5m2 otherwise), rounding to nearest even, saturating to the
// largest finite value (infinities too); NaN gives the fp8 NaN; .relu
// makes a negative result +0.
func toFP8(v uint64, from fpFormat, e4m3, relu bool) uint64 {
	neg, m, e, c := unpack(v, from)
	nan, maxF := uint64(e5m2NaN), uint64(e5m2Max)
	if e4m3 {
		nan, maxF = e4m3NaN, e4m3Max
	}
	var r uint64
	switch c {
	case fpNaN:
		return nan
	case fpInf:
		r = maxF
	default:
		if e4m3 {
			w := round(false, m, e, false, fmtE4M3Wide, rnEven)
			r = min(w, e4m3Max)
		} else {
			r = min(round(false, m, e, false, fmtE5M2, rnEven), e5m2Max)
		}
	}
	if neg {
		if relu {
			return 0
		}
		r |= 0x80
	}
	return r
}

// fromFP8 widens fp8 byte b to f16 bits exactly; an fp8 NaN gives the
// f16 canonical NaN; .relu makes a negative result +0.
func fromFP8(b uint64, e4m3, relu bool) uint64 {
	neg := b&0x80 != 0
	var r uint64
	switch {
	case e4m3 && b&0x7f == e4m3NaN, !e4m3 && fmtE5M2.isNaN(b):
		return fmtF16.nan()
	case e4m3:
		_, m, e, _ := unpack(b&0x7f, fmtE4M3Wide)
		r = round(false, m, e, false, fmtF16, rnEven)
	default:
		r = (b & 0x7f) << 8 // e5m2 is the top byte of an f16
	}
	if neg {
		if relu {
			return 0
		}
		r |= fmtF16.signBit()
	}
	return r
}

// convertFP8 is cvt of an fp8 rule: v (and w) the sources.
func convertFP8(in *inst, v, w uint64) uint64 {
	switch in.cvt {
	case cvtToFP8Pair:
		// a in the upper byte, b in the lower.
		return toFP8(v, fmtF32, in.t == tE4M3x2, in.relu)<<8 | toFP8(w, fmtF32, in.t == tE4M3x2, in.relu)
	case cvtToFP8Packed:
		return toFP8(v>>16&0xffff, fmtF16, in.t == tE4M3x2, in.relu)<<8 | toFP8(v&0xffff, fmtF16, in.t == tE4M3x2, in.relu)
	}
	return fromFP8(v>>8&0xff, in.t2 == tE4M3x2, in.relu)<<16 | fromFP8(v&0xff, in.t2 == tE4M3x2, in.relu)
}
