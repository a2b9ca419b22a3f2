package kernels

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/signal"
)

// signalOp performs one signal operation on the slot at p (the slot's
// address as mapped on this device): the compare-and-swap of s.Op at system
// scope with the given order, retried by package signal's rules until it
// succeeds, the slot turns out corrupt, or timeout (<= 0: none) passes.
func signalOp(b Block, p device.Ptr, s signal.Slot, order signal.Order, timeout time.Duration) error {
	old, new := s.Op.Swap()
	start := b.Now()
	for {
		prev, err := b.CAS32(p, old, new, order, signal.System)
		if err != nil {
			return fmt.Errorf("kernel %s block %d: %v: %w", b.Kernel(), b.Index(), s, err)
		}
		switch s.Op.Next(prev) {
		case signal.Done:
			return nil
		case signal.Corrupt:
			return slotError(b, s, timeout, fmt.Sprintf("%s found pad of rank %d slot holding 0x%08x (pad not zeroed or overwritten)", s.Op, s.Pad, prev))
		}
		var left time.Duration
		if timeout > 0 {
			if left = timeout - (b.Now() - start); left <= 0 {
				return slotError(b, s, timeout, timeoutReason(s))
			}
		}
		what := fmt.Sprintf("kernel %s rank %d block %d: %s", b.Kernel(), s.Rank, b.Index(), s)
		err = b.WaitU32(p, what, s.Op.Ready, left)
		if errors.Is(err, ErrWaitTimeout) {
			return slotError(b, s, timeout, timeoutReason(s))
		}
		if err != nil {
			return fmt.Errorf("kernel %s block %d: %v: %w", b.Kernel(), b.Index(), s, err)
		}
	}
}

func timeoutReason(s signal.Slot) string {
	if s.Op == signal.Put {
		return fmt.Sprintf("put timed out (previous signal still pending in pad of rank %d)", s.Pad)
	}
	return "wait timed out (no signal arrived)"
}

func slotError(b Block, s signal.Slot, timeout time.Duration, reason string) error {
	return &device.KernelError{
		Kernel:  b.Kernel(),
		Rank:    s.Rank,
		Block:   b.Index(),
		Peer:    s.Peer,
		Channel: s.Channel,
		Slot:    s.Index,
		Timeout: timeout,
		Reason:  reason,
	}
}

// loadPtrs reads a device array of n uint64 addresses.
func loadPtrs(b Block, arr device.Ptr, n int, what string) ([]device.Ptr, error) {
	raw := make([]byte, 8*n)
	if err := b.Load(arr, raw); err != nil {
		return nil, fmt.Errorf("kernel %s block %d: reading %s array at %v: %w", b.Kernel(), b.Index(), what, arr, err)
	}
	ptrs := make([]device.Ptr, n)
	for i := range ptrs {
		ptrs[i] = device.Ptr(binary.LittleEndian.Uint64(raw[8*i:]))
		if ptrs[i] == 0 {
			return nil, fmt.Errorf("kernel %s block %d: %s[%d] is null", b.Kernel(), b.Index(), what, i)
		}
	}
	return ptrs, nil
}

// barrier synchronises this block with the same block of every peer on
// channel: lane p puts to peer p with putOrder, then waits for peer p with
// waitOrder.
func barrier(b Block, rank, world int, pads []device.Ptr, padBytes uint64, channel int, putOrder, waitOrder signal.Order, timeout time.Duration) error {
	if world == 1 {
		return nil
	}
	return b.Lanes(world, func(l Block) error {
		peer := l.Lane()
		if peer == rank {
			return nil
		}
		put, err := signal.Locate(signal.Put, rank, peer, channel, world, padBytes)
		if err != nil {
			return fmt.Errorf("kernel %s block %d: %w", b.Kernel(), b.Index(), err)
		}
		if err := signalOp(l, pads[peer].Add(put.Offset), put, putOrder, timeout); err != nil {
			return err
		}
		wait, err := signal.Locate(signal.Wait, rank, peer, channel, world, padBytes)
		if err != nil {
			return fmt.Errorf("kernel %s block %d: %w", b.Kernel(), b.Index(), err)
		}
		return signalOp(l, pads[rank].Add(wait.Offset), wait, waitOrder, timeout)
	})
}

// The signal kernels: put_signal and wait_signal run one block of one
// thread, barrier one block of a thread per rank.
var (
	_ = Register(Descriptor[SignalArgs]{
		Name:  PutSignal,
		Check: func(a SignalArgs) error { return a.check(PutSignal, true) },
		Shape: func(ShapeParams) (int, int) { return 1, 1 },
		Run:   putSignalKernel,
	})
	_ = Register(Descriptor[SignalArgs]{
		Name:  WaitSignal,
		Check: func(a SignalArgs) error { return a.check(WaitSignal, true) },
		Shape: func(ShapeParams) (int, int) { return 1, 1 },
		Run:   waitSignalKernel,
	})
	_ = Register(Descriptor[SignalArgs]{
		Name:  Barrier,
		Check: func(a SignalArgs) error { return a.check(Barrier, false) },
		Shape: func(p ShapeParams) (int, int) { return 1, p.World },
		CheckLaunch: func(blocks, threads int, a SignalArgs) error {
			if threads < int(a.World) {
				return fmt.Errorf("kernel %s: %d threads for world size %d (one per rank needed)", Barrier, threads, a.World)
			}
			return nil
		},
		Run: barrierKernel,
	})
)

// signalSetup validates the arguments and reads the pad array; ok is false
// for blocks other than 0, which do nothing.
func signalSetup(kernel string, b Block, a SignalArgs, withPeer bool) (pads []device.Ptr, ok bool, err error) {
	if err = a.check(kernel, withPeer); err != nil {
		return nil, false, err
	}
	if b.Index() != 0 {
		return nil, false, nil
	}
	pads, err = loadPtrs(b, a.PadPtrs, int(a.World), "pad")
	return pads, err == nil, err
}

// putSignalKernel raises the slot of this rank in the pad of rank Peer on
// Channel (release, system scope).
func putSignalKernel(b Block, a SignalArgs) error {
	pads, ok, err := signalSetup(PutSignal, b, a, true)
	if !ok {
		return err
	}
	s, err := signal.Locate(signal.Put, int(a.Rank), int(a.Peer), int(a.Channel), int(a.World), a.PadBytes)
	if err != nil {
		return fmt.Errorf("kernel %s: %w", PutSignal, err)
	}
	return signalOp(b, pads[a.Peer].Add(s.Offset), s, signal.Put.HostOrder(), time.Duration(a.TimeoutNs))
}

// waitSignalKernel consumes the signal from rank Peer on Channel in this
// rank's pad (acquire, system scope).
func waitSignalKernel(b Block, a SignalArgs) error {
	pads, ok, err := signalSetup(WaitSignal, b, a, true)
	if !ok {
		return err
	}
	s, err := signal.Locate(signal.Wait, int(a.Rank), int(a.Peer), int(a.Channel), int(a.World), a.PadBytes)
	if err != nil {
		return fmt.Errorf("kernel %s: %w", WaitSignal, err)
	}
	return signalOp(b, pads[a.Rank].Add(s.Offset), s, signal.Wait.HostOrder(), time.Duration(a.TimeoutNs))
}

// barrierKernel: lane p puts to peer p (release) and waits for it (acquire)
// on Channel, for every peer other than this rank.
func barrierKernel(b Block, a SignalArgs) error {
	pads, ok, err := signalSetup(Barrier, b, a, false)
	if !ok {
		return err
	}
	return barrier(b, int(a.Rank), int(a.World), pads, a.PadBytes, int(a.Channel),
		signal.Put.HostOrder(), signal.Wait.HostOrder(), time.Duration(a.TimeoutNs))
}
