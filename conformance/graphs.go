package conformance

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/symmem/symmem/actor/store"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/oracle"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/workload"
)

// graphs: a captured graph of low-latency (two sizes, hence two grid
// shapes), one-shot and two-shot calls, replayed for several rounds with
// fresh inputs written between replays, gives the reference every time.
// Replays reuse the captured arguments, so the low-latency calls are right
// only if their call numbers, kept on the device, advance with every
// replay.
func graphs(seed uint64) rank.Program {
	return func(r *rank.Rank) error {
		const rounds = 3
		world := r.World()
		specs := []workload.Spec{
			{World: world, Bytes: 1 << 10, DType: device.BFloat16, Op: device.Sum, Algo: workload.LowLatency},
			{World: world, Bytes: 96 << 10, DType: device.BFloat16, Op: device.Sum, Algo: workload.LowLatency},
			{World: world, Bytes: 12 << 10, DType: device.Float32, Op: device.Max, Algo: workload.OneShot},
			{World: world, Bytes: 300 << 10, DType: device.Float16, Op: device.Sum, Algo: workload.TwoShot},
		}
		l, err := r.NewLowLatency(rank.WorldGroup, 96<<10)
		if err != nil {
			return err
		}
		defer l.Close()
		buf, err := r.Alloc(512 << 10)
		if err != nil {
			return err
		}
		defer r.Free(buf)
		ins, outs := make([]rank.Tensor, len(specs)), make([]rank.Tensor, len(specs))
		var off uint64
		for i, s := range specs {
			if s.Algo == workload.LowLatency {
				ins[i], err = r.Empty(s.Numel(), s.DType)
			} else {
				ins[i] = rank.Tensor{Ptr: buf.Add(off), DType: s.DType, Numel: s.Numel()}
				off += s.Bytes
			}
			if err != nil {
				return err
			}
			if outs[i], err = r.Empty(s.Numel(), s.DType); err != nil {
				return err
			}
		}
		defer func() {
			for i, s := range specs {
				if s.Algo == workload.LowLatency {
					_ = r.FreeTensor(ins[i])
				}
				_ = r.FreeTensor(outs[i])
			}
		}()
		calls := func() error {
			for i, s := range specs {
				var err error
				switch s.Algo {
				case workload.LowLatency:
					err = l.AllReduce(ins[i], s.Op, outs[i])
				case workload.OneShot:
					err = r.OneShotAllReduceOut(ins[i], s.Op, rank.WorldGroup, outs[i])
				default:
					err = r.TwoShotAllReduceOut(ins[i], s.Op, rank.WorldGroup, outs[i])
				}
				if err != nil {
					return fmt.Errorf("%v %v %v: %w", s.Algo, s.DType, s.Op, err)
				}
			}
			return nil
		}
		// Plain calls first: they rendezvous the buffer, which a capture
		// cannot, and move the call numbers away from their start.
		if err := calls(); err != nil {
			return err
		}
		g, err := r.Capture(calls)
		if err != nil {
			return err
		}
		defer g.Close()
		all := make([]int, world)
		for i := range all {
			all[i] = i
		}
		ex, err := store.NewExchange(r.Store(), "graphs", store.Group{Name: "world", Ranks: all}, r.ID())
		if err != nil {
			return err
		}
		for round := range rounds {
			wants := make([][]byte, len(specs))
			for i := range specs {
				s := &specs[i]
				s.Seed = seed + uint64(100*round+i)
				inputs := s.Inputs()
				if err := r.Write(ins[i], inputs[r.ID()]); err != nil {
					return err
				}
				if wants[i], err = oracle.AllReduce(s.DType, s.Op, inputs); err != nil {
					return err
				}
			}
			if err := g.Replay(); err != nil {
				return fmt.Errorf("round %d: %w", round, err)
			}
			var errs []error
			for i, s := range specs {
				got, err := r.Read(outs[i])
				if err != nil {
					return err
				}
				if !bytes.Equal(got, wants[i]) {
					errs = append(errs, fmt.Errorf("round %d: replayed %v %v %v of %d bytes: rank %d differs from the reference",
						round, s.Algo, s.DType, s.Op, s.Bytes, r.ID()))
				}
			}
			if err := errors.Join(errs...); err != nil {
				return err
			}
			// Meet before the next round's inputs overwrite this one's.
			if err := ex.Barrier(); err != nil {
				return err
			}
		}
		return nil
	}
}
