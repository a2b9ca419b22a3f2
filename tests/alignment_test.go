package tests

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/oracle"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/simjob"
	"github.com/symmem/symmem/workload"
)

// TestFourByteAlignedTensors: every form that documents 4-byte alignment
// for its plain tensors accepts tensors that are 4- but not 16-byte
// aligned, and gives the reference result: IntraNodeComm (one-shot and
// two-shot), the one-shot _out and _copy forms and the two-shot _out form,
// for every dtype, with the symmetric view 16-byte aligned.
func TestFourByteAlignedTensors(t *testing.T) {
	for _, dt := range []device.DType{device.Float32, device.BFloat16, device.Float16} {
		for _, numel := range []uint64{64, 96 << 10} { // one-shot and two-shot sizes
			t.Run(fmt.Sprintf("%v/%d", dt, numel), func(t *testing.T) {
				cfg := simjob.Config{World: 2, Seed: 3, RaceDetector: true}
				cfg.Device.SMCount = 4
				simulate(t, cfg, fourByteAligned(dt, numel))
			})
		}
	}
}

func fourByteAligned(dt device.DType, numel uint64) rank.Program {
	return func(r *rank.Rank) error {
		size := numel * uint64(dt.Size())
		inputs := workload.Spec{World: r.World(), Bytes: size, DType: dt, Seed: 7}.Inputs()
		want, err := oracle.AllReduce(dt, device.Sum, inputs)
		if err != nil {
			return err
		}
		plain, err := r.Empty(size/4+8, device.Float32) // size + 32 bytes
		if err != nil {
			return err
		}
		defer r.FreeTensor(plain)
		at := func(shift uint64) rank.Tensor {
			return rank.Tensor{Ptr: plain.Ptr.Add(shift), DType: dt, Numel: numel}
		}
		check := func(form string, t rank.Tensor) error {
			got, err := r.Read(t)
			if err != nil {
				return err
			}
			if !bytes.Equal(got, want) {
				return fmt.Errorf("%s: rank %d's result differs from the reference", form, r.ID())
			}
			return nil
		}

		c := r.NewIntraNodeComm(enabled)
		if !c.Rendezvous() {
			return fmt.Errorf("intra-node comm refused")
		}
		defer c.Close()
		for _, shift := range []uint64{4, 8, 12} {
			tn := at(shift)
			if err := r.Write(tn, inputs[r.ID()]); err != nil {
				return err
			}
			algo := c.SelectAlgo(tn, device.Sum)
			if algo == rank.AlgoNone {
				return fmt.Errorf("SelectAlgo refused %v at +%d", tn, shift)
			}
			if err := c.AllReduce(tn, algo); err != nil {
				return fmt.Errorf("intra-node %v at +%d: %w", algo, shift, err)
			}
			if err := check(fmt.Sprintf("intra-node %v at +%d", algo, shift), tn); err != nil {
				return err
			}
		}

		buf, err := r.Alloc(size)
		if err != nil {
			return err
		}
		defer r.Free(buf)
		in := rank.Tensor{Ptr: buf, DType: dt, Numel: numel}
		out := at(4)
		if err := r.Write(in, inputs[r.ID()]); err != nil {
			return err
		}
		if err := r.OneShotAllReduceOut(in, device.Sum, rank.WorldGroup, out); err != nil {
			return err
		}
		if err := check("one-shot _out at +4", out); err != nil {
			return err
		}
		local := at(12)
		if err := r.Write(local, inputs[r.ID()]); err != nil {
			return err
		}
		if err := r.OneShotAllReduceCopy(in, local, device.Sum, rank.WorldGroup, at(8)); err != nil {
			return err
		}
		if err := check("one-shot _copy local at +12 out at +8", at(8)); err != nil {
			return err
		}
		if err := r.Write(in, inputs[r.ID()]); err != nil {
			return err
		}
		if err := r.TwoShotAllReduceOut(in, device.Sum, rank.WorldGroup, out); err != nil {
			return err
		}
		return check("two-shot _out at +4", out)
	}
}
