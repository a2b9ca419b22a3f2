package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	"github.com/symmem/symmem/device"
)

// Canonical quiet NaNs that reductions store (the values CUDA produces).
const (
	CanonicalNaN32   uint32 = 0x7fffffff
	CanonicalNaNBF16 uint16 = 0x7fff
	CanonicalNaNF16  uint16 = 0x7fff
)

// BF16FromFloat32 converts f to bfloat16 bits, rounding to nearest even.
// NaNs stay NaN: the top 16 bits are kept and the quiet bit is set.
func BF16FromFloat32(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x0040
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// BF16ToFloat32 converts bfloat16 bits to float32 exactly.
func BF16ToFloat32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F16FromFloat32 converts f to IEEE binary16 bits, rounding to nearest even.
// NaNs stay NaN: the sign and the top 10 payload bits are kept and the
// quiet bit is set.
func F16FromFloat32(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	a := b & 0x7fffffff
	switch {
	case a >= f16MinNormal && a < f16Overflow:
		// A normal result: rebias the exponent (127 to 15) and round the
		// 13 bits dropped, to even; a carry out of the significand
		// correctly bumps the exponent, up to infinity.
		a += 0xfff + (a>>13)&1 - (127-15)<<23
		return sign | uint16(a>>13)
	case a < f16HalfMinSub:
		// Below half the smallest subnormal: zero. (Half of it exactly is
		// a tie, which the next case rounds to even: zero too.)
		return sign
	case a < f16MinNormal:
		// A subnormal result: the significand with its implicit bit,
		// shifted right by 14 to 24 places, rounded to even.
		m := a&0x7fffff | 0x800000
		shift := 126 - a>>23
		q := m >> shift
		half := uint32(1) << (shift - 1)
		if m&half != 0 && m&(3*half-1) != 0 {
			q++
		}
		return sign | uint16(q)
	case a > 0x7f800000:
		return sign | 0x7e00 | uint16((a&0x7fffff)>>13)
	}
	return sign | 0x7c00 // infinity, or a finite value that rounds to it
}

// Boundaries of F16FromFloat32 among float32 bit patterns without sign.
const (
	f16MinNormal  = 0x38800000 // 2^-14, the smallest normal binary16
	f16Overflow   = 0x477ff000 // 65520, halfway from the largest finite to 2^16
	f16HalfMinSub = 0x33000000 // 2^-25, half the smallest subnormal
)

// F16ToFloat32 converts IEEE binary16 bits to float32 exactly. A NaN keeps
// its sign and payload and gets the quiet bit.
func F16ToFloat32(h uint16) float32 { return f16Table()[h] }

// f16Table is every binary16 value as float32, built on first use.
var f16Table = sync.OnceValue(func() *[1 << 16]float32 {
	t := new([1 << 16]float32)
	for h := range t {
		t[h] = math.Float32frombits(f16Bits(uint16(h)))
	}
	return t
})

// f16Bits converts IEEE binary16 bits to float32 bits exactly.
func f16Bits(h uint16) uint32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f && mant == 0:
		return sign | 0x7f800000
	case exp == 0x1f:
		return sign | 0x7fc00000 | mant<<13
	case exp != 0:
		return sign | (exp+127-15)<<23 | mant<<13
	}
	// Zero or subnormal: mant * 2^-24, exact in float32.
	return sign | math.Float32bits(float32(mant)*0x1p-24)
}

// decodeInto converts the little-endian elements of dt in src to float32
// exactly, one per element of dst.
func decodeInto(dt device.DType, dst []float32, src []byte) {
	switch dt {
	case device.BFloat16:
		src = src[:2*len(dst)]
		for i := range dst {
			dst[i] = BF16ToFloat32(binary.LittleEndian.Uint16(src[2*i:]))
		}
	case device.Float16:
		src = src[:2*len(dst)]
		t := f16Table()
		for i := range dst {
			dst[i] = t[binary.LittleEndian.Uint16(src[2*i:])]
		}
	default:
		src = src[:4*len(dst)]
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
	}
}

// storeAll rounds every value of vals to dt and writes it as the
// corresponding element of dst; NaN becomes the type's canonical NaN.
func storeAll(dt device.DType, dst []byte, vals []float32) {
	switch dt {
	case device.BFloat16:
		dst = dst[:2*len(vals)]
		for i, v := range vals {
			h := CanonicalNaNBF16
			if v == v {
				h = BF16FromFloat32(v)
			}
			binary.LittleEndian.PutUint16(dst[2*i:], h)
		}
	case device.Float16:
		dst = dst[:2*len(vals)]
		for i, v := range vals {
			h := CanonicalNaNF16
			if v == v {
				h = F16FromFloat32(v)
			}
			binary.LittleEndian.PutUint16(dst[2*i:], h)
		}
	default:
		dst = dst[:4*len(vals)]
		for i, v := range vals {
			w := CanonicalNaN32
			if v == v {
				w = math.Float32bits(v)
			}
			binary.LittleEndian.PutUint32(dst[4*i:], w)
		}
	}
}

// Encode converts values to little-endian elements of dt, rounding to
// nearest even. NaNs are kept as quiet NaNs (not canonicalised).
func Encode(dt device.DType, vals []float32) ([]byte, error) {
	if !dt.Valid() {
		return nil, fmt.Errorf("encode: unsupported dtype %v", dt)
	}
	b := make([]byte, len(vals)*dt.Size())
	for i, v := range vals {
		switch dt {
		case device.BFloat16:
			binary.LittleEndian.PutUint16(b[2*i:], BF16FromFloat32(v))
		case device.Float16:
			binary.LittleEndian.PutUint16(b[2*i:], F16FromFloat32(v))
		default:
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
	}
	return b, nil
}

// Decode converts little-endian elements of dt to float32 exactly.
func Decode(dt device.DType, b []byte) ([]float32, error) {
	if !dt.Valid() {
		return nil, fmt.Errorf("decode: unsupported dtype %v", dt)
	}
	if len(b)%dt.Size() != 0 {
		return nil, fmt.Errorf("decode: %d bytes is not a whole number of %v elements", len(b), dt)
	}
	vals := make([]float32, len(b)/dt.Size())
	decodeInto(dt, vals, b)
	return vals, nil
}
