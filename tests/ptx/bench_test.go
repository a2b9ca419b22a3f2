package ptx

import (
	"os"
	"testing"
	"time"

	"github.com/symmem/symmem/conformance"
	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/internal/hugeheap"
	"github.com/symmem/symmem/simjob"
)

// BenchmarkGraphsWorld4 is the PTX selftest's graphs case at world 4 with
// the launches' own shapes (symmem selftest --kernels ptx --world 4
// --cases '^graphs$'): a graph of low-latency, one-shot and two-shot
// calls replayed for three rounds, every kernel interpreted thread by
// thread. Its heap is reserved for huge pages as the command's is
// (hugeheap.Auto).
func BenchmarkGraphsWorld4(b *testing.B) {
	if _, err := hugeheap.Auto(os.Getenv); err != nil {
		b.Log(err)
	}
	b.ResetTimer()
	var graphs conformance.Case
	for _, c := range conformance.Cases(conformance.Options{Cycles: 3, Seed: 1}) {
		if c.Name == "graphs" {
			graphs = c
		}
	}
	if graphs.Program == nil {
		b.Fatal("no graphs case")
	}
	var insts, lockstep uint64
	var steps int64
	start := time.Now()
	for range b.N {
		res, err := simjob.Simulate(simjob.Config{World: 4, Seed: 1, Device: sim.Config{Kernels: sim.Kernels{PTX: true}}}, graphs.Program)
		if err != nil {
			b.Fatal(err)
		}
		if err := res.Err(); err != nil {
			b.Fatal(err)
		}
		if res.Instructions == 0 {
			b.Fatal("no PTX instruction executed")
		}
		insts += res.Instructions
		lockstep += res.InLockstep
		steps += res.Steps
	}
	elapsed := time.Since(start)
	b.ReportMetric(float64(insts)/elapsed.Seconds(), "lane-inst/s")
	b.ReportMetric(100*float64(lockstep)/float64(max(insts, 1)), "%lockstep")
	b.ReportMetric(elapsed.Seconds()/float64(b.N), "s/seed")
	b.ReportMetric(float64(steps)/float64(b.N), "steps/seed")
}
