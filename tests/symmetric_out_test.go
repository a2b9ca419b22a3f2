package tests

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/oracle"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/simjob"
	"github.com/symmem/symmem/workload"
)

// TestOutputInSymmetricBuffer: the _out forms accept an output that lies
// in a symmetric buffer, in another one or in the input's own buffer where
// it does not overlap the input (peers read only the input's view), and
// the race detector sees no peer read the output's bytes while the kernel
// writes them, over random schedules, at one-shot and two-shot sizes and
// vector-aligned or staged offsets.
func TestOutputInSymmetricBuffer(t *testing.T) {
	for _, world := range []int{2, 3} {
		for seed := uint64(1); seed <= 4; seed++ {
			t.Run(fmt.Sprintf("world%d/seed%d", world, seed), func(t *testing.T) {
				cfg := simjob.Config{World: world, Seed: seed, RaceDetector: true}
				cfg.Device.SMCount = 4
				res := simulate(t, cfg, outputInSymmetricBuffer)
				if res.Races != nil {
					t.Fatalf("races: %v", res.Races)
				}
			})
		}
	}
}

func outputInSymmetricBuffer(r *rank.Rank) error {
	const numel = 1028
	dt := device.Float32
	size := uint64(numel * 4)
	bufA, err := r.Alloc(4 * size)
	if err != nil {
		return err
	}
	defer r.Free(bufA)
	bufB, err := r.Alloc(2 * size)
	if err != nil {
		return err
	}
	defer r.Free(bufB)
	in := rank.Tensor{Ptr: bufA.Add(16), DType: dt, Numel: numel}
	outs := []struct {
		name string
		out  rank.Tensor
	}{
		{"same buffer, right after the input", rank.Tensor{Ptr: in.Ptr.Add(size), DType: dt, Numel: numel}},
		{"same buffer, 4-byte aligned, staged", rank.Tensor{Ptr: in.Ptr.Add(size + 4), DType: dt, Numel: numel}},
		{"another symmetric buffer", rank.Tensor{Ptr: bufB, DType: dt, Numel: numel}},
		{"another symmetric buffer, off vector", rank.Tensor{Ptr: bufB.Add(size - 12), DType: dt, Numel: numel}},
	}
	for i, o := range outs {
		name, out := o.name, o.out
		inputs := workload.Spec{World: r.World(), Bytes: size, DType: dt, Seed: uint64(i + 1)}.Inputs()
		want, err := oracle.AllReduce(dt, device.Sum, inputs)
		if err != nil {
			return err
		}
		for _, form := range []string{"one-shot", "two-shot"} {
			if err := r.Write(in, inputs[r.ID()]); err != nil {
				return err
			}
			if form == "one-shot" {
				err = r.OneShotAllReduceOut(in, device.Sum, rank.WorldGroup, out)
			} else {
				err = r.TwoShotAllReduceOut(in, device.Sum, rank.WorldGroup, out)
			}
			if err != nil {
				return fmt.Errorf("%s, %s: %w", form, name, err)
			}
			got, err := r.Read(out)
			if err != nil {
				return err
			}
			if !bytes.Equal(got, want) {
				return fmt.Errorf("%s, %s: rank %d's result differs from the reference", form, name, r.ID())
			}
		}
	}
	return nil
}

// TestOutputOverlappingInputRefused: an output on the input's own view,
// which peers read during the collective, or on a signal pad is refused
// with the reason, and nothing runs.
func TestOutputOverlappingInputRefused(t *testing.T) {
	cfg := simjob.Config{World: 2, Seed: 1, RaceDetector: true}
	simulate(t, cfg, func(r *rank.Rank) error {
		buf, err := r.Alloc(8192)
		if err != nil {
			return err
		}
		defer r.Free(buf)
		in := rank.Tensor{Ptr: buf.Add(64), DType: device.Float32, Numel: 256}
		for _, tc := range []struct {
			out  rank.Tensor
			want string
		}{
			{in, "overlaps the input"},
			{rank.Tensor{Ptr: in.Ptr.Add(1020), DType: device.Float32, Numel: 256}, "overlaps the input"},
			{rank.Tensor{Ptr: buf.Add(4), DType: device.Float32, Numel: 256}, "overlaps the input"},
			{rank.Tensor{Ptr: buf - 1024, DType: device.Float32, Numel: 256}, "signal pads"},
		} {
			for form, err := range []error{
				r.OneShotAllReduceOut(in, device.Sum, rank.WorldGroup, tc.out),
				r.TwoShotAllReduceOut(in, device.Sum, rank.WorldGroup, tc.out),
			} {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					return fmt.Errorf("form %d, out %v: got %v, want an error saying %q", form, tc.out, err, tc.want)
				}
			}
		}
		return nil
	})
}
