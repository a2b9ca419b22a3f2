package sim

import (
	"fmt"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/signal"
)

// AccessKind says what an [Access] reports.
type AccessKind int

// The kinds of [Access]. Memory accesses (Load, Store, Atomic) come with an
// address range; the others are the synchronisation edges a happens-before
// analysis needs: a host task enqueues op Seq on a stream (Enqueue), the
// stream's worker task runs it (OpStart, OpEnd; ops of one stream run in Seq
// order), a kernel op forks its blocks (BlockStart, BlockEnd with Parent =
// the worker task), a block forks lanes between two __syncthreads
// (LaneStart, LaneEnd with Parent = the block task), a block that joined
// its lanes at a barrier continues (BlockSync: its next lanes fork from
// what all of them did), and a host task learns that the stream completed
// every op up to Seq (Complete). A Fence is a fence instruction of a kernel
// thread (Order AcqRel, Scope its scope, SC for fence.sc and membar).
const (
	Load AccessKind = iota
	Store
	Atomic
	Enqueue
	OpStart
	OpEnd
	BlockStart
	BlockEnd
	LaneStart
	LaneEnd
	Complete
	BlockSync
	Fence
)

func (k AccessKind) String() string {
	names := [...]string{"load", "store", "atomic", "enqueue", "op-start", "op-end",
		"block-start", "block-end", "lane-start", "lane-end", "complete", "block-sync", "fence"}
	if k >= 0 && int(k) < len(names) {
		return names[k]
	}
	return fmt.Sprintf("AccessKind(%d)", int(k))
}

// Access is one event reported to the observer installed with
// [World.Observe]. A memory access that spans several mappings is reported
// once per mapping.
type Access struct {
	Kind   AccessKind
	Task   int // scheduler task that performed it
	Parent int // BlockStart/LaneStart: the task that forked it; else -1
	Device int
	Stream device.Stream
	Seq    uint64 // stream op sequence number (1-based)
	Op     string // stream op: "kernel", "memset", "copy", "write", "read", "event"
	Kernel string // kernel name for kernel ops
	Launch uint64 // launch number, unique in the world
	Block  int    // block index; -1 outside kernels
	Lane   int    // lane index; -1 for block-wide accesses

	Addr device.Ptr // virtual address on Device
	Size uint64
	// Unit, when not 0, says that a strong access (Atomic) is a run of
	// independent strong accesses of Unit bytes each (a packet's words),
	// reported as one.
	Unit       uint64
	Phys       uint64 // physical allocation id (the same bytes through any mapping)
	PhysOffset uint64
	Owner      int  // device that created the physical allocation
	Write      bool // Store, a successful compare-and-swap, memset/copy/write targets
	// Shared marks an access to a block's shared memory: Phys names the
	// block's shared memory (see [SharedPhys]) and PhysOffset the offset.
	Shared bool
	// RMW marks an Atomic that is a read-modify-write (an atom or a
	// compare-and-swap), not a strong load or store.
	RMW bool
	// SC marks a Fence that is fence.sc (or membar): such fences are
	// totally ordered with one another.
	SC    bool
	Order signal.Order
	Scope signal.Scope
	// Old and New are an Atomic's compare-and-swap operands (a signal put
	// swaps 0 for 1, a wait 1 for 0).
	Old, New uint32
	// Stamp numbers a strong write (an Atomic that writes) among the
	// strong stores of the simulator's weak reads: the store of its unit
	// i (of each Unit bytes, or the whole access) is Stamp+i. 0 for a
	// strong write that no strong read can return once it is overwritten
	// (the Go twins' packets, which weak reads leave out).
	Stamp uint64
	// From says which store each unit of a strong read (an Atomic that
	// does not write) returned, when some unit returned a store older
	// than its location's newest (a weak read): From[i] is the number of
	// the store unit i read (see Stamp), 0 where it read the newest, or
	// [StoreUnknown]. nil when every unit read its location's newest
	// store, the common case, which costs nothing.
	From []uint64
	// Line is the PTX source line of the instruction that made a PTX
	// thread's access; 0 for every other access.
	Line int
	// NC marks a plain Load made by ld.global.nc, the non-coherent
	// (read-only) path: valid only of bytes that nothing writes while
	// the load's kernel runs.
	NC bool
}

// StoreUnknown in [Access].From is a unit that read a value no numbered
// strong store wrote: what its location held before the strong stores the
// simulator keeps (written by a plain store, a copy or the host).
const StoreUnknown = ^uint64(0)

// emit sends a to the observer, if any. The observer is handed the
// world's own access (see scratch), a copied there unless it was built
// there: handing it a itself would make every caller's access escape to
// the heap.
func (w *World) emit(a *Access) {
	if w.observe != nil {
		task := -1
		if cur := w.sched.Current(); cur != nil {
			task = cur.ID()
		}
		w.emitAs(a, task)
	}
}

// emitAs is emit of an access made by the task of ID task.
func (w *World) emitAs(a *Access, task int) {
	if w.observe != nil {
		a.Task = task
		if a != &w.scratch {
			w.scratch = *a
		}
		w.observe(&w.scratch)
	}
}

// scratchAccess returns the access the world hands its observer, for an
// emitter to build its access in place (the hot paths: a PTX thread's
// accesses); it is overwritten by the next emit.
func (w *World) scratchAccess() *Access { return &w.scratch }

// SharedPhys is the physical id under which the shared memory of block
// block of launch launch is reported: ids of real allocations count up from
// 1, so these, with the top bit set, never collide with them.
func SharedPhys(launch uint64, block int) uint64 {
	return 1<<63 | launch<<24 | uint64(block)
}

// BarrierPhys is the physical id under which the arrivals at named
// barrier id of block block of launch launch are reported: a PTX thread
// that arrives at a barrier with a thread count or at bar.arrive makes a
// release store (an Atomic) to 4 bytes of its own, at offset
// 4*((n%BarrierSlots)*threads + thread) for its n-th arrival there (from
// 0) and its index in a block of threads threads; a thread released from
// a phase makes an acquire load of the bytes of each other arrival of
// that phase. The ids, with the top two bits set, collide neither with
// real allocations nor with [SharedPhys].
func BarrierPhys(launch uint64, block, id int) uint64 {
	return 3<<62 | launch<<28 | uint64(block)<<4 | uint64(id)
}

// WarpSyncPhys is [BarrierPhys] for the bar.warp.sync of warp warp of a
// block (barrier id ptx.NumBarriers+warp of [ptx.BarrierEnv]): the same
// slots, under ids with bit 61 set too.
func WarpSyncPhys(launch uint64, block, warp int) uint64 {
	return 3<<62 | 1<<61 | launch<<28 | uint64(block)<<5 | uint64(warp)
}

// ClusterBarrierPhys is [BarrierPhys] for the cluster barrier of a block
// (barrier.cluster, barrier id ptx.ClusterBarrierID of
// [ptx.BarrierEnv]; a cluster is one block): the same slots, under ids
// with bit 60 set too.
func ClusterBarrierPhys(launch uint64, block int) uint64 {
	return 3<<62 | 1<<60 | launch<<28 | uint64(block)
}

// BarrierSlots is how many slots a thread's arrivals at a barrier take
// turns over (see [BarrierPhys]), which bounds what the race detector
// keeps of them. A thread released from a phase reads an arrival's slot
// when it resumes; if that arrival's thread arrived BarrierSlots times
// more by then, it learns the later arrival, which knows more (a race
// may go unreported; none is invented). A waiter that also arrives at
// the barrier's next phase always resumes in time.
const BarrierSlots = 4
