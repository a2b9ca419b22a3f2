package tests

import (
	"fmt"
	"testing"

	"github.com/symmem/symmem/conformance"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/rank"
)

// TestConformanceOnSimulator runs every self-checking case (the reference
// table, signals, bounds, groups, IntraNodeComm, bad inputs, allocation ids,
// leak checks) on the simulator for several world sizes and seeds, with
// the happens-before race detector on: a clean run reports no race.
func TestConformanceOnSimulator(t *testing.T) {
	for _, tc := range []struct {
		world int
		seeds []uint64
	}{
		{1, []uint64{1}},
		{2, []uint64{1, 2}},
		{3, []uint64{3}},
		{4, []uint64{4}},
	} {
		for _, c := range conformance.Cases(conformance.Options{Cycles: 20, Seed: 7}) {
			if !c.Fits(tc.world) {
				continue
			}
			if c.Name == "intra-node-comm" && tc.world > 2 {
				continue // 10 MiB per rank: one world size is enough under -race
			}
			for _, seed := range tc.seeds {
				t.Run(fmt.Sprintf("%s/world%d/seed%d", c.Name, tc.world, seed), func(t *testing.T) {
					// 24 multiprocessors keep the grids small: the race
					// detector's cost grows with the number of blocks.
					simulate(t, rank.SimConfig{World: tc.world, Seed: seed, RaceDetector: true,
						Device: sim.Config{SMCount: 24}}, c.Program)
				})
			}
		}
	}
}

// TestConformanceOnOneSharedDevice runs the conformance table with every
// rank on one device (overlapping devices allowed), as a one-GPU machine
// runs worlds 2 and 4: the ranks split the device's multiprocessors, and
// IntraNodeComm declines them.
func TestConformanceOnOneSharedDevice(t *testing.T) {
	for _, world := range []int{2, 4} {
		for _, c := range conformance.Cases(conformance.Options{Cycles: 5, Seed: 9}) {
			if !c.Fits(world) {
				continue
			}
			t.Run(fmt.Sprintf("%s/world%d", c.Name, world), func(t *testing.T) {
				cfg := rank.SimConfig{World: world, Seed: 5, RaceDetector: true, AllowOverlappingDevices: true,
					Device:     sim.Config{SMCount: 16},
					WrapDevice: func(_ int, d device.Device) device.Device { return indexOverride{d, 0} }}
				simulate(t, cfg, c.Program)
			})
		}
	}
}
