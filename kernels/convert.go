package kernels

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/x448/float16"

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
func F16FromFloat32(f float32) uint16 { return float16.Fromfloat32(f).Bits() }

// F16ToFloat32 converts IEEE binary16 bits to float32 exactly.
func F16ToFloat32(h uint16) float32 { return float16.Frombits(h).Float32() }

// load decodes element i of b (little endian) to float32.
func load(dt device.DType, b []byte, i int) float32 {
	switch dt {
	case device.BFloat16:
		return BF16ToFloat32(binary.LittleEndian.Uint16(b[2*i:]))
	case device.Float16:
		return F16ToFloat32(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
}

// store rounds v to dt and writes it as element i of b; NaN becomes the
// type's canonical NaN.
func store(dt device.DType, b []byte, i int, v float32) {
	nan := v != v
	switch dt {
	case device.BFloat16:
		h := CanonicalNaNBF16
		if !nan {
			h = BF16FromFloat32(v)
		}
		binary.LittleEndian.PutUint16(b[2*i:], h)
	case device.Float16:
		h := CanonicalNaNF16
		if !nan {
			h = F16FromFloat32(v)
		}
		binary.LittleEndian.PutUint16(b[2*i:], h)
	default:
		w := CanonicalNaN32
		if !nan {
			w = math.Float32bits(v)
		}
		binary.LittleEndian.PutUint32(b[4*i:], w)
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
	for i := range vals {
		vals[i] = load(dt, b, i)
	}
	return vals, nil
}
