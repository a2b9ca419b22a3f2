package kernels

import (
	"errors"
	"time"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/signal"
)

// Block is what a kernel body sees of one thread block while it runs: its
// place in the grid, the memory of its device (through that device's
// address space, so pointers mapped from peers reach peer memory) and the
// scheduler. A Block acts for all the block's threads together; [Block.Lanes]
// runs per-thread work. Device implementations (the simulator) provide it.
//
// Every method that touches memory returns an error for an address that is
// not mapped with access on this device; such errors fail the launch and are
// reported by the stream's next synchronize.
type Block interface {
	// Kernel is the name of the running kernel.
	Kernel() string
	// Device is the ordinal of the device the block runs on.
	Device() int
	// Index is the block's index in the grid (blockIdx.x).
	Index() int
	// Grid is the number of blocks (gridDim.x).
	Grid() int
	// Threads is the number of threads per block (blockDim.x).
	Threads() int
	// Lane is the thread index of a lane started by Lanes, or -1 for the
	// block-wide context.
	Lane() int
	// Now is the device clock (virtual time in the simulator).
	Now() time.Duration

	// Load copies len(dst) bytes at p into dst (plain, non-atomic reads).
	Load(p device.Ptr, dst []byte) error
	// Store copies src to p (plain, non-atomic writes).
	Store(p device.Ptr, src []byte) error
	// LoadU64 reads the little-endian uint64 at p (plain read).
	LoadU64(p device.Ptr) (uint64, error)
	// CAS32 atomically replaces the uint32 at p (4-byte aligned) with new if
	// it holds old, and returns what it held, with the given order and scope.
	CAS32(p device.Ptr, old, new uint32, order signal.Order, scope signal.Scope) (prev uint32, err error)
	// WaitU32 blocks until ready reports true for the uint32 at p (read
	// atomically, relaxed, system scope), or returns [ErrWaitTimeout] once
	// timeout has passed (timeout <= 0 waits forever). what names the wait
	// in deadlock reports. The value may change again before the caller
	// acts on it: callers retry their compare-and-swap.
	WaitU32(p device.Ptr, what string, ready func(v uint32) bool, timeout time.Duration) error
	// StoreU64s writes vals to the consecutive uint64 words at p (8-byte
	// aligned), each word one atomic store (relaxed, system scope): a reader
	// sees every word either old or new, never torn. The low-latency
	// all-reduce sends its data and flags this way.
	StoreU64s(p device.Ptr, vals []uint64) error
	// WaitU64s blocks until ready holds for the len(dst) consecutive uint64
	// words at p (each read atomically, relaxed, system scope), then copies
	// them into dst; it returns [ErrWaitTimeout] once timeout has passed
	// (timeout <= 0 waits forever). what names the wait in deadlock reports.
	WaitU64s(p device.Ptr, dst []uint64, what string, ready func(words []uint64) bool, timeout time.Duration) error

	// Lanes runs fn for lanes 0..n-1 (n <= Threads) as separate threads,
	// with a block-wide synchronisation (__syncthreads) before and after,
	// and returns the error of the lowest failing lane.
	Lanes(n int, fn func(lane Block) error) error
	// Yield is a scheduling point where other blocks and ranks may run.
	Yield(point string)
}

// ErrWaitTimeout is returned by [Block.WaitU32] and [Block.WaitU64s] when its timeout passes.
var ErrWaitTimeout = errors.New("wait timed out")
