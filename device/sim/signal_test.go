package sim

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/signal"
)

func must(t *testing.T, errs []error) {
	t.Helper()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
}

// TestPutWaitPublishesData is the reference test: rank 1 fills its buffer
// with 42 and puts; rank 0 waits and reads 42 through its mapping of rank
// 1's buffer. Then the same with a barrier and 43.
func TestPutWaitPublishesData(t *testing.T) {
	for seed := uint64(0); seed < 8; seed++ {
		h := newHarness(t, 2, seed)
		for _, c := range []struct {
			value byte
			kind  string
		}{{42, "signal"}, {43, "barrier"}} {
			must(t, h.ranks(func(r int) error {
				d := h.dev(r)
				if r == 1 {
					if err := d.Write(0, h.buf(1), bytes.Repeat([]byte{c.value}, 64)); err != nil {
						return err
					}
				}
				switch {
				case c.kind == "barrier":
					if err := h.launch(r, kernels.Barrier, 1, 2, h.signalArgs(r, 0, 5, int64(time.Second))); err != nil {
						return err
					}
				case r == 1:
					return h.launch(r, kernels.PutSignal, 1, 1, h.signalArgs(1, 0, 5, int64(time.Second)))
				default:
					if err := h.launch(r, kernels.WaitSignal, 1, 1, h.signalArgs(0, 1, 5, int64(time.Second))); err != nil {
						return err
					}
				}
				if r != 0 {
					return nil
				}
				got := make([]byte, 64)
				if err := d.Read(0, got, h.peer[0][1]+testDataOff); err != nil {
					return err
				}
				if !bytes.Equal(got, bytes.Repeat([]byte{c.value}, 64)) {
					t.Errorf("seed %d %s: rank 0 read %v, want %d", seed, c.kind, got[:4], c.value)
				}
				return nil
			}))
			h.run(h.padsZero)
		}
	}
}

// TestWaitTimeoutIsRecoverable: a wait nobody answers fails with a
// KernelError naming the slot after the timeout (virtual time), and the
// stream and pad stay usable.
func TestWaitTimeoutIsRecoverable(t *testing.T) {
	h := newHarness(t, 4, 1)
	const channel = 7
	var kerr *device.KernelError
	h.run(func() error {
		d := h.dev(2)
		start := h.s.Now()
		err := h.launch(2, kernels.WaitSignal, 1, 1, h.signalArgs(2, 3, channel, int64(time.Second)))
		if !errors.As(err, &kerr) {
			t.Fatalf("wait without a put returned %v, want a KernelError", err)
		}
		if waited := h.s.Now() - start; waited != time.Second {
			t.Errorf("timed out after %v of virtual time, want 1s", waited)
		}
		// The stream still works: a later put and wait succeed.
		if err := d.Synchronize(0); err != nil {
			t.Errorf("error not cleared: %v", err)
		}
		if err := h.launch(3, kernels.PutSignal, 1, 1, h.signalArgs(3, 2, channel, int64(time.Second))); err != nil {
			return err
		}
		return h.launch(2, kernels.WaitSignal, 1, 1, h.signalArgs(2, 3, channel, int64(time.Second)))
	})
	want := device.KernelError{Kernel: kernels.WaitSignal, Rank: 2, Block: 0, Peer: 3, Channel: channel,
		Slot: channel*4 + 3, Timeout: time.Second, Reason: "wait timed out (no signal arrived)"}
	if *kerr != want {
		t.Errorf("KernelError = %+v, want %+v", *kerr, want)
	}
	for _, s := range []string{"rank 2", "rank 3", "channel 7", "slot 31", "1s"} {
		if !strings.Contains(kerr.Error(), s) {
			t.Errorf("%q does not mention %q", kerr.Error(), s)
		}
	}
	h.run(h.padsZero)
}

// TestPutTimeout: a second put before the first is consumed waits, and
// times out naming the destination's slot.
func TestPutTimeout(t *testing.T) {
	h := newHarness(t, 2, 3)
	h.run(func() error {
		args := h.signalArgs(0, 1, 2, int64(500*time.Millisecond))
		if err := h.launch(0, kernels.PutSignal, 1, 1, args); err != nil {
			return err
		}
		err := h.launch(0, kernels.PutSignal, 1, 1, args)
		var kerr *device.KernelError
		if !errors.As(err, &kerr) || kerr.Slot != 2*2+0 || kerr.Peer != 1 || !strings.Contains(kerr.Reason, "put timed out") {
			t.Fatalf("second put: %v", err)
		}
		return h.launch(1, kernels.WaitSignal, 1, 1, h.signalArgs(1, 0, 2, int64(time.Second)))
	})
	h.run(h.padsZero)
}

// TestBarrierTimeoutInCollective: one rank missing from an all-reduce makes
// the others fail with a KernelError, not hang.
func TestBarrierTimeoutInCollective(t *testing.T) {
	h := newHarness(t, 3, 5)
	errs := h.ranks(func(r int) error {
		if r == 2 {
			return nil
		}
		a := h.allReduceArgs(r, device.Float32, device.Sum, 0, 64)
		a.Output = h.local[r] + outOff
		a.TimeoutNs = int64(time.Second)
		return h.launch(r, kernels.OneShotAllReduce, 1, 32, a)
	})
	for r := 0; r < 2; r++ {
		var kerr *device.KernelError
		if !errors.As(errs[r], &kerr) || kerr.Peer != 2 || kerr.Rank != r || kerr.Kernel != kernels.OneShotAllReduce {
			t.Errorf("rank %d: %v, want a KernelError waiting for rank 2", r, errs[r])
		}
	}
}

// TestUnzeroedPadIsCorrupt: fresh memory holds garbage, and a signal on a
// slot that was never zeroed is reported, not silently accepted.
func TestUnzeroedPadIsCorrupt(t *testing.T) {
	s := actor.NewScheduler(actor.Config{Seed: 1})
	w, err := NewWorld(s, Config{World: 1})
	if err != nil {
		t.Fatal(err)
	}
	d := w.Device(0)
	run := func() error {
		hd, err := d.CreatePhysical(device.Granularity)
		if err != nil {
			return err
		}
		p, err := mapBlock(d, hd, device.Granularity)
		if err != nil {
			return err
		}
		fresh := make([]byte, 4096)
		if err := d.Read(0, fresh, p); err != nil {
			return err
		}
		if bytes.Equal(fresh, make([]byte, len(fresh))) {
			t.Error("fresh physical memory reads as zeros")
		}
		arr := binary.LittleEndian.AppendUint64(nil, uint64(p))
		if err := d.Write(0, p+8192, arr); err != nil {
			return err
		}
		args := kernels.SignalArgs{Rank: 0, World: 1, Peer: 0, Channel: 0, PadPtrs: p + 8192, PadBytes: 4096}
		if err := d.Launch(0, device.Launch{Kernel: kernels.WaitSignal, Blocks: 1, Threads: 1, Args: args}); err != nil {
			return err
		}
		err = d.Synchronize(0)
		var kerr *device.KernelError
		if !errors.As(err, &kerr) || !strings.Contains(kerr.Reason, "not zeroed") {
			t.Errorf("wait on a garbage slot: %v", err)
		}
		return nil
	}
	s.Go("test", func() {
		if err := run(); err != nil {
			t.Error(err)
		}
	})
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
}

// TestSignalOrdersRecorded: every atomic is observed with its order and
// scope; the barrier kernel releases and acquires at system scope, and the
// one-shot start barrier puts relaxed and waits acquire.
func TestSignalOrdersRecorded(t *testing.T) {
	h := newHarness(t, 2, 9)
	type key struct {
		kernel string
		order  signal.Order
		scope  signal.Scope
		write  bool
	}
	seen := map[key]int{}
	h.w.Observe(func(a *Access) {
		if a.Kind == Atomic {
			seen[key{a.Kernel, a.Order, a.Scope, a.Write}]++
		}
	})
	must(t, h.ranks(func(r int) error {
		if err := h.launch(r, kernels.Barrier, 1, 2, h.signalArgs(r, 0, 1, 0)); err != nil {
			return err
		}
		a := h.allReduceArgs(r, device.Float32, device.Sum, 0, 16)
		a.Output = h.local[r] + outOff
		return h.launch(r, kernels.OneShotAllReduce, 1, 32, a)
	}))
	h.w.Observe(nil)
	// Each rank: one successful release put and one successful acquire wait
	// per barrier.
	for _, k := range []key{
		{kernels.Barrier, signal.Release, signal.System, true},
		{kernels.Barrier, signal.Acquire, signal.System, true},
		{kernels.OneShotAllReduce, signal.Relaxed, signal.System, true}, // start put
		{kernels.OneShotAllReduce, signal.Release, signal.System, true}, // end put
	} {
		if seen[k] < 2 {
			t.Errorf("%+v seen %d times, want at least 2", k, seen[k])
		}
	}
	if n := seen[key{kernels.OneShotAllReduce, signal.Acquire, signal.System, true}]; n != 4 {
		t.Errorf("one-shot successful acquire waits: %d, want 4 (2 ranks x 2 barriers)", n)
	}
	for k := range seen {
		if k.scope != signal.System {
			t.Errorf("atomic %+v is not at system scope", k)
		}
	}
}
