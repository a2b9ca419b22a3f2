package race_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/device/sim/race"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/oracle"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/simjob"
)

// form is one way of running an all-reduce.
type form int

const (
	oneShot form = iota
	oneShotCopy
	twoShot
	twoShotOut
)

func (f form) String() string {
	return [...]string{"one-shot", "one-shot-copy", "two-shot", "two-shot-out"}[f]
}

// input is rank r's input of iteration it: small integers, so every sum is
// exact.
func input(r, it, numel int) []byte {
	vals := make([]float32, numel)
	for i := range vals {
		vals[i] = float32((r*7+it*13+i)%19 - 9)
	}
	b, _ := kernels.Encode(device.Float32, vals)
	return b
}

// reduceLoop returns a program that all-reduces size bytes iters times in
// one symmetric buffer with form f, checking every result.
func reduceLoop(f form, iters int, size uint64) rank.Program {
	return func(r *rank.Rank) error {
		numel := size / 4
		buf, err := r.Alloc(size)
		if err != nil {
			return err
		}
		defer r.Free(buf)
		// Rendezvous first: its Store barrier would order the first
		// iteration's writes before every peer's kernel.
		if _, err := r.Rendezvous(buf, rank.WorldGroup); err != nil {
			return err
		}
		in := rank.Tensor{Ptr: buf, DType: device.Float32, Numel: numel}
		var out, local rank.Tensor
		if f != twoShot {
			if out, err = r.Empty(numel, device.Float32); err != nil {
				return err
			}
			defer r.FreeTensor(out)
		}
		if f == oneShotCopy {
			if local, err = r.Empty(numel, device.Float32); err != nil {
				return err
			}
			defer r.FreeTensor(local)
		}
		for it := range iters {
			ins := make([][]byte, r.World())
			for p := range ins {
				ins[p] = input(p, it, int(numel))
			}
			target := in
			if f == oneShotCopy {
				target = local
			}
			if err := r.Write(target, ins[r.ID()]); err != nil {
				return err
			}
			res := out
			switch f {
			case oneShot:
				err = r.OneShotAllReduceOut(in, device.Sum, rank.WorldGroup, out)
			case oneShotCopy:
				err = r.OneShotAllReduceCopy(in, local, device.Sum, rank.WorldGroup, out)
			case twoShot:
				err, res = r.TwoShotAllReduce(in, device.Sum, rank.WorldGroup), in
			case twoShotOut:
				err = r.TwoShotAllReduceOut(in, device.Sum, rank.WorldGroup, out)
			}
			if err != nil {
				return err
			}
			got, err := r.Read(res)
			if err != nil {
				return err
			}
			want, _ := oracle.AllReduce(device.Float32, device.Sum, ins)
			if !bytes.Equal(got, want) {
				return fmt.Errorf("rank %d iteration %d: %s result differs from the reference", r.ID(), it, f)
			}
		}
		return nil
	}
}

// simulate runs program with the race detector and fails the test when the
// simulation itself fails.
func simulate(t *testing.T, cfg simjob.Config, program rank.Program) simjob.Result {
	t.Helper()
	cfg.RaceDetector = true
	res, err := simjob.Simulate(cfg, program)
	if err != nil {
		t.Fatalf("simulation (world %d, seed %d): %v", cfg.World, cfg.Seed, err)
	}
	return res
}

// clean fails the test when a run reported races or rank errors.
func clean(t *testing.T, what string, res simjob.Result) {
	t.Helper()
	if err := res.Err(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// races returns the run's races, failing the test when there are none.
func races(t *testing.T, what string, res simjob.Result) []race.Race {
	t.Helper()
	if res.Races == nil {
		t.Fatalf("%s: no race reported (rank errors: %v)", what, res.Err())
	}
	return res.Races.Races
}
