package mutants

import (
	"encoding/binary"
	"errors"
	"slices"
	"time"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/oracle"
	"github.com/symmem/symmem/signal"
)

// The shapes of bugs that once survived 2,000 schedules of symmem fuzz: an
// asynchronous intra-node two-shot that never copies its result back, a
// wait_signal whose timeout never reaches the rank, and three bugs of the
// reducer the Go twins use (kernels/reduce.go), which survived while the
// fuzzer's reference called that reducer too: a max that drops a NaN
// arriving from a rank other than 0, a min whose ties go to the later rank
// (the sign of a zero changes) and a bfloat16 avg that divides before
// summing. The reduction mutants are the reducer's rules with one change,
// carried into the stores of reduced vectors; the reference (package
// oracle) shares no code with the kernels, so to the fuzzer they are the
// same as the bug planted in the reducer itself.

// reductionMutant is a broken reduction: given the ranks' elements (in
// rank order) and the right result, it returns what the broken kernel
// stores.
type reductionMutant func(dt device.DType, op device.ReduceOp, srcs [][]byte, right []byte) []byte

// mutantKernels registers, once per mutant, copies of the one-shot and
// two-shot kernels that run the real bodies against a block whose stores
// of reduced vectors carry the mutant's result instead, and returns the
// names by real kernel.
func mutantKernels(name string, m reductionMutant) map[string]string {
	names := map[string]string{}
	for _, real := range []string{kernels.OneShotAllReduce, kernels.TwoShotAllReduce} {
		k, ok := kernels.Lookup(real)
		if !ok {
			panic("no kernel " + real)
		}
		mutated := real + " (" + name + ")"
		kernels.Register(kernels.Descriptor[kernels.AllReduceArgs]{
			Name:       mutated,
			Collective: k.Collective,
			Check:      func(a kernels.AllReduceArgs) error { return k.Check(a) },
			Shape:      k.Shape,
			CheckLaunch: func(blocks, threads int, a kernels.AllReduceArgs) error {
				return k.CheckLaunch(blocks, threads, a)
			},
			Run: func(b kernels.Block, a kernels.AllReduceArgs) error {
				return k.Run(&reducingBlock{Block: b, a: a, m: m}, a)
			},
		})
		names[real] = mutated
	}
	return names
}

// Registered once: the registry refuses a name twice.
var (
	nanDroppingMax   = mutantKernels("max drops a NaN from rank >= 1", dropNaN)
	laterMinTies     = mutantKernels("min ties go to the later rank", laterTies)
	dividingFirstAvg = mutantKernels("bf16 avg divides before summing", divideFirst)
)

// reducingBlock watches a collective block's loads: once it has read the
// same span of every rank's buffer (in rank order, as the kernels reduce),
// its next store of that many bytes is the reduced vector, which it
// replaces with the mutant's.
type reducingBlock struct {
	kernels.Block
	a    kernels.AllReduceArgs
	m    reductionMutant
	bufs []device.Ptr
	srcs [][]byte
	off  uint64
}

func (b *reducingBlock) Load(p device.Ptr, dst []byte) error {
	if err := b.Block.Load(p, dst); err != nil {
		return err
	}
	w := int(b.a.World)
	if b.bufs == nil && p == b.a.BufferPtrs && len(dst) == 8*w {
		for r := range w {
			b.bufs = append(b.bufs, device.Ptr(binary.LittleEndian.Uint64(dst[8*r:])))
		}
		return nil
	}
	if b.bufs == nil {
		return nil
	}
	r := len(b.srcs)
	if r == w || !b.rankLoad(r, p, len(dst)) {
		// Not the next rank's span: perhaps the first rank's, of a
		// new vector (another load, such as of the pad pointers, may
		// have looked like one).
		r, b.srcs = 0, nil
		if !b.rankLoad(0, p, len(dst)) {
			return nil
		}
	}
	if r == 0 {
		b.off = uint64(p) - uint64(b.bufs[0])
	}
	b.srcs = append(b.srcs, append([]byte(nil), dst...))
	return nil
}

// rankLoad reports whether a load of n bytes at p can be rank r's share of
// the vector being gathered: inside rank r's buffer at the offset rank 0's
// had, as long as it.
func (b *reducingBlock) rankLoad(r int, p device.Ptr, n int) bool {
	if uint64(p) < uint64(b.bufs[r]) {
		return false
	}
	return r == 0 || uint64(p)-uint64(b.bufs[r]) == b.off && n == len(b.srcs[0])
}

func (b *reducingBlock) Store(p device.Ptr, src []byte) error {
	if len(b.srcs) == int(b.a.World) && len(src) == len(b.srcs[0]) {
		right, err := oracle.AllReduce(b.a.DType, b.a.Op, b.srcs)
		if err == nil && string(right) == string(src) {
			src = b.m(b.a.DType, b.a.Op, b.srcs, right)
		}
	}
	return b.Block.Store(p, src)
}

// perElement is the reduction mutant of a broken rule, for the dtypes and
// ops applies accepts (the others reduce right): rule reduces one element
// of every rank, xs in rank order, decoded exactly; its result is rounded
// to the dtype and stored as the kernels store it, a NaN as the canonical
// NaN. The rules below are the kernels' reducer (kernels/reduce.go) with
// one change each.
func perElement(applies func(device.DType, device.ReduceOp) bool, rule func(xs []float32) float32) reductionMutant {
	return func(dt device.DType, op device.ReduceOp, srcs [][]byte, right []byte) []byte {
		if !applies(dt, op) {
			return right
		}
		vals := make([][]float32, len(srcs))
		for r, src := range srcs {
			var err error
			if vals[r], err = kernels.Decode(dt, src); err != nil {
				return right
			}
		}
		out := make([]float32, len(vals[0]))
		xs := make([]float32, len(srcs))
		for i := range out {
			for r := range vals {
				xs[r] = vals[r][i]
			}
			out[i] = rule(xs)
		}
		b, err := kernels.Encode(dt, out)
		if err != nil {
			return right
		}
		for i, v := range out {
			switch {
			case v == v:
			case dt == device.Float32:
				binary.LittleEndian.PutUint32(b[4*i:], kernels.CanonicalNaN32)
			case dt == device.BFloat16:
				binary.LittleEndian.PutUint16(b[2*i:], kernels.CanonicalNaNBF16)
			default:
				binary.LittleEndian.PutUint16(b[2*i:], kernels.CanonicalNaNF16)
			}
		}
		return b
	}
}

// only accepts op on the dtypes dts (on every dtype when dts is empty).
func only(op device.ReduceOp, dts ...device.DType) func(device.DType, device.ReduceOp) bool {
	return func(dt device.DType, o device.ReduceOp) bool {
		return o == op && (len(dts) == 0 || slices.Contains(dts, dt))
	}
}

// dropNaN is a max that takes x[r] only when x[r] > acc: a NaN arriving
// from a rank other than 0 is dropped (one from rank 0 still wins, as no
// value compares greater than it).
var dropNaN = perElement(only(device.Max), func(xs []float32) float32 {
	acc := xs[0]
	for _, x := range xs[1:] {
		if x > acc {
			acc = x
		}
	}
	return acc
})

// laterTies is a min that takes x[r] when x[r] is NaN or x[r] <= acc: of
// equal values the later rank's wins, which shows where -0 and +0 meet
// (NaN payloads never reach a result: a NaN is stored canonical).
var laterTies = perElement(only(device.Min), func(xs []float32) float32 {
	acc := xs[0]
	for _, x := range xs[1:] {
		if x != x || x <= acc {
			acc = x
		}
	}
	return acc
})

// divideFirst is a bfloat16 avg that divides every rank's value by W and
// sums the quotients: wrong where the sum overflows float32 and the
// quotients do not (the largest bfloat16 values), and in the last bit
// where the quotients round differently from the sum's.
var divideFirst = perElement(only(device.Avg, device.BFloat16), func(xs []float32) float32 {
	w := float32(len(xs))
	acc := float32(xs[0] / w)
	for _, x := range xs[1:] {
		acc = float32(acc + float32(x/w))
	}
	return acc
})

// renamed sends the all-reduce kernels named in names to their mutated
// copies, for reductions op.
type renamed struct {
	device.Device
	names map[string]string
	op    device.ReduceOp
}

func (d *renamed) Launch(s device.Stream, l device.Launch) error {
	if a, ok := l.Args.(kernels.AllReduceArgs); ok && a.Op == d.op {
		if m, ok := d.names[l.Kernel]; ok {
			l.Kernel = m
		}
	}
	return d.Device.Launch(s, l)
}

// noCopyBack drops the copy that brings an intra-node two-shot's result
// back into the caller's tensor when it follows the launch directly, with
// no synchronize in between: when the rank is asynchronous.
type noCopyBack struct {
	device.Device
	in       [3]uint64 // the last copy: dst, src, bytes
	launched bool      // an in-place two-shot followed that copy
}

func (d *noCopyBack) Copy(s device.Stream, dst, src device.Ptr, n uint64) error {
	if d.launched && uint64(dst) == d.in[1] && uint64(src) == d.in[0] && n == d.in[2] {
		d.launched, d.in = false, [3]uint64{}
		return nil
	}
	d.launched, d.in = false, [3]uint64{uint64(dst), uint64(src), n}
	return d.Device.Copy(s, dst, src, n)
}

func (d *noCopyBack) Launch(s device.Stream, l device.Launch) error {
	a, ok := l.Args.(kernels.AllReduceArgs)
	d.launched = ok && l.Kernel == kernels.TwoShotAllReduce && a.Output == 0 && d.in[2] != 0
	if !d.launched {
		d.in = [3]uint64{}
	}
	return d.Device.Launch(s, l)
}

func (d *noCopyBack) Synchronize(s device.Stream) error {
	d.launched, d.in = false, [3]uint64{}
	return d.Device.Synchronize(s)
}

// lostWaitError is a wait_signal whose error record is never claimed: a
// wait that timed out reports that its signal came.
type lostWaitError struct {
	kernels.Block
	timedOut bool
}

func (b *lostWaitError) WaitU32(p device.Ptr, what string, ready func(uint32) bool, timeout time.Duration) error {
	err := b.Block.WaitU32(p, what, ready, timeout)
	if errors.Is(err, kernels.ErrWaitTimeout) {
		b.timedOut = true
		return nil
	}
	return err
}

func (b *lostWaitError) CAS32(p device.Ptr, old, new uint32, o signal.Order, s signal.Scope) (uint32, error) {
	if b.timedOut {
		return old, nil
	}
	return b.Block.CAS32(p, old, new, o, s)
}

// survivorMutants are the five shapes, for the fuzzer's table.
func survivorMutants() []fuzzMutant {
	return []fuzzMutant{
		{"max drops a NaN from rank >= 1", devices(func(d device.Device) device.Device {
			return &renamed{Device: d, names: nanDroppingMax, op: device.Max}
		})},
		{"min ties go to the later rank (sign of zero)", devices(func(d device.Device) device.Device {
			return &renamed{Device: d, names: laterMinTies, op: device.Min}
		})},
		{"bf16 avg divides before summing", devices(func(d device.Device) device.Device {
			return &renamed{Device: d, names: dividingFirstAvg, op: device.Avg}
		})},
		{"async intra-node two-shot never copies back", devices(func(d device.Device) device.Device { return &noCopyBack{Device: d} })},
		{"wait_signal loses its timeout", blocks(func(b kernels.Block) kernels.Block {
			if b.Kernel() != kernels.WaitSignal {
				return b
			}
			return &lostWaitError{Block: b}
		})},
	}
}
