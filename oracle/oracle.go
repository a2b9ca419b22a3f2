// Package oracle computes on the host what an all-reduce must produce, so
// that the kernels' results can be checked against it: [AllReduce] gives
// the exact bits, [CheckClose] bounds a result by the exact reduction in
// float64.
//
// It is an oracle: it follows the arithmetic rules written down in package
// kernels' documentation (and ../shared/SPEC.md's "accumulate in float32 in
// fixed rank order and round once") with code of its own, element by
// element, as plainly as it can, and imports no package of the kernels it
// checks, neither their reducer nor their conversions. A bug planted in the
// kernels' arithmetic therefore cannot reach the oracle too; a test holds
// it to its import list (TestImportsNothingItChecks). Its binary16
// conversions are those of github.com/x448/float16; its bfloat16 rounding
// is a float64 computation (round the value scaled to an integer, to even),
// not the kernels' bit trick, and is held to x448/float16 on binary16's
// parameters.
//
// The rules, per element, with x[r] rank r's value decoded exactly:
//
//	sum: x[0] + x[1] + ... + x[W-1], left to right, each addition
//	     rounded to float32
//	avg: that sum, then divided by W in float32
//	max: NaN when any x[r] is NaN; otherwise the greatest value, and
//	     among equal ones (-0 and +0) that of the lowest rank
//	min: the same with the least value
//
// and the result is rounded once to the element type, to nearest even,
// with a NaN stored as the type's canonical quiet NaN (0x7fffffff for
// float32, 0x7fff for bfloat16 and float16). NaN payloads never reach a
// result, so among the inputs only the sign of a zero tells which rank a
// tie of max or min took.
package oracle

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/x448/float16"

	"github.com/symmem/symmem/device"
)

// The canonical quiet NaNs a reduction stores.
const (
	nan32   uint32 = 0x7fffffff
	nanBF16 uint16 = 0x7fff
	nanF16  uint16 = 0x7fff
)

// AllReduce is the result every rank must hold after an all-reduce of
// inputs (one per rank, in rank order, little-endian elements of dt) with
// op, bit for bit.
func AllReduce(dt device.DType, op device.ReduceOp, inputs [][]byte) ([]byte, error) {
	if err := checkInputs(dt, op, inputs); err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	n := len(inputs[0]) / dt.Size()
	out := make([]byte, len(inputs[0]))
	xs := make([]float32, len(inputs))
	for i := range n {
		for r, in := range inputs {
			xs[r] = decode(dt, in, i)
		}
		encode(dt, out, i, reduce(op, xs))
	}
	return out, nil
}

// reduce combines one element of every rank, xs in rank order.
func reduce(op device.ReduceOp, xs []float32) float32 {
	switch op {
	case device.Max, device.Min:
		best := xs[0]
		for _, x := range xs {
			if x != x {
				return x
			}
		}
		for _, x := range xs[1:] {
			// Strict comparisons: an equal value of a later rank
			// leaves the earlier one.
			if op == device.Max && x > best || op == device.Min && x < best {
				best = x
			}
		}
		return best
	}
	acc := xs[0]
	for _, x := range xs[1:] {
		acc = float32(acc + x)
	}
	if op == device.Avg {
		acc = float32(acc / float32(len(xs)))
	}
	return acc
}

// Decode converts the little-endian elements of dt in b to float32,
// exactly (a NaN stays a NaN), for checks that compare results with
// values of their own.
func Decode(dt device.DType, b []byte) ([]float32, error) {
	if !dt.Valid() {
		return nil, fmt.Errorf("decode: unsupported dtype %v", dt)
	}
	if len(b)%dt.Size() != 0 {
		return nil, fmt.Errorf("decode: %d bytes is not a whole number of %v elements", len(b), dt)
	}
	vals := make([]float32, len(b)/dt.Size())
	for i := range vals {
		vals[i] = decode(dt, b, i)
	}
	return vals, nil
}

// decode is element i of b, of type dt, as float32 (exactly).
func decode(dt device.DType, b []byte, i int) float32 {
	switch dt {
	case device.BFloat16:
		// A bfloat16 is the high half of a float32.
		return math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16)
	case device.Float16:
		return float16.Frombits(binary.LittleEndian.Uint16(b[2*i:])).Float32()
	}
	return math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
}

// encode rounds v to dt (to nearest even) and writes it as element i of
// b; a NaN becomes dt's canonical NaN.
func encode(dt device.DType, b []byte, i int, v float32) {
	nan := v != v
	switch dt {
	case device.BFloat16:
		h := nanBF16
		if !nan {
			h = bf16Bits(v)
		}
		binary.LittleEndian.PutUint16(b[2*i:], h)
	case device.Float16:
		h := nanF16
		if !nan {
			h = float16.Fromfloat32(v).Bits()
		}
		binary.LittleEndian.PutUint16(b[2*i:], h)
	default:
		w := nan32
		if !nan {
			w = math.Float32bits(v)
		}
		binary.LittleEndian.PutUint32(b[4*i:], w)
	}
}

// format describes a binary floating-point format narrower than float32
// for [round]: the bits of its significand after the leading one, the
// exponent of its smallest normal value, and its largest finite value.
type format struct {
	mant      int
	minExp    int
	maxFinite float64
}

var (
	bf16Format = format{mant: 7, minExp: -126, maxFinite: 0x1.fep127}
	f16Format  = format{mant: 10, minExp: -14, maxFinite: 65504}
)

// round rounds the finite or infinite v to the nearest value of f, ties to
// even: v scaled by the spacing of f's values around it (a power of two,
// so exactly) is rounded to an integer, to even, and scaled back. A result
// beyond f's largest finite value is an infinity of v's sign (v at or
// past the midpoint between the largest finite value and the next power
// of two rounds to that power, which is beyond). The sign of a zero is
// kept.
func round(v float64, f format) float64 {
	if v == 0 || math.IsInf(v, 0) {
		return v
	}
	_, e := math.Frexp(v) // |v| in [2^(e-1), 2^e)
	exp := max(e-1, f.minExp)
	spacing := math.Ldexp(1, exp-f.mant)
	r := math.RoundToEven(v/spacing) * spacing
	if math.Abs(r) > f.maxFinite {
		return math.Copysign(math.Inf(1), v)
	}
	if r == 0 {
		return math.Copysign(0, v)
	}
	return r
}

// bf16Bits is the bfloat16 nearest to the non-NaN v (ties to even).
func bf16Bits(v float32) uint16 {
	// Every bfloat16 value is a float32 whose low 16 bits are zero.
	return uint16(math.Float32bits(float32(round(float64(v), bf16Format))) >> 16)
}

func checkInputs(dt device.DType, op device.ReduceOp, inputs [][]byte) error {
	if !dt.Valid() {
		return fmt.Errorf("unsupported dtype %v", dt)
	}
	if !op.Valid() {
		return fmt.Errorf("unsupported reduce op %v", op)
	}
	if len(inputs) == 0 {
		return fmt.Errorf("no inputs")
	}
	for r, in := range inputs {
		if len(in) != len(inputs[0]) {
			return fmt.Errorf("input of rank %d has %d bytes, rank 0 has %d", r, len(in), len(inputs[0]))
		}
	}
	if len(inputs[0])%dt.Size() != 0 {
		return fmt.Errorf("%d bytes is not a whole number of %v elements", len(inputs[0]), dt)
	}
	return nil
}
