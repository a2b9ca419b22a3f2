package tests

import (
	"bytes"
	"testing"

	"pgregory.net/rapid"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/oracle"
	"github.com/symmem/symmem/simjob"
	"github.com/symmem/symmem/workload"
)

// TestAllReduceProperty: for random world sizes 2-8, dtypes, ops,
// algorithms, sizes and offsets, every rank's result equals the kernels'
// reference bitwise, is close to a float64 reduction, and leaves the bytes
// around the tensor untouched.
func TestAllReduceProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		dt := rapid.SampledFrom([]device.DType{device.Float32, device.BFloat16, device.Float16}).Draw(t, "dtype")
		align := uint64(max(4, dt.Size()))
		s := workload.Spec{
			World:  rapid.IntRange(2, 8).Draw(t, "world"),
			DType:  dt,
			Op:     rapid.SampledFrom([]device.ReduceOp{device.Sum, device.Avg, device.Max, device.Min}).Draw(t, "op"),
			Algo:   rapid.SampledFrom([]workload.Algo{workload.OneShot, workload.TwoShot, workload.LowLatency}).Draw(t, "algo"),
			Bytes:  align * rapid.Uint64Range(0, 3000).Draw(t, "units"),
			Offset: align * rapid.Uint64Range(0, 8).Draw(t, "offset units"),
			Seed:   rapid.Uint64().Draw(t, "seed"),
		}
		inputs := s.Inputs()
		results := make([]workload.RankResult, s.World)
		res, err := simjob.Simulate(simjob.Config{World: s.World, Seed: s.Seed}, s.Program(inputs, results))
		if err == nil {
			err = res.Err()
		}
		if err != nil {
			t.Fatalf("%+v: %v", s, err)
		}
		if v := s.Check(inputs, results); !v.OK() {
			t.Fatalf("%+v: %v", s, v.Problems)
		}
		want, err := oracle.AllReduce(s.DType, s.Op, inputs)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(results[0].Output, want) {
			t.Fatalf("%+v: result differs from the kernels' reference", s)
		}
	})
}

// TestAllReduceTraceDeterministic: the same job and seed give the same
// trace hash; another seed gives another schedule.
func TestAllReduceTraceDeterministic(t *testing.T) {
	run := func(seed uint64) string {
		s := workload.Spec{World: 4, Bytes: 4096, DType: device.BFloat16, Op: device.Sum, Algo: workload.TwoShot, Seed: seed}
		inputs := s.Inputs()
		results := make([]workload.RankResult, s.World)
		return simulate(t, simjob.Config{World: s.World, Seed: seed}, s.Program(inputs, results)).Trace
	}
	for seed := uint64(1); seed <= 5; seed++ {
		a, b := run(seed), run(seed)
		if a != b {
			t.Fatalf("seed %d: traces %s and %s", seed, a, b)
		}
		if c := run(seed + 100); c == a {
			t.Fatalf("seeds %d and %d gave the same trace", seed, seed+100)
		}
	}
}
