package kernels

import (
	"fmt"
	"math"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/signal"
)

// Kernel names.
const (
	PutSignal        = "put_signal"
	WaitSignal       = "wait_signal"
	Barrier          = "barrier"
	OneShotAllReduce = "one_shot_all_reduce"
	TwoShotAllReduce = "two_shot_all_reduce"
	// LowLatencyAllReduce is the one-shot all-reduce without barriers: each
	// rank writes its input into every rank's workspace as 8-byte packets
	// of one data word and the call's sequence number, and every rank
	// reduces once all packets of the call have arrived (NCCL's LL
	// protocol). Calls alternate between two halves of the workspace.
	LowLatencyAllReduce = "ll_all_reduce"
)

// Launch limits of the kernels (and of the devices they run on). Two-shot
// and low-latency grids grow to 128 blocks (one a multiprocessor on an
// H100/H200) only for tensors that give every thread of that many blocks
// work: two-shot above 24 blocks from 1.5 MiB (world 4) or 768 KiB (world
// 2), low-latency above 64 blocks from 128 KiB. On nvidia-h200-x4 that made
// two-shot 3-10% faster from 4 MiB up and low-latency 10% faster at 256
// KiB; [Rank.SetMaxBlocks] lowers the limit where compute kernels need the
// multiprocessors.
const (
	MaxThreads          = 1024 // threads per block
	OneShotMaxBlocks    = 24
	OneShotThreads      = 512
	TwoShotMaxBlocks    = 128
	TwoShotThreads      = 1024
	LowLatencyThreads   = 512
	LowLatencyMaxBlocks = 128
	warp                = 32
)

// SignalArgs are the arguments of put_signal, wait_signal and barrier.
type SignalArgs struct {
	Rank, World int32
	Peer        int32      // put: destination rank; wait: source rank; barrier: unused
	Channel     int32      // pad channel
	PadPtrs     device.Ptr // device array of World uint64 pad addresses (as mapped on this device)
	PadBytes    uint64     // size of every pad; bounds Channel
	TimeoutNs   int64      // per put or wait; 0 waits forever
}

// AllReduceArgs are the arguments of one_shot_all_reduce and
// two_shot_all_reduce. Every rank's tensor lies at Offset inside its buffer;
// block b uses pad channel b.
type AllReduceArgs struct {
	Rank, World int32
	DType       device.DType
	Op          device.ReduceOp
	BufferPtrs  device.Ptr // device array of World uint64 data-buffer addresses
	PadPtrs     device.Ptr // device array of World uint64 pad addresses
	PadBytes    uint64     // size of every pad; bounds the grid (block b uses channel b)
	Offset      uint64     // byte offset of the tensor inside every rank's buffer
	Numel       uint64
	// Input: one-shot "_copy" form: a local, non-symmetric input copied into
	// this rank's buffer at Offset before the start barrier; 0 otherwise.
	// Must be 0 for two-shot.
	Input device.Ptr
	// Output: one-shot: where the result goes (required). Two-shot: 0 means
	// in place (the result lands in every rank's buffer); otherwise the
	// "_out" form, which gathers the result there. Output must not overlap
	// the buffers.
	Output    device.Ptr
	TimeoutNs int64 // per put or wait; 0 waits forever
	// SlotBytes is the low-latency kernel's stride between the packets of
	// two source ranks inside one workspace half (at least twice the
	// tensor's bytes, a multiple of 8). The workspace of every rank starts
	// at Offset inside its buffer and holds 2 halves of World slots, then
	// the call counter (see [LowLatencyWorkspace]). Other kernels ignore it.
	SlotBytes uint64
}

// Pads implements [Args].
func (a SignalArgs) Pads() Pads {
	return Pads{Rank: int(a.Rank), World: int(a.World), Ptrs: a.PadPtrs, Bytes: a.PadBytes}
}

// Pads implements [Args].
func (a AllReduceArgs) Pads() Pads {
	return Pads{Rank: int(a.Rank), World: int(a.World), Ptrs: a.PadPtrs, Bytes: a.PadBytes}
}

// CheckAlignment checks that a tensor at byte offset offsetBytes of
// sizeBytes bytes can be reduced: both must be multiples of max(4, element
// size). It returns the vector width: the largest of 16, 8 and 4 bytes that
// divides both.
func CheckAlignment(offsetBytes, sizeBytes uint64, dt device.DType) (vecBytes int, err error) {
	if !dt.Valid() {
		return 0, fmt.Errorf("alignment: unsupported dtype %v", dt)
	}
	align := uint64(max(4, dt.Size()))
	if offsetBytes%align != 0 {
		return 0, fmt.Errorf("alignment: %v tensor offset of %d bytes is not a multiple of %d", dt, offsetBytes, align)
	}
	if sizeBytes%align != 0 {
		return 0, fmt.Errorf("alignment: %v tensor size of %d bytes is not a multiple of %d", dt, sizeBytes, align)
	}
	for _, v := range []uint64{16, 8, 4} {
		if offsetBytes%v == 0 && sizeBytes%v == 0 {
			return int(v), nil
		}
	}
	return 4, nil // unreachable: both are multiples of 4
}

// elementwise splits numel elements into splits equal parts and sizes a grid
// that gives each thread one vector of one part.
func elementwise(numel uint64, dt device.DType, splits, maxBlocks, maxThreads, world, smCount int) (blocks, threads int) {
	size := uint64(max(dt.Size(), 1))
	vec := uint64(4)
	if numel <= math.MaxUint64/size {
		for _, v := range []uint64{16, 8} {
			if (numel*size)%v == 0 {
				vec = v
				break
			}
		}
	}
	vecElems := max(vec/size, 1)
	perSplit := roundUp(numel, vecElems*uint64(splits)) / uint64(splits)
	vectors := ceilDiv(perSplit, vecElems)
	minThreads := int(roundUp(uint64(world), warp))
	if vectors <= uint64(maxThreads) {
		blocks, threads = 1, int(roundUp(max(vectors, 1), warp))
	} else {
		blocks, threads = int(min(ceilDiv(vectors, uint64(maxThreads)), uint64(maxBlocks))), maxThreads
	}
	threads = max(threads, minThreads)
	if smCount > 0 {
		blocks = min(blocks, smCount)
	}
	return blocks, threads
}

// lowLatencyShape gives every thread one 4-byte word: up to
// LowLatencyThreads threads per block, then up to LowLatencyMaxBlocks
// blocks (and never more than smCount).
func lowLatencyShape(numel uint64, dt device.DType, smCount, maxBlocks int) (blocks, threads int) {
	size := uint64(max(dt.Size(), 1))
	words := uint64(1)
	if numel <= math.MaxUint64/size {
		words = max(ceilDiv(numel*size, 4), 1)
	}
	threads = int(min(roundUp(words, warp), LowLatencyThreads))
	blocks = int(min(ceilDiv(words, uint64(threads)), uint64(maxBlocks)))
	if smCount > 0 {
		blocks = min(blocks, smCount)
	}
	return blocks, threads
}

func roundUp(n, m uint64) uint64 {
	if m == 0 {
		return n
	}
	return ceilDiv(n, m) * m
}

func ceilDiv(n, m uint64) uint64 {
	if n == 0 {
		return 0
	}
	return (n-1)/m + 1
}

// Chunk is the number of elements each rank reduces in two-shot:
// round_up(numel, vecElems*world) / world.
func Chunk(numel uint64, vecElems, world int) uint64 {
	return roundUp(numel, uint64(vecElems)*uint64(world)) / uint64(world)
}

// check validates signal kernel arguments (the channel against the pad);
// withPeer checks Peer too (put and wait, not barrier).
func (a SignalArgs) check(kernel string, withPeer bool) error {
	world := int(a.World)
	if err := signal.CheckRank(int(a.Rank), world); err != nil {
		return fmt.Errorf("kernel %s: %w", kernel, err)
	}
	if withPeer {
		if err := signal.CheckRank(int(a.Peer), world); err != nil {
			return fmt.Errorf("kernel %s: peer: %w", kernel, err)
		}
	}
	if a.PadBytes == 0 {
		return fmt.Errorf("kernel %s: PadBytes is 0 (set it to the signal pad size)", kernel)
	}
	if err := signal.CheckChannel(int(a.Channel), world, a.PadBytes); err != nil {
		return fmt.Errorf("kernel %s: %w", kernel, err)
	}
	if a.PadPtrs == 0 {
		return fmt.Errorf("kernel %s: PadPtrs is null", kernel)
	}
	if a.TimeoutNs < 0 {
		return fmt.Errorf("kernel %s: negative timeout %dns", kernel, a.TimeoutNs)
	}
	return nil
}

// check validates what every all-reduce kernel needs of its arguments and
// returns the vector width; each kernel's own check adds its rules.
func (a AllReduceArgs) check(kernel string) (vecBytes int, err error) {
	world := int(a.World)
	if err := signal.CheckRank(int(a.Rank), world); err != nil {
		return 0, fmt.Errorf("kernel %s: %w", kernel, err)
	}
	if !a.DType.Valid() {
		return 0, fmt.Errorf("kernel %s: unsupported dtype %v", kernel, a.DType)
	}
	if !a.Op.Valid() {
		return 0, fmt.Errorf("kernel %s: unsupported reduce op %v", kernel, a.Op)
	}
	size := uint64(a.DType.Size())
	if a.Numel > math.MaxUint64/size || a.Offset > math.MaxUint64-a.Numel*size {
		return 0, fmt.Errorf("kernel %s: %d elements at offset %d overflow the address space", kernel, a.Numel, a.Offset)
	}
	vec, err := CheckAlignment(a.Offset, a.Numel*size, a.DType)
	if err != nil {
		return 0, fmt.Errorf("kernel %s: %w", kernel, err)
	}
	if a.BufferPtrs == 0 || a.PadPtrs == 0 {
		return 0, fmt.Errorf("kernel %s: BufferPtrs or PadPtrs is null", kernel)
	}
	if a.PadBytes == 0 {
		return 0, fmt.Errorf("kernel %s: PadBytes is 0 (set it to the signal pad size)", kernel)
	}
	if signal.Channels(a.PadBytes, world) < 1 {
		return 0, fmt.Errorf("kernel %s: pad of %d bytes has no channel for world size %d", kernel, a.PadBytes, world)
	}
	if a.TimeoutNs < 0 {
		return 0, fmt.Errorf("kernel %s: negative timeout %dns", kernel, a.TimeoutNs)
	}
	return vec, nil
}

// checkVectors checks that Input and Output (where set) are aligned to the
// vector width.
func (a AllReduceArgs) checkVectors(kernel string, vec int) error {
	if a.Input%device.Ptr(vec) != 0 {
		return fmt.Errorf("kernel %s: Input %v is not aligned to the %d-byte vector", kernel, a.Input, vec)
	}
	if a.Output%device.Ptr(vec) != 0 {
		return fmt.Errorf("kernel %s: Output %v is not aligned to the %d-byte vector", kernel, a.Output, vec)
	}
	return nil
}

// checkLowLatency validates what the low-latency kernel adds: a local
// input and an output (4-byte aligned, possibly the same) and a slot
// stride that holds the packets of the tensor. Its data moves in 4-byte
// words.
func (a AllReduceArgs) checkLowLatency() error {
	const kernel = LowLatencyAllReduce
	bytes := a.Numel * uint64(a.DType.Size())
	switch {
	case a.Input == 0 || a.Output == 0:
		return fmt.Errorf("kernel %s: Input and Output are required (Input %v, Output %v)", kernel, a.Input, a.Output)
	case a.Input%4 != 0 || a.Output%4 != 0:
		return fmt.Errorf("kernel %s: Input %v or Output %v is not 4-byte aligned", kernel, a.Input, a.Output)
	case a.Offset%8 != 0 || a.SlotBytes%8 != 0:
		return fmt.Errorf("kernel %s: workspace offset %d or slot stride %d is not a multiple of 8", kernel, a.Offset, a.SlotBytes)
	case bytes > math.MaxUint64/2 || a.SlotBytes < 2*bytes:
		return fmt.Errorf("kernel %s: slot stride %d bytes cannot hold the packets of %d bytes (%d needed)", kernel, a.SlotBytes, bytes, 2*bytes)
	case a.SlotBytes > (math.MaxUint64-a.Offset-LowLatencyControlBytes)/(2*uint64(max(a.World, 1))):
		return fmt.Errorf("kernel %s: workspace of 2 x %d slots of %d bytes overflows the address space", kernel, a.World, a.SlotBytes)
	}
	return nil
}

// LowLatencyControlBytes is the size of the low-latency workspace's
// control words, after its two halves: the number of the last call
// (uint32) and the count of the current call's finished blocks (uint32),
// padded.
const LowLatencyControlBytes = 16

// LowLatencyWorkspace is the bytes of workspace the low-latency kernel
// needs on every rank for tensors of up to maxBytes bytes on world ranks:
// two halves of world slots of 2*maxBytes (rounded up to 8) bytes, then
// LowLatencyControlBytes of control words. The workspace must start
// zeroed on every rank.
//
// The call number lives on the device, not in the launch's arguments, so
// that a graph of captured calls can be replayed: every block reads it
// when it starts and uses the next number; the last block to finish
// stores that number back.
func LowLatencyWorkspace(maxBytes uint64, world int) (slotBytes, total uint64) {
	slotBytes = roundUp(2*maxBytes, 8)
	return slotBytes, 2*uint64(world)*slotBytes + LowLatencyControlBytes
}
