package sim

import (
	"errors"
	"testing"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/signal"
)

// TestSignalWaitsNameTheSlot: a deadlocked wait is recorded with its slot
// decoded from the launch's pads: who waits, for which peer, on which
// channel, and what the slot holds and needs.
func TestSignalWaitsNameTheSlot(t *testing.T) {
	h := newHarness(t, 3, 1)
	h.s.Go("rank 0", func() {
		_ = h.launch(0, kernels.WaitSignal, 1, 1, h.signalArgs(0, 2, 1, 0))
	})
	var dl *actor.DeadlockError
	if err := h.s.Run(); !errors.As(err, &dl) {
		t.Fatalf("run ended with %v, want a deadlock", err)
	}
	waits := h.w.SignalWaits()
	if len(waits) != 1 {
		t.Fatalf("%d signal waits recorded, want 1: %+v", len(waits), waits)
	}
	w := waits[0]
	want := signal.Slot{Op: signal.Wait, Rank: 0, Peer: 2, Channel: 1, Pad: 0, Index: 5, Offset: 20}
	if !w.Decoded || w.Slot != want || w.World != 3 || w.Expect != signal.Raised || w.Value != signal.Idle ||
		w.PeerDevice != 2 || w.Device != 0 || w.Owner != 0 || w.Kernel != kernels.WaitSignal || w.Lane != -1 ||
		w.PhysOffset != 20 || w.TimedOut {
		t.Fatalf("wait %+v", w)
	}
	if snap, _ := h.w.FirstSignalTimeout(); snap != nil {
		t.Errorf("a timeout snapshot without a timeout: %+v", snap)
	}
}

// TestFirstSignalTimeoutSnapshot: a put that times out (the receiver never
// consumed the previous signal) leaves a snapshot naming it; once over, no
// wait stays recorded.
func TestFirstSignalTimeoutSnapshot(t *testing.T) {
	h := newHarness(t, 2, 1)
	const timeout = int64(1e6)
	var second error
	h.run(func() error {
		if err := h.launch(1, kernels.PutSignal, 1, 1, h.signalArgs(1, 0, 0, timeout)); err != nil {
			return err
		}
		second = h.launch(1, kernels.PutSignal, 1, 1, h.signalArgs(1, 0, 0, timeout))
		return nil
	})
	if second == nil {
		t.Fatal("the second put did not time out")
	}
	snap, at := h.w.FirstSignalTimeout()
	if len(snap) != 1 {
		t.Fatalf("snapshot %+v, want the one put", snap)
	}
	w := snap[0]
	if !w.TimedOut || w.Slot.Op != signal.Put || w.Slot.Pad != 0 || w.Slot.Index != 1 || w.PeerDevice != 0 ||
		w.Owner != 0 || w.Device != 1 || w.Expect != signal.Idle || w.Value != signal.Raised || at < w.Since+1e6 {
		t.Fatalf("wait %+v at %v", w, at)
	}
	if left := h.w.SignalWaits(); len(left) != 0 {
		t.Errorf("waits still recorded after the run: %+v", left)
	}
}

// countingBlock counts the barriers (Lanes calls) of the block it wraps.
type countingBlock struct {
	kernels.Block
	lanes *int
}

func (b countingBlock) Lanes(n int, fn func(kernels.Block) error) error {
	*b.lanes++
	return b.Block.Lanes(n, fn)
}

// TestWrapBlockAndAtomicOperands: WrapBlock sees every block of every
// launch, and the observer gets each compare-and-swap's operands and the
// device owning the word (put: the peer's pad; wait: its own).
func TestWrapBlockAndAtomicOperands(t *testing.T) {
	h := newHarness(t, 2, 1)
	wrapped, lanes := 0, 0
	h.w.cfg.WrapBlock = func(b kernels.Block) kernels.Block {
		wrapped++
		return countingBlock{Block: b, lanes: &lanes}
	}
	puts, waits := 0, 0
	var seen []Access
	h.w.Observe(func(a *Access) { seen = append(seen, *a) })
	if h.w.Observer() == nil {
		t.Fatal("Observer does not return the installed observer")
	}
	for _, err := range h.ranks(func(r int) error {
		return h.launch(r, kernels.Barrier, 1, 2, h.signalArgs(r, 0, 0, 0))
	}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range seen {
		if a.Kind != Atomic || !a.Write {
			continue
		}
		switch {
		case a.Old == signal.Idle && a.New == signal.Raised && a.Owner != a.Device:
			puts++
		case a.Old == signal.Raised && a.New == signal.Idle && a.Owner == a.Device:
			waits++
		default:
			t.Errorf("unexpected compare-and-swap %+v", a)
		}
	}
	if wrapped != 2 || lanes != 2 || puts != 2 || waits != 2 {
		t.Errorf("%d blocks wrapped, %d barriers through the wrapper, %d puts, %d waits; want 2 of each", wrapped, lanes, puts, waits)
	}
}
