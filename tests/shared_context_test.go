package tests

import (
	"strings"
	"testing"

	"github.com/symmem/symmem/conformance"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/simjob"
)

// subgroupForms is the conformance case of two groups running every form
// at once.
func subgroupForms(t *testing.T) rank.Program {
	t.Helper()
	cases, err := conformance.Select(conformance.Options{Seed: 3}, "^subgroup-forms$", 4)
	if err != nil || len(cases) != 1 {
		t.Fatalf("subgroup-forms case: %v (%d cases)", err, len(cases))
	}
	return cases[0].Program
}

// sharedContext is a world whose ranks share one GPU context, as ranks of
// one process that each open GPU 0 do.
func sharedContext(world int, seed uint64, sync sim.HostCalls) simjob.Config {
	return simjob.Config{World: world, Seed: seed, AllowOverlappingDevices: true,
		Device:     sim.Config{SMCount: 16, SharedContext: true, ContextSync: sync},
		WrapDevice: func(_ int, d device.Device) device.Device { return indexOverride{d, 0} }}
}

// TestSharedContextDeadlockShowsOnTheSimulator: on one GPU, a rank of one
// group that destroys its stream while the other group's kernels spin held
// the context in the driver's free of the stream's pinned memory, so the
// other group could not launch: both waited until the kernels timed out.
// The simulator's shared-context mode, told that destroying a stream
// synchronises the context, shows that hang; told what the CUDA device does
// now (it pools what it would free while another rank shares the GPU), the
// same program passes.
func TestSharedContextDeadlockShowsOnTheSimulator(t *testing.T) {
	program := subgroupForms(t)
	for _, world := range []int{4, 5} {
		hung := 0
		for seed := uint64(1); seed <= 16 && hung == 0; seed++ {
			res, err := simjob.Simulate(sharedContext(world, seed, sim.SyncDestroyStream), program)
			if err != nil {
				t.Fatalf("world %d seed %d: simulation: %v", world, seed, err)
			}
			if err := res.Err(); err != nil {
				if !strings.Contains(err.Error(), "timed out") {
					t.Fatalf("world %d seed %d: want a timeout, got %v", world, seed, err)
				}
				hung++
			}
			simulate(t, sharedContext(world, seed, 0), program)
		}
		if hung == 0 {
			t.Errorf("world %d: a stream destroy that synchronises the shared context never hung the other group in 16 seeds", world)
		}
	}
}
