package mutants

import (
	"encoding/binary"
	"errors"
	"math"
	"time"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/signal"
)

// The shapes of four bugs that once survived 2,000 schedules of symmem
// fuzz: a max that drops a NaN arriving from a rank other than 0, a min
// whose ties go to the later rank (the sign of a zero changes), an
// asynchronous intra-node two-shot that never copies its result back, and
// a wait_signal whose timeout never reaches the rank.

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
	nanDroppingMax = mutantKernels("max drops a NaN from rank >= 1", dropNaN)
	laterMinTies   = mutantKernels("min ties go to the later rank", laterTies)
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
	if r == w {
		r, b.srcs = 0, nil
	}
	off := uint64(p) - uint64(b.bufs[r])
	if uint64(p) < uint64(b.bufs[r]) || (r > 0 && (off != b.off || len(dst) != len(b.srcs[0]))) {
		b.srcs = nil
		return nil
	}
	b.off = off
	b.srcs = append(b.srcs, append([]byte(nil), dst...))
	return nil
}

func (b *reducingBlock) Store(p device.Ptr, src []byte) error {
	if len(b.srcs) == int(b.a.World) && len(src) == len(b.srcs[0]) {
		right, err := kernels.Reference(b.a.DType, b.a.Op, b.srcs)
		if err == nil && string(right) == string(src) {
			src = b.m(b.a.DType, b.a.Op, b.srcs, right)
		}
	}
	return b.Block.Store(p, src)
}

// dropNaN is a max that ignores a NaN arriving from a rank other than 0:
// as if those NaNs were -inf.
func dropNaN(dt device.DType, op device.ReduceOp, srcs [][]byte, right []byte) []byte {
	if op != device.Max {
		return right
	}
	fixed := make([][]byte, len(srcs))
	for r, src := range srcs {
		fixed[r] = src
		if r == 0 {
			continue
		}
		vals, err := kernels.Decode(dt, src)
		if err != nil {
			return right
		}
		for i, v := range vals {
			if v != v {
				vals[i] = float32(math.Inf(-1))
			}
		}
		if fixed[r], err = kernels.Encode(dt, vals); err != nil {
			return right
		}
	}
	out, err := kernels.Reference(dt, op, fixed)
	if err != nil {
		return right
	}
	return out
}

// laterTies is a min whose ties go to the later rank: where the minimum is
// a zero, the result takes the sign of the zero of the highest rank.
func laterTies(dt device.DType, op device.ReduceOp, srcs [][]byte, right []byte) []byte {
	if op != device.Min {
		return right
	}
	got, err := kernels.Decode(dt, right)
	if err != nil {
		return right
	}
	out := append([]byte(nil), right...)
	size := dt.Size()
	for i, v := range got {
		if v != 0 {
			continue
		}
		for r := len(srcs) - 1; r >= 0; r-- {
			if x, _ := kernels.Decode(dt, srcs[r][i*size:(i+1)*size]); x[0] == 0 {
				copy(out[i*size:], srcs[r][i*size:(i+1)*size])
				break
			}
		}
	}
	return out
}

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

// survivorMutants are the four shapes, for the fuzzer's table.
func survivorMutants() []fuzzMutant {
	return []fuzzMutant{
		{"max drops a NaN from rank >= 1", devices(func(d device.Device) device.Device {
			return &renamed{Device: d, names: nanDroppingMax, op: device.Max}
		})},
		{"min ties go to the later rank (sign of zero)", devices(func(d device.Device) device.Device {
			return &renamed{Device: d, names: laterMinTies, op: device.Min}
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
