// Package device defines what a rank runs on: the interface every device
// implements (physical allocations, shareable handles, address ranges, maps,
// copies, streams, events, kernel launches, attributes, topology) and the
// types shared by devices, kernels and ranks.
//
// The interface is shaped after the CUDA driver's virtual-memory API so that
// the simulator (device/sim) and real GPUs (device/cuda) are interchangeable.
package device

import (
	"fmt"
	"time"
)

// Granularity is the allocation granularity of physical memory on the
// devices we target (H100/H200): every physical allocation and mapping is a
// multiple of it.
const Granularity = 2 << 20

// Ptr is a 64-bit device virtual address.
type Ptr uint64

// Add returns p advanced by n bytes.
func (p Ptr) Add(n uint64) Ptr { return p + Ptr(n) }

func (p Ptr) String() string { return fmt.Sprintf("0x%x", uint64(p)) }

// Handle names a physical allocation on one device.
type Handle uint64

// Stream is an ordered queue of device work.
type Stream uint64

// Event marks a point in a stream.
type Event uint64

// Graph is a recorded sequence of stream work (see Device.BeginCapture),
// replayed as one launch.
type Graph uint64

// Attributes describe a device.
type Attributes struct {
	Name        string
	Index       int    // device ordinal on its host
	SMCount     int    // streaming multiprocessors (blocks that run at once)
	Granularity uint64 // physical allocation granularity in bytes
	// MulticastSupported is the driver's multicast attribute, forced false
	// by SYMMEM_DISABLE_MULTICAST or TORCH_SYMM_MEM_DISABLE_MULTICAST. No
	// multicast object is ever created.
	MulticastSupported bool
}

// Launch describes one kernel launch.
type Launch struct {
	Kernel  string // registered kernel name (see package kernels)
	Blocks  int    // grid size
	Threads int    // threads per block
	Args    any    // the kernel's argument struct, defined in package kernels
	// Group names the group a collective launch serves; a KernelError of
	// the launch carries it, to name global ranks (nil: none).
	Group *Group
}

// Group identifies the ranks of a collective launch: the group's name and
// the global rank of each group position.
type Group struct {
	Name  string
	Ranks []int
}

// rank names group position pos: its global rank, and the position too when
// they differ.
func (g *Group) rank(pos int) string {
	if g == nil || pos < 0 || pos >= len(g.Ranks) {
		return fmt.Sprintf("rank %d", pos)
	}
	if g.Ranks[pos] == pos {
		return fmt.Sprintf("rank %d", pos)
	}
	return fmt.Sprintf("rank %d (position %d)", g.Ranks[pos], pos)
}

// Device is one accelerator as seen by one rank. Methods that take a Stream
// enqueue work on it; Synchronize waits for it and reports errors raised by
// kernels (such as a [*KernelError] for a signal timeout). Such errors are
// recoverable: the stream and device stay usable.
type Device interface {
	// Attributes describes the device.
	Attributes() Attributes

	// CreatePhysical creates a physical allocation of size bytes (a multiple
	// of the granularity) that can be exported as a file descriptor.
	CreatePhysical(size uint64) (Handle, error)
	// ReleasePhysical releases a handle; memory is freed once unmapped everywhere.
	ReleasePhysical(h Handle) error
	// ExportHandle exports a physical allocation as a shareable file descriptor.
	ExportHandle(h Handle) (fd int, err error)
	// ImportHandle imports a file descriptor exported by a peer (which may be
	// another device of the same host). The caller still owns fd.
	ImportHandle(fd int) (Handle, error)
	// CloseFD closes a file descriptor returned by ExportHandle or received
	// from a peer.
	CloseFD(fd int) error

	// Reserve reserves a range of size bytes of virtual addresses.
	Reserve(size uint64) (Ptr, error)
	// FreeRange returns a reserved range.
	FreeRange(p Ptr, size uint64) error
	// Map maps a physical allocation at p (inside a reserved range).
	Map(p Ptr, size uint64, h Handle) error
	// SetAccess grants this device read/write access to [p, p+size).
	SetAccess(p Ptr, size uint64) error
	// Unmap removes a mapping.
	Unmap(p Ptr, size uint64) error

	// Memset sets n bytes at dst to value, in stream order.
	Memset(s Stream, dst Ptr, value byte, n uint64) error
	// Copy copies n bytes device to device, in stream order.
	Copy(s Stream, dst, src Ptr, n uint64) error
	// Write copies host bytes to dst after the stream's earlier work and
	// returns when done.
	Write(s Stream, dst Ptr, src []byte) error
	// Read copies device bytes to the host after the stream's earlier work
	// and returns when done.
	Read(s Stream, dst []byte, src Ptr) error

	// NewStream creates a stream.
	NewStream() (Stream, error)
	// DestroyStream destroys a stream after its work completes.
	DestroyStream(s Stream) error
	// Synchronize waits until all work on s has completed.
	Synchronize(s Stream) error
	// NewEvent creates an event.
	NewEvent() (Event, error)
	// RecordEvent records e at the current end of s.
	RecordEvent(e Event, s Stream) error
	// Elapsed is the device time between two recorded, completed events.
	Elapsed(start, end Event) (time.Duration, error)
	// DestroyEvent destroys an event.
	DestroyEvent(e Event) error

	// Launch enqueues a kernel launch on s.
	Launch(s Stream, l Launch) error

	// BeginCapture starts recording s: until EndCapture, the kernel
	// launches, memsets and copies enqueued on s are recorded instead of
	// run, and operations that wait for s (Synchronize, Write, Read,
	// RecordEvent) fail.
	BeginCapture(s Stream) error
	// EndCapture stops recording s and returns what was recorded as a
	// graph. A stream that recorded nothing yields an empty graph.
	EndCapture(s Stream) (Graph, error)
	// LaunchGraph enqueues every operation of g on s, in recorded order,
	// as one launch. A graph can be launched any number of times, on the
	// stream it was captured on (where its kernels report errors).
	LaunchGraph(g Graph, s Stream) error
	// DestroyGraph releases g once its launches have completed.
	DestroyGraph(g Graph) error

	// NVLinkMatrix returns the N x N matrix of NVLink connection counts
	// between the host's devices (index by device ordinal).
	NVLinkMatrix() ([][]int, error)

	// Close releases the device's resources.
	Close() error
}

// KernelError is a recoverable error raised inside a kernel, reported by
// Synchronize. Signal waits that time out raise one naming the slot.
type KernelError struct {
	Kernel  string
	Rank    int // rank that waited
	Block   int
	Peer    int // the rank it waited for
	Channel int
	Slot    int           // index of the uint32 slot in the pad
	Timeout time.Duration // how long it waited
	Reason  string
	// Group is the launch's group, when it named one: Rank and Peer are
	// positions in it.
	Group *Group
}

func (e *KernelError) Error() string {
	where := fmt.Sprintf("kernel %s: ", e.Kernel)
	if e.Group != nil {
		where += fmt.Sprintf("group %q: ", e.Group.Name)
	}
	if e.Channel < 0 {
		return fmt.Sprintf("%s%s block %d: %s waiting for %s after %v",
			where, e.Group.rank(e.Rank), e.Block, e.Reason, e.Group.rank(e.Peer), e.Timeout)
	}
	return fmt.Sprintf("%s%s block %d: %s waiting for %s on channel %d (pad slot %d) after %v",
		where, e.Group.rank(e.Rank), e.Block, e.Reason, e.Group.rank(e.Peer), e.Channel, e.Slot, e.Timeout)
}

// LabelKernelError sets the group of every KernelError in err's tree to g;
// devices call it on the errors of a launch that named its group.
func LabelKernelError(err error, g *Group) {
	if g == nil || err == nil {
		return
	}
	if ke, ok := err.(*KernelError); ok {
		ke.Group = g
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		LabelKernelError(u.Unwrap(), g)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			LabelKernelError(e, g)
		}
	}
}

// MemInfo is implemented by devices that report their memory: free and
// total bytes (leak checks compare free memory before and after).
type MemInfo interface {
	MemInfo() (free, total uint64, err error)
}

// FDCounter is implemented by devices whose shareable handles live in a
// file-descriptor table of their own (the simulator); for real devices the
// process's table is counted instead.
type FDCounter interface {
	OpenFDs() int
}
