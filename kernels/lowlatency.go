package kernels

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/signal"
)

// ll_all_reduce gives every thread one 4-byte word: up to
// LowLatencyThreads threads per block, then up to LowLatencyMaxBlocks
// blocks (and never more than the device's multiprocessors). Its blocks
// do not synchronise with each other, so the pad's channels do not bound
// its grid.
var _ = Register(Descriptor[AllReduceArgs]{
	Name:       LowLatencyAllReduce,
	Collective: true,
	Check:      checkLowLatency,
	Shape: func(p ShapeParams) (int, int) {
		return lowLatencyShape(p.Numel, p.DType, p.SMCount, p.blockLimit(LowLatencyMaxBlocks))
	},
	CheckLaunch: func(blocks, threads int, a AllReduceArgs) error {
		if threads > LowLatencyThreads {
			return fmt.Errorf("kernel %s: %d threads per block (at most %d)", LowLatencyAllReduce, threads, LowLatencyThreads)
		}
		return nil
	},
	Run: lowLatencyKernel,
})

// checkLowLatency adds to the all-reduce checks what the low-latency
// kernel needs (see [AllReduceArgs.checkLowLatency]).
func checkLowLatency(a AllReduceArgs) error {
	if _, err := a.check(LowLatencyAllReduce); err != nil {
		return err
	}
	return a.checkLowLatency()
}

// lowLatencyKernel: every block sends its share of Input, one packet per
// 4-byte word, to the slot of this rank in every rank's workspace (peers
// in rotated order starting with this rank, in runs of words that readers
// may see arrive one at a time), then waits for the packets of every rank
// in its own workspace and reduces them in rank order into Output. A packet is the data word (low half) and the call's number (high
// half), written and read as one atomic 64-bit access, so no barrier
// orders data and flag. Calls alternate between the two workspace halves:
// a rank starts call k+2, which reuses the half of call k, only after every
// peer sent its packets of call k+1, which each peer does after it
// finished reading call k.
//
// The call number is kept on the device, in the workspace's control words
// (see [LowLatencyWorkspace]): every block starts from the number the last
// call stored, and the last block to finish stores its own. Every rank
// makes the same calls, so the numbers agree without the host passing
// them, and a captured graph of calls replays correctly.
func lowLatencyKernel(b Block, a AllReduceArgs) error {
	const kernel = LowLatencyAllReduce
	if err := checkLowLatency(a); err != nil {
		return err
	}
	if a.Numel == 0 {
		return nil
	}
	bufs, err := loadPtrs(b, a.BufferPtrs, int(a.World), "buffer")
	if err != nil {
		return err
	}
	ctl := bufs[a.Rank].Add(a.Offset + 2*uint64(a.World)*a.SlotBytes)
	seq, err := startCall(b, ctl)
	if err != nil {
		return fmt.Errorf("kernel %s rank %d block %d: reading the call number: %w", kernel, a.Rank, b.Index(), err)
	}
	err = lowLatencyCall(b, a, bufs, seq)
	if ferr := finishCall(b, ctl, seq); ferr != nil {
		err = errors.Join(err, fmt.Errorf("kernel %s rank %d block %d: storing the call number: %w", kernel, a.Rank, b.Index(), ferr))
	}
	return err
}

// startCall returns the number of the call starting now: one more than the
// last call's, stored in the control word at ctl, skipping 0 (the zeroed
// workspace's flag).
func startCall(b Block, ctl device.Ptr) (uint32, error) {
	var raw [4]byte
	if err := b.Load(ctl, raw[:]); err != nil {
		return 0, err
	}
	seq := binary.LittleEndian.Uint32(raw[:]) + 1
	if seq == 0 {
		seq = 1
	}
	return seq, nil
}

// finishCall counts this block as finished in the control word after ctl
// (the CUDA kernel's __threadfence, atomicAdd and, in the last block,
// another __threadfence: one acquire-release read-modify-write at GPU
// scope; the acquire is what orders every block's read of the call number
// before the last block's store); the last block of the grid resets the
// count and then stores seq as the last call's number, for the next call
// (stream order makes it visible there).
func finishCall(b Block, ctl device.Ptr, seq uint32) error {
	done := ctl.Add(4)
	old := uint32(0)
	for {
		prev, err := b.CAS32(done, old, old+1, signal.AcqRel, signal.GPU)
		if err != nil {
			return err
		}
		if prev == old {
			break
		}
		old = prev
	}
	if old+1 != uint32(b.Grid()) {
		return nil
	}
	// As the CUDA kernel: the count back to 0, then the number, two plain
	// 32-bit stores.
	var zero, num [4]byte
	binary.LittleEndian.PutUint32(num[:], seq)
	if err := b.Store(done, zero[:]); err != nil {
		return err
	}
	return b.Store(ctl, num[:])
}

// llRuns is how many runs of words a block's packets to one peer are sent
// in, with a scheduling point before each: a reader may find a chunk part
// new and part stale, as on the GPU, where every thread stores its word on
// its own.
const llRuns = 8

// lowLatencyCall is one block's part of call seq.
func lowLatencyCall(b Block, a AllReduceArgs, bufs []device.Ptr, seq32 uint32) error {
	const kernel = LowLatencyAllReduce
	rank, world := int(a.Rank), int(a.World)
	half := a.Offset + uint64(seq32&1)*uint64(world)*a.SlotBytes
	slot := func(dst, src int) device.Ptr { return bufs[dst].Add(half + uint64(src)*a.SlotBytes) }
	words := a.Numel * uint64(a.DType.Size()) / 4
	threads, grid := uint64(b.Threads()), uint64(b.Grid())
	n := min(threads, words)
	raw := make([]byte, 4*n)
	packets := make([]uint64, n)
	seq := uint64(seq32) << 32

	// Send.
	for first := uint64(b.Index()) * threads; first < words; first += grid * threads {
		m := min(threads, words-first)
		if err := b.Load(a.Input.Add(4*first), raw[:4*m]); err != nil {
			return fmt.Errorf("kernel %s rank %d block %d: reading Input: %w", kernel, rank, b.Index(), err)
		}
		for i := range m {
			packets[i] = seq | uint64(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		// Each run of words goes to every peer, in rotated order starting
		// with this rank, before the next run: the order of one thread's
		// stores on the GPU.
		run := max((m+llRuns-1)/llRuns, 1)
		for lo := uint64(0); lo < m; lo += run {
			hi := min(lo+run, m)
			for step := range world {
				dst := (rank + step) % world
				if err := b.StoreU64s(slot(dst, rank).Add(8*(first+lo)), packets[lo:hi]); err != nil {
					return fmt.Errorf("kernel %s rank %d block %d: sending to rank %d: %w", kernel, rank, b.Index(), dst, err)
				}
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
		// Each peer's words in the runs they were sent in: a run's words
		// are taken once all of them carry this call's number.
		run := max((m+llRuns-1)/llRuns, 1)
		for src := range world {
			what := fmt.Sprintf("kernel %s rank %d block %d: packets of call %d from rank %d", kernel, rank, b.Index(), seq32, src)
			for lo := uint64(0); lo < m; lo += run {
				var left time.Duration
				if timeout > 0 {
					if left = timeout - (b.Now() - start); left <= 0 {
						return dataTimeout(b, rank, src, seq32, timeout)
					}
				}
				hi := min(lo+run, m)
				err := b.WaitU64s(slot(rank, src).Add(8*(first+lo)), packets[lo:hi], what, arrived, left)
				if errors.Is(err, ErrWaitTimeout) {
					return dataTimeout(b, rank, src, seq32, timeout)
				}
				if err != nil {
					return fmt.Errorf("kernel %s rank %d block %d: receiving from rank %d: %w", kernel, rank, b.Index(), src, err)
				}
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

// DataTimeoutReason is how a low-latency kernel's timeout reads: the
// packets of call seq did not all arrive.
func DataTimeoutReason(seq uint32) string {
	return fmt.Sprintf("data of call %d did not arrive", seq)
}
