package rank

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/signal"
)

// SymmetricMemory is the result of a rendezvous: one allocation as mapped
// by every member of a group, with each member's buffer and signal pad.
type SymmetricMemory struct {
	r          *Rank
	blk        *block
	group      string
	members    []int // global ranks, by group rank
	rank       int   // this rank's position in members
	bufferSize uint64
	padSize    uint64
	padRegion  int           // which of the allocation's pads is this group's
	label      *device.Group // names the group in the errors of its launches
	sharing    int           // members on this rank's device, this one included

	bufferPtrs []device.Ptr
	padPtrs    []device.Ptr
	arrays     device.Ptr // arena slot: buffer pointers then pad pointers
	peers      []peerMap
}

type peerMap struct {
	base   device.Ptr
	size   uint64
	handle device.Handle
}

// smBudget is how many multiprocessors one collective launch of this rank
// may fill (0: no cap). Block b of a collective waits for block b of every
// peer, so the blocks of members sharing a device
// (SYMMEM_ALLOW_OVERLAPPING_DEVICES) must all be resident on it at once:
// they split its multiprocessors.
func (h *SymmetricMemory) smBudget() int {
	sm := h.r.dev.Attributes().SMCount
	if sm > 0 && h.sharing > 1 {
		return max(sm/h.sharing, 1)
	}
	return sm
}

// Rank is this rank's position in the group.
func (h *SymmetricMemory) Rank() int { return h.rank }

// WorldSize is the number of members of the group.
func (h *SymmetricMemory) WorldSize() int { return len(h.members) }

// Group is the group's name.
func (h *SymmetricMemory) Group() string { return h.group }

// BufferSize is the usable size of every member's buffer.
func (h *SymmetricMemory) BufferSize() uint64 { return h.bufferSize }

// SignalPadSize is the size of every member's signal pad.
func (h *SymmetricMemory) SignalPadSize() uint64 { return h.padSize }

// BufferPtrs are every member's buffer address as mapped on this device.
func (h *SymmetricMemory) BufferPtrs() []device.Ptr {
	return append([]device.Ptr(nil), h.bufferPtrs...)
}

// SignalPadPtrs are every member's signal pad address as mapped here.
func (h *SymmetricMemory) SignalPadPtrs() []device.Ptr {
	return append([]device.Ptr(nil), h.padPtrs...)
}

// BufferPtrsDev is the device array of BufferPtrs (uint64 each).
func (h *SymmetricMemory) BufferPtrsDev() device.Ptr { return h.arrays }

// SignalPadPtrsDev is the device array of SignalPadPtrs (uint64 each).
func (h *SymmetricMemory) SignalPadPtrsDev() device.Ptr {
	return h.arrays.Add(8 * uint64(len(h.members)))
}

// GetBuffer returns a view of numel elements of dt starting offset elements
// into the buffer of group rank rank.
func (h *SymmetricMemory) GetBuffer(rank int, numel uint64, dt device.DType, offset uint64) (Tensor, error) {
	if err := signal.CheckRank(rank, len(h.members)); err != nil {
		return Tensor{}, fmt.Errorf("get buffer: %w", err)
	}
	if !dt.Valid() {
		return Tensor{}, fmt.Errorf("get buffer: invalid dtype %v", dt)
	}
	es := uint64(dt.Size())
	if numel > h.bufferSize || offset > h.bufferSize || (offset+numel)*es > h.bufferSize {
		return Tensor{}, fmt.Errorf("get buffer: %d elements of %v at element offset %d exceed the %d-byte buffer",
			numel, dt, offset, h.bufferSize)
	}
	return Tensor{Ptr: h.bufferPtrs[rank].Add(offset * es), DType: dt, Numel: numel}, nil
}

// Region is a span of device memory.
type Region struct {
	Ptr   device.Ptr
	Bytes uint64
}

// GetSignalPad returns group rank rank's whole signal pad (uint32 slots).
func (h *SymmetricMemory) GetSignalPad(rank int) (Region, error) {
	if err := signal.CheckRank(rank, len(h.members)); err != nil {
		return Region{}, fmt.Errorf("get signal pad: %w", err)
	}
	return Region{Ptr: h.padPtrs[rank], Bytes: h.padSize}, nil
}

func (h *SymmetricMemory) signalArgs(peer, channel int, timeout time.Duration) kernels.SignalArgs {
	return kernels.SignalArgs{
		Rank: int32(h.rank), World: int32(len(h.members)), Peer: int32(peer), Channel: int32(channel),
		PadPtrs: h.SignalPadPtrsDev(), PadBytes: h.padSize, TimeoutNs: int64(timeout),
	}
}

// Barrier synchronises with every member on channel: a put to each peer,
// then a wait for each. It runs as a kernel on the rank's stream and returns
// once the kernel has completed; a timeout (0 waits forever) is a
// recoverable error naming the slot.
func (h *SymmetricMemory) Barrier(channel int, timeout time.Duration) error {
	if err := signal.CheckChannel(channel, len(h.members), h.padSize); err != nil {
		return fmt.Errorf("barrier: %w", err)
	}
	return h.signal(kernels.Barrier, -1, channel, timeout)
}

// PutSignal signals group rank dst on channel.
func (h *SymmetricMemory) PutSignal(dst, channel int, timeout time.Duration) error {
	if err := signal.CheckRank(dst, len(h.members)); err != nil {
		return fmt.Errorf("put signal: %w", err)
	}
	if err := signal.CheckChannel(channel, len(h.members), h.padSize); err != nil {
		return fmt.Errorf("put signal: %w", err)
	}
	return h.signal(kernels.PutSignal, dst, channel, timeout)
}

// WaitSignal waits for a signal from group rank src on channel.
func (h *SymmetricMemory) WaitSignal(src, channel int, timeout time.Duration) error {
	if err := signal.CheckRank(src, len(h.members)); err != nil {
		return fmt.Errorf("wait signal: %w", err)
	}
	if err := signal.CheckChannel(channel, len(h.members), h.padSize); err != nil {
		return fmt.Errorf("wait signal: %w", err)
	}
	return h.signal(kernels.WaitSignal, src, channel, timeout)
}

func (h *SymmetricMemory) signal(kernel string, peer, channel int, timeout time.Duration) error {
	if h.arrays == 0 {
		return fmt.Errorf("%s: handle of group %q was released", kernel, h.group)
	}
	r := h.r
	blocks, threads := kernels.Shape(kernel, 0, device.Float32, len(h.members), r.dev.Attributes().SMCount)
	l := device.Launch{Kernel: kernel, Blocks: blocks, Threads: threads, Args: h.signalArgs(peer, channel, timeout), Group: h.label}
	r.logLaunch(h.group, l)
	if err := r.dev.Launch(r.stream, l); err != nil {
		return fmt.Errorf("%s: %w", kernel, err)
	}
	if err := r.waitStream(); err != nil {
		r.logFailure(kernel, h.group, err)
		return fmt.Errorf("%s: %w", kernel, err)
	}
	return nil
}

// mapPeers imports and maps every peer's block, then writes the device
// pointer arrays. Every received fd is closed, whatever happens.
func (h *SymmetricMemory) mapPeers(fds []int) error {
	r, b := h.r, h.blk
	w := len(fds)
	dataOff := uint64(b.data - b.base)
	h.bufferPtrs = make([]device.Ptr, w)
	h.padPtrs = make([]device.Ptr, w)
	var err error
	for i, fd := range fds {
		if i == h.rank {
			h.bufferPtrs[i], h.padPtrs[i] = b.data, b.padAddr(b.base, h.padRegion)
			continue
		}
		if err != nil {
			_ = r.dev.CloseFD(fd)
			continue
		}
		var base device.Ptr
		if base, err = h.mapPeer(fd); err != nil {
			err = fmt.Errorf("map rank %d's block: %w", h.members[i], err)
			continue
		}
		h.bufferPtrs[i], h.padPtrs[i] = base.Add(dataOff), b.padAddr(base, h.padRegion)
	}
	if err != nil {
		return err
	}
	slot, err := r.alloc.arena.get()
	if err != nil {
		return err
	}
	buf := make([]byte, 0, 16*w)
	for _, p := range h.bufferPtrs {
		buf = binary.LittleEndian.AppendUint64(buf, uint64(p))
	}
	for _, p := range h.padPtrs {
		buf = binary.LittleEndian.AppendUint64(buf, uint64(p))
	}
	if err := r.dev.Write(r.stream, slot, buf); err != nil {
		r.alloc.arena.put(slot)
		return fmt.Errorf("write pointer arrays: %w", err)
	}
	h.arrays = slot
	return nil
}

func (h *SymmetricMemory) mapPeer(fd int) (device.Ptr, error) {
	dev, size := h.r.dev, h.blk.size
	ph, err := dev.ImportHandle(fd)
	if cerr := dev.CloseFD(fd); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	base, err := dev.Reserve(size)
	if err != nil {
		_ = dev.ReleasePhysical(ph)
		return 0, err
	}
	if err := dev.Map(base, size, ph); err != nil {
		_ = dev.FreeRange(base, size)
		_ = dev.ReleasePhysical(ph)
		return 0, err
	}
	h.peers = append(h.peers, peerMap{base: base, size: size, handle: ph})
	if err := dev.SetAccess(base, size); err != nil {
		return 0, err
	}
	return base, nil
}

// release unmaps every peer mapping and returns the pointer arrays.
func (h *SymmetricMemory) release() error {
	dev := h.r.dev
	errs := []error{dev.Synchronize(h.r.stream)}
	for _, m := range h.peers {
		errs = append(errs, dev.Unmap(m.base, m.size), dev.FreeRange(m.base, m.size), dev.ReleasePhysical(m.handle))
	}
	h.peers = nil
	if h.arrays != 0 {
		h.r.alloc.arena.put(h.arrays)
		h.arrays = 0
	}
	return errors.Join(errs...)
}
