package tests

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/symmem/symmem/conformance"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/workload"
)

// ptxDevice is the simulated device configuration that runs the kernels'
// PTX.
var ptxDevice = sim.Config{Kernels: sim.Kernels{PTX: true, PlainYield: 16}}

// TestPTXAllReduce runs checked all-reduces of every algorithm in PTX mode.
func TestPTXAllReduce(t *testing.T) {
	for _, algo := range []workload.Algo{workload.OneShot, workload.TwoShot, workload.LowLatency} {
		for _, dt := range []device.DType{device.Float32, device.BFloat16, device.Float16} {
			spec := workload.Spec{World: 4, Bytes: 4 << 10, DType: dt, Op: device.Sum, Algo: algo, Seed: 3}
			t.Run(fmt.Sprintf("%v/%v", algo, dt), func(t *testing.T) {
				inputs := spec.Inputs()
				results := make([]workload.RankResult, spec.World)
				res := simulate(t, rank.SimConfig{World: spec.World, Seed: 1, Device: ptxDevice, RaceDetector: true},
					spec.Program(inputs, results))
				if v := spec.Check(inputs, results); !v.OK() {
					t.Fatalf("%v", v.Problems)
				}
				t.Logf("steps %d vtime %v", res.Steps, res.VirtualTime)
			})
		}
	}
}

// TestPTXConformance runs the self-checking conformance cases with the
// kernels' PTX at worlds 2 to 8, with the race detector on.
func TestPTXConformance(t *testing.T) {
	race := os.Getenv("PTXRACE") != ""
	for world := 2; world <= 8; world++ {
		for _, c := range conformance.Cases(conformance.Options{Cycles: 3, Seed: 7}) {
			if !c.Fits(world) || c.Name == "intra-node-comm" {
				continue
			}
			t.Run(fmt.Sprintf("%s/world%d", c.Name, world), func(t *testing.T) {
				start := time.Now()
				res := simulate(t, rank.SimConfig{World: world, Seed: uint64(world), RaceDetector: race, Device: ptxDevice}, c.Program)
				t.Logf("%v %d steps", time.Since(start), res.Steps)
			})
		}
	}
}
