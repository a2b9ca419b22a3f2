package ptx

import (
	"testing"

	"github.com/symmem/symmem/conformance"
	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/simjob"
)

// BenchmarkGraphsWorld4 is the PTX selftest's graphs case at world 4 with
// the launches' own shapes (symmem selftest --kernels ptx --world 4
// --cases '^graphs$'): a graph of low-latency, one-shot and two-shot
// calls replayed for three rounds, every kernel interpreted thread by
// thread.
func BenchmarkGraphsWorld4(b *testing.B) {
	var graphs conformance.Case
	for _, c := range conformance.Cases(conformance.Options{Cycles: 3, Seed: 1}) {
		if c.Name == "graphs" {
			graphs = c
		}
	}
	if graphs.Program == nil {
		b.Fatal("no graphs case")
	}
	for i := 0; i < b.N; i++ {
		res, err := simjob.Simulate(simjob.Config{World: 4, Seed: 1, Device: sim.Config{Kernels: sim.Kernels{PTX: true}}}, graphs.Program)
		if err != nil {
			b.Fatal(err)
		}
		if err := res.Err(); err != nil {
			b.Fatal(err)
		}
	}
}
