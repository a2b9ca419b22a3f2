package workload_test

import (
	"fmt"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/workload"
)

// A checked all-reduce, as `symmem allreduce` runs it: seeded inputs, the
// rank program, and the verdict against a float64 reference.
func ExampleSpec() {
	s := workload.Spec{World: 4, Bytes: 64 << 10, DType: device.BFloat16, Op: device.Sum, Algo: workload.Auto, Seed: 1}
	if err := s.Validate(); err != nil {
		fmt.Println(err)
		return
	}
	inputs := s.Inputs()
	results := make([]workload.RankResult, s.World)
	res, err := rank.Simulate(rank.SimConfig{World: s.World, Seed: s.Seed}, s.Program(inputs, results))
	if err == nil {
		err = res.Err()
	}
	v := s.Check(inputs, results)
	fmt.Println("error:", err)
	fmt.Println("algorithm:", results[0].Algo, "ranks agree:", v.Agree, "ok:", v.OK())
	// Output:
	// error: <nil>
	// algorithm: ll ranks agree: true ok: true
}

// Auto picks the low-latency one-shot up to 256 KiB on 4 ranks (64 KiB on
// 8) and two-shot above; an explicit algorithm stays.
func ExampleAlgo_Resolve() {
	fmt.Println(workload.Auto.Resolve(256<<10, 4), workload.Auto.Resolve(256<<10+4, 4),
		workload.Auto.Resolve(256<<10, 8), workload.OneShot.Resolve(1<<20, 4))
	// Output: ll two-shot two-shot one-shot
}
