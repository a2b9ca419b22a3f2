package fuzz

import (
	"testing"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/workload"
)

// benchCase is the case the schedule rate is quoted for: a world-4
// one-shot all-reduce of 4 KiB of float32, checked.
func benchCase(b *testing.B, strategy string, faults FaultSet) Case {
	p, err := SpecProgram(workload.Spec{World: 4, Bytes: 4096, DType: device.Float32, Op: device.Sum, Algo: workload.OneShot})
	if err != nil {
		b.Fatal(err)
	}
	return Case{Program: p, InputSeed: 1, Strategy: strategy, Depth: 3, Steps: 320, Faults: faults}
}

// benchmarkSchedules runs one schedule (a whole simulated job and its
// check) per iteration, each with its own seed, and reports schedules per
// second. Run it with -cpu 1 for the single-core rate.
func benchmarkSchedules(b *testing.B, strategy string, faults FaultSet) {
	c := benchCase(b, strategy, faults)
	var steps int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.Seed = uint64(i)
		c.Plan = NewPlan(c.Seed, faults, c.Program, c.Steps, DefaultTimeout)
		o, err := Run(c)
		if err != nil {
			b.Fatal(err)
		}
		if o.Failed() {
			b.Fatalf("seed %d: %v", i, o.Failure)
		}
		steps += o.Steps
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "schedules/s")
	b.ReportMetric(float64(steps)/float64(b.N), "steps/schedule")
}

// BenchmarkSchedules is the fuzzer's raw rate: random walks, no faults.
func BenchmarkSchedules(b *testing.B) { benchmarkSchedules(b, StrategyRandom, FaultsNone) }

// BenchmarkSchedulesPCT is the rate under PCT of depth 3.
func BenchmarkSchedulesPCT(b *testing.B) { benchmarkSchedules(b, StrategyPCT, FaultsNone) }

// BenchmarkSchedulesSafety is the rate with safety faults drawn per seed.
func BenchmarkSchedulesSafety(b *testing.B) { benchmarkSchedules(b, StrategyRandom, FaultsSafety) }
