package kernels

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/symmem/symmem/device"
)

// lowLatencyKernel: every block sends its share of Input, one packet per
// 4-byte word, to the slot of this rank in every rank's workspace (peers
// in rotated order starting with this rank), then waits for the packets of
// every rank in its own workspace and reduces them in rank order into
// Output. A packet is the data word (low half) and Seq (high half), written
// and read as one atomic 64-bit access, so no barrier orders data and flag.
// Calls alternate between the two workspace halves: a rank starts call
// k+2, which reuses the half of call k, only after every peer sent its
// packets of call k+1, which each peer does after it finished reading
// call k.
func lowLatencyKernel(b Block, args any) error {
	const kernel = LowLatencyAllReduce
	a, err := asAllReduceArgs(kernel, args)
	if err != nil {
		return err
	}
	if _, err := a.check(kernel); err != nil {
		return err
	}
	if a.Numel == 0 {
		return nil
	}
	rank, world := int(a.Rank), int(a.World)
	bufs, err := loadPtrs(b, a.BufferPtrs, world, "buffer")
	if err != nil {
		return err
	}
	half := a.Offset + uint64(a.Seq&1)*uint64(world)*a.SlotBytes
	slot := func(dst, src int) device.Ptr { return bufs[dst].Add(half + uint64(src)*a.SlotBytes) }
	words := a.Numel * uint64(a.DType.Size()) / 4
	threads, grid := uint64(b.Threads()), uint64(b.Grid())
	n := min(threads, words)
	raw := make([]byte, 4*n)
	packets := make([]uint64, n)
	seq := uint64(a.Seq) << 32

	// Send.
	for first := uint64(b.Index()) * threads; first < words; first += grid * threads {
		m := min(threads, words-first)
		if err := b.Load(a.Input.Add(4*first), raw[:4*m]); err != nil {
			return fmt.Errorf("kernel %s rank %d block %d: reading Input: %w", kernel, rank, b.Index(), err)
		}
		for i := range m {
			packets[i] = seq | uint64(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		for step := range world {
			dst := (rank + step) % world
			if err := b.StoreU64s(slot(dst, rank).Add(8*first), packets[:m]); err != nil {
				return fmt.Errorf("kernel %s rank %d block %d: sending to rank %d: %w", kernel, rank, b.Index(), dst, err)
			}
		}
		b.Yield("ll send")
	}

	// Receive and reduce.
	srcs := make([][]byte, world)
	for r := range srcs {
		srcs[r] = make([]byte, 4*n)
	}
	out := make([]byte, 4*n)
	red := reducer{dt: a.DType, op: a.Op}
	timeout, start := time.Duration(a.TimeoutNs), b.Now()
	arrived := func(ws []uint64) bool {
		for _, w := range ws {
			if w&^0xffffffff != seq {
				return false
			}
		}
		return true
	}
	for first := uint64(b.Index()) * threads; first < words; first += grid * threads {
		m := min(threads, words-first)
		for src := range world {
			var left time.Duration
			if timeout > 0 {
				if left = timeout - (b.Now() - start); left <= 0 {
					return dataTimeout(b, rank, src, a.Seq, timeout)
				}
			}
			what := fmt.Sprintf("kernel %s rank %d block %d: packets of call %d from rank %d", kernel, rank, b.Index(), a.Seq, src)
			err := b.WaitU64s(slot(rank, src).Add(8*first), packets[:m], what, arrived, left)
			if errors.Is(err, ErrWaitTimeout) {
				return dataTimeout(b, rank, src, a.Seq, timeout)
			}
			if err != nil {
				return fmt.Errorf("kernel %s rank %d block %d: receiving from rank %d: %w", kernel, rank, b.Index(), src, err)
			}
			for i, w := range packets[:m] {
				binary.LittleEndian.PutUint32(srcs[src][4*i:], uint32(w))
			}
		}
		in := srcs
		if m != n {
			in = make([][]byte, world)
			for r := range in {
				in[r] = srcs[r][:4*m]
			}
		}
		red.reduce(out[:4*m], in)
		if err := b.Store(a.Output.Add(4*first), out[:4*m]); err != nil {
			return fmt.Errorf("kernel %s rank %d block %d: writing Output: %w", kernel, rank, b.Index(), err)
		}
		b.Yield("ll reduce")
	}
	return nil
}

// dataTimeout is the error of a low-latency kernel whose packets from
// peer did not arrive in time.
func dataTimeout(b Block, rank, peer int, seq uint32, timeout time.Duration) error {
	return &device.KernelError{
		Kernel: b.Kernel(), Rank: rank, Block: b.Index(), Peer: peer, Channel: -1, Slot: -1,
		Timeout: timeout, Reason: DataTimeoutReason(seq),
	}
}
