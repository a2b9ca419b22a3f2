package kernels

import (
	"encoding/binary"
	"math"

	"github.com/symmem/symmem/device"
)

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
	r.decode(acc, srcs[0])
	for _, src := range srcs[1:] {
		r.combine(acc, src)
	}
	if r.op == device.Avg {
		w := float32(len(srcs))
		for i := range acc {
			acc[i] = float32(acc[i] / w)
		}
	}
	for i, v := range acc {
		store(r.dt, dst, i, v)
	}
}

func (r *reducer) decode(acc []float32, src []byte) {
	switch r.dt {
	case device.Float32:
		for i := range acc {
			acc[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
	default:
		for i := range acc {
			acc[i] = load(r.dt, src, i)
		}
	}
}

func (r *reducer) combine(acc []float32, src []byte) {
	switch r.op {
	case device.Sum, device.Avg:
		for i := range acc {
			acc[i] = float32(acc[i] + load(r.dt, src, i))
		}
	case device.Max:
		for i := range acc {
			if x := load(r.dt, src, i); x != x || x > acc[i] {
				acc[i] = x
			}
		}
	case device.Min:
		for i := range acc {
			if x := load(r.dt, src, i); x != x || x < acc[i] {
				acc[i] = x
			}
		}
	}
}
