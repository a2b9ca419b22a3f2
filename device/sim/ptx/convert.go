package ptx

import "math"

// F32ToF16 is cvt.rn.f16.f32: f rounded to IEEE binary16 to nearest even,
// overflowing to infinity, with subnormal results kept; a NaN becomes the
// canonical NaN 0x7fff.
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return 0x7fff
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		if e < -10 {
			return sign // below half the smallest subnormal
		}
		m := mant | 0x800000
		shift := uint(14 - e)
		h := m >> shift
		rem := m & (1<<shift - 1)
		halfway := uint32(1) << (shift - 1)
		if rem > halfway || (rem == halfway && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // a carry into the exponent is right, up to infinity
	}
	return sign | uint16(h)
}

// F16ToF32 is cvt.f32.f16: exact; a NaN keeps its payload and is quieted.
func F16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f:
		if mant != 0 {
			return math.Float32frombits(sign | 0x7fc00000 | mant<<13)
		}
		return math.Float32frombits(sign | 0x7f800000)
	case exp == 0:
		v := float32(mant) * (1.0 / (1 << 24)) // exact: mant < 2^10
		return math.Float32frombits(sign | math.Float32bits(v))
	}
	return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
}

// F32ToBF16 is cvt.rn.bf16.f32: f rounded to bfloat16 to nearest even,
// overflowing to infinity; a NaN becomes the canonical NaN 0x7fff.
func F32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return 0x7fff
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}
