package tests

import (
	"fmt"
	"testing"

	"github.com/symmem/symmem/conformance"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/internal/longtest"
	"github.com/symmem/symmem/simjob"
)

// heavyCases are the conformance cases whose tensors (300 KiB to 10 MiB)
// or many launches make them cost minutes under the race detector at
// larger worlds: the default run has them at world 2 only.
var heavyCases = map[string]bool{"sim-conformance": true, "graphs": true, "intra-node-comm": true, "leaks": true}

// TestConformanceOnSimulator runs every self-checking case (the reference
// table, signals, bounds, groups, IntraNodeComm, bad inputs, allocation ids,
// leak checks) on the simulator for several world sizes and seeds, with
// the happens-before race detector on: a clean run reports no race. The
// default run covers worlds 1 to 3, the heavy cases at world 2; the long
// sweep (SYMMEM_LONG=1) runs every case at worlds 1 to 4 and more seeds.
func TestConformanceOnSimulator(t *testing.T) {
	sweep := []struct {
		world int
		seeds []uint64
	}{{1, []uint64{1}}, {2, []uint64{1}}, {3, []uint64{3}}}
	if longtest.Enabled() {
		sweep = append(sweep[:1], []struct {
			world int
			seeds []uint64
		}{{2, []uint64{1, 2}}, {3, []uint64{3}}, {4, []uint64{4}}}...)
	}
	for _, tc := range sweep {
		for _, c := range conformance.Cases(conformance.Options{Cycles: 20, Seed: 7}) {
			if !c.Fits(tc.world) {
				continue
			}
			if c.Name == "intra-node-comm" && tc.world > 2 {
				continue // 10 MiB per rank: one world size is enough under -race
			}
			if heavyCases[c.Name] && tc.world > 2 && !longtest.Enabled() {
				continue
			}
			for _, seed := range tc.seeds {
				t.Run(fmt.Sprintf("%s/world%d/seed%d", c.Name, tc.world, seed), func(t *testing.T) {
					// 24 multiprocessors keep the grids small: the race
					// detector's cost grows with the number of blocks.
					simulate(t, simjob.Config{World: tc.world, Seed: seed, RaceDetector: true,
						Device: sim.Config{SMCount: 24}}, c.Program)
				})
			}
		}
	}
}

// TestConformanceOnOneSharedDevice runs the conformance table with every
// rank on one device (overlapping devices allowed), as a one-GPU machine
// runs worlds 2 and 4: the ranks split the device's multiprocessors, and
// IntraNodeComm declines them. The heavy cases run at world 4 in the long
// sweep only.
func TestConformanceOnOneSharedDevice(t *testing.T) {
	for _, world := range []int{2, 4} {
		for _, c := range conformance.Cases(conformance.Options{Cycles: 5, Seed: 9}) {
			if !c.Fits(world) || heavyCases[c.Name] && world > 2 && !longtest.Enabled() {
				continue
			}
			t.Run(fmt.Sprintf("%s/world%d", c.Name, world), func(t *testing.T) {
				cfg := simjob.Config{World: world, Seed: 5, RaceDetector: true, AllowOverlappingDevices: true,
					Device:     sim.Config{SMCount: 16},
					WrapDevice: func(_ int, d device.Device) device.Device { return indexOverride{d, 0} }}
				simulate(t, cfg, c.Program)
			})
		}
	}
}
