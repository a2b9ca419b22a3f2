package sim

import (
	"errors"
	"strings"
	"testing"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
)

// TestObserverSeesAliasesAndForks: the access log names the physical bytes
// behind every virtual address (so accesses to one buffer through different
// devices' mappings meet), and carries the fork edges of blocks and lanes.
func TestObserverSeesAliasesAndForks(t *testing.T) {
	h := newHarness(t, 2, 3)
	// The physical allocation behind rank 1's block, seen from device 1.
	var phys1 uint64
	h.w.Observe(func(a *Access) {
		if a.Kind == Store && a.Device == 1 && a.Op == "write" && a.Addr == h.buf(1) {
			phys1 = a.Phys
		}
	})
	h.run(func() error { return h.dev(1).Write(0, h.buf(1), make([]byte, 64)) })
	if phys1 == 0 {
		t.Fatal("the write was not observed")
	}
	var reads, forks, blocks int
	tasks := map[int]bool{}
	h.w.Observe(func(a *Access) {
		switch a.Kind {
		case Load:
			if a.Device == 0 && a.Kernel == kernels.OneShotAllReduce && a.Phys == phys1 {
				reads++
				if a.Addr == h.buf(1) || a.PhysOffset != testDataOff || a.Block != 0 || a.Lane != -1 {
					t.Errorf("read of rank 1's tensor from device 0: %+v", a)
				}
			}
		case LaneStart:
			forks++
			if a.Parent < 0 || a.Lane < 0 {
				t.Errorf("lane fork without parent: %+v", a)
			}
		case BlockStart:
			blocks++
			if a.Parent < 0 {
				t.Errorf("block fork without parent: %+v", a)
			}
		}
		tasks[a.Task] = true
	})
	must(t, h.ranks(func(r int) error {
		a := h.allReduceArgs(r, device.Float32, device.Sum, 0, 16)
		a.Output = h.local[r] + outOff
		return h.launch(r, kernels.OneShotAllReduce, 1, 32, a)
	}))
	h.w.Observe(nil)
	if reads != 1 {
		t.Errorf("device 0 read rank 1's tensor %d times, want 1 (one grid-stride iteration)", reads)
	}
	if forks != 2*2*2 || blocks != 2 {
		t.Errorf("%d lane forks and %d block forks, want 8 and 2", forks, blocks)
	}
	if len(tasks) < 4 {
		t.Errorf("accesses came from %d tasks", len(tasks))
	}
}

// TestDeadlockReportNamesTheSlot: a wait with no timeout whose peer never
// signals ends the run with a deadlock report naming the slot.
func TestDeadlockReportNamesTheSlot(t *testing.T) {
	h := newHarness(t, 2, 1)
	h.s.Go("rank 0", func() {
		_ = h.launch(0, kernels.WaitSignal, 1, 1, h.signalArgs(0, 1, 3, 0))
	})
	err := h.s.Run()
	var dl *actor.DeadlockError
	if !errors.As(err, &dl) {
		t.Fatalf("run ended with %v, want a deadlock", err)
	}
	msg := dl.Error()
	for _, s := range []string{"wait rank 0 peer 1 channel 3: pad of rank 0 slot 7", "device 0 stream 0 to finish op"} {
		if !strings.Contains(msg, s) {
			t.Errorf("deadlock report does not contain %q:\n%s", s, msg)
		}
	}
}
