package kernels

import "github.com/symmem/symmem/device"

// reducer combines the same elements of several ranks into dst following the
// package's arithmetic rules. acc and x are scratch reused between calls.
type reducer struct {
	dt     device.DType
	op     device.ReduceOp
	acc, x []float32
}

// reduce writes into dst the reduction of srcs, which are in rank order and
// each as long as dst.
func (r *reducer) reduce(dst []byte, srcs [][]byte) {
	n := len(dst) / r.dt.Size()
	if cap(r.acc) < n {
		r.acc, r.x = make([]float32, n), make([]float32, n)
	}
	acc, x := r.acc[:n], r.x[:n]
	decodeInto(r.dt, acc, srcs[0])
	for _, src := range srcs[1:] {
		decodeInto(r.dt, x, src)
		r.combine(acc, x)
	}
	if r.op == device.Avg {
		w := float32(len(srcs))
		for i := range acc {
			acc[i] = float32(acc[i] / w)
		}
	}
	storeAll(r.dt, dst, acc)
}

// combine folds the next rank's values x into acc.
func (r *reducer) combine(acc, x []float32) {
	x = x[:len(acc)]
	switch r.op {
	case device.Sum, device.Avg:
		for i := range acc {
			acc[i] = float32(acc[i] + x[i])
		}
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
