package fuzz

import (
	"testing"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/workload"
)

func BenchmarkProbe(b *testing.B) {
	spec := workload.Spec{World: 4, Bytes: 4096, DType: device.Float32, Op: device.Sum, Algo: workload.OneShot, Seed: 1}
	in := spec.Inputs()
	var steps int64
	sys := actor.NewSystem()
	for i := 0; i < b.N; i++ {
		res := make([]workload.RankResult, 4)
		r, err := rank.Simulate(rank.SimConfig{World: 4, Seed: uint64(i), System: sys}, spec.Program(in, res))
		if err != nil || r.Err() != nil {
			b.Fatal(err, r.Err())
		}
		steps += r.Steps
	}
	b.ReportMetric(float64(steps)/float64(b.N), "steps/op")
}
