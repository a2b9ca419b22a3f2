package kernels

import (
	"encoding/binary"
	"math"

	"github.com/symmem/symmem/device"
)

// chunkLen is how many elements of a rank the reductions convert at a
// time, into scratch on the stack.
const chunkLen = 256

// reducer combines the same elements of several ranks into dst following the
// package's arithmetic rules. acc is scratch reused between calls.
type reducer struct {
	dt  device.DType
	op  device.ReduceOp
	acc []float32
}

// reduce writes into dst the reduction of srcs, which are in rank order and
// each as long as dst.
func (r *reducer) reduce(dst []byte, srcs [][]byte) {
	n := len(dst) / r.dt.Size()
	if cap(r.acc) < n {
		r.acc = make([]float32, n)
	}
	acc := r.acc[:n]
	decodeInto(r.dt, acc, srcs[0])
	if r.op == device.Sum || r.op == device.Avg {
		for _, src := range srcs[1:] {
			addInto(r.dt, acc, src)
		}
	} else {
		var chunk [chunkLen]float32
		for _, src := range srcs[1:] {
			for first := 0; first < n; first += chunkLen {
				a := acc[first:min(first+chunkLen, n)]
				x := chunk[:len(a)]
				decodeInto(r.dt, x, src[first*r.dt.Size():])
				r.extreme(a, x)
			}
		}
	}
	if r.op == device.Avg {
		w := float32(len(srcs))
		for i := range acc {
			acc[i] = float32(acc[i] / w)
		}
	}
	storeAll(r.dt, dst, acc)
}

// addInto adds the elements of src, of type dt, to acc, rounding each sum
// to float32: decode and combine of a sum in one pass.
func addInto(dt device.DType, acc []float32, src []byte) {
	switch dt {
	case device.BFloat16:
		src = src[:2*len(acc)]
		for i := range acc {
			acc[i] = float32(acc[i] + BF16ToFloat32(binary.LittleEndian.Uint16(src[2*i:])))
		}
	case device.Float16:
		src = src[:2*len(acc)]
		t := f16Table()
		for i := range acc {
			acc[i] = float32(acc[i] + t[binary.LittleEndian.Uint16(src[2*i:])])
		}
	default:
		src = src[:4*len(acc)]
		for i := range acc {
			acc[i] = float32(acc[i] + math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:])))
		}
	}
}

// extreme folds the next rank's values x into acc for Max or Min (a sum
// adds each rank's values as it decodes them: addInto).
func (r *reducer) extreme(acc, x []float32) {
	x = x[:len(acc)]
	switch r.op {
	case device.Max:
		for i, v := range x {
			if v != v || v > acc[i] {
				acc[i] = v
			}
		}
	case device.Min:
		for i, v := range x {
			if v != v || v < acc[i] {
				acc[i] = v
			}
		}
	}
}
