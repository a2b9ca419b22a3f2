package fuzz

import (
	"testing"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/workload"
)

// benchCase is the case the schedule rate is quoted for: a world-4
// all-reduce of 4 KiB of float32 by algo (one-shot for the rate quoted),
// checked.
func benchCase(b *testing.B, algo workload.Algo, strategy string, faults FaultSet) Case {
	p, err := SpecProgram(workload.Spec{World: 4, Bytes: 4096, DType: device.Float32, Op: device.Sum, Algo: algo})
	if err != nil {
		b.Fatal(err)
	}
	return Case{Program: p, InputSeed: 1, Strategy: strategy, Depth: 3, Steps: 320, Faults: faults}
}

// benchmarkSchedules runs one schedule (a whole simulated job and its
// check) per iteration, each with its own seed, and reports schedules per
// second. Run it with -cpu 1 for the single-core rate.
func benchmarkSchedules(b *testing.B, algo workload.Algo, strategy string, faults FaultSet, ptx, race bool) {
	c := benchCase(b, algo, strategy, faults)
	c.Kernels.PTX, c.Race = ptx, race
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
func BenchmarkSchedules(b *testing.B) {
	benchmarkSchedules(b, workload.OneShot, StrategyRandom, FaultsNone, false, false)
}

// BenchmarkSchedulesPCT is the rate under PCT of depth 3.
func BenchmarkSchedulesPCT(b *testing.B) {
	benchmarkSchedules(b, workload.OneShot, StrategyPCT, FaultsNone, false, false)
}

// BenchmarkSchedulesSafety is the rate with safety faults drawn per seed.
func BenchmarkSchedulesSafety(b *testing.B) {
	benchmarkSchedules(b, workload.OneShot, StrategyRandom, FaultsSafety, false, false)
}

// BenchmarkSchedulesRace is the raw rate with the race detector on, as
// `symmem fuzz` runs by default.
func BenchmarkSchedulesRace(b *testing.B) {
	benchmarkSchedules(b, workload.OneShot, StrategyRandom, FaultsNone, false, true)
}

// BenchmarkSchedulesPTX is the raw rate with the kernels' PTX interpreted
// thread by thread instead of their Go twins.
func BenchmarkSchedulesPTX(b *testing.B) {
	benchmarkSchedules(b, workload.OneShot, StrategyRandom, FaultsNone, true, false)
}

// BenchmarkSchedulesPTXRace is the PTX rate with the race detector on, as
// `symmem fuzz --kernels ptx` runs by default.
func BenchmarkSchedulesPTXRace(b *testing.B) {
	benchmarkSchedules(b, workload.OneShot, StrategyRandom, FaultsNone, true, true)
}

// BenchmarkSchedulesLLRace is BenchmarkSchedulesRace on the low-latency
// all-reduce, whose packets are a strong access per word.
func BenchmarkSchedulesLLRace(b *testing.B) {
	benchmarkSchedules(b, workload.LowLatency, StrategyRandom, FaultsNone, false, true)
}

// BenchmarkSchedulesPTXLLRace is BenchmarkSchedulesPTXRace on the
// low-latency all-reduce: every thread's store and poll of a packet is a
// scheduling step (three quarters of the steps of default PTX programs).
func BenchmarkSchedulesPTXLLRace(b *testing.B) {
	benchmarkSchedules(b, workload.LowLatency, StrategyRandom, FaultsNone, true, true)
}

// benchmarkDrawn runs the cases `symmem fuzz` draws with its default flags
// (portfolio strategy, safety faults, the race detector on), seeds 0 to
// 29 in turn, one per iteration; run it with -benchtime 30x for exactly
// those thirty.
func benchmarkDrawn(b *testing.B, ptx bool) {
	cfg := DefaultConfig()
	cfg.Kernels.PTX = ptx
	g := NewGenerator(cfg)
	var steps int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := g.Case(uint64(i % 30))
		if err != nil {
			b.Fatal(err)
		}
		o, err := Run(c)
		if err != nil {
			b.Fatal(err)
		}
		if o.Failed() {
			b.Fatalf("seed %d: %v", i%30, o.Failure)
		}
		steps += o.Steps
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "schedules/s")
	b.ReportMetric(float64(steps)/float64(b.N), "steps/schedule")
}

// BenchmarkDrawn is the rate on default fuzz programs with the Go twins.
func BenchmarkDrawn(b *testing.B) { benchmarkDrawn(b, false) }

// BenchmarkDrawnPTX is the rate on default fuzz programs with the PTX.
func BenchmarkDrawnPTX(b *testing.B) { benchmarkDrawn(b, true) }
