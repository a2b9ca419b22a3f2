package sim

import (
	"encoding/binary"
	"sort"
	"time"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/signal"
)

// SignalWait is a kernel thread blocked in [kernels.Block.WaitU32]: where it
// waits and, when the word lies in one of its launch's signal pads, which
// slot that is and whose move it waits for. See [World.SignalWaits].
type SignalWait struct {
	Task       int    // scheduler task
	Name       string // task name
	Device     int
	Kernel     string
	Launch     uint64
	Block      int
	Lane       int // -1 for a block-wide wait
	Addr       device.Ptr
	Phys       uint64 // physical allocation and offset of the word
	PhysOffset uint64
	Owner      int    // device whose memory holds the word
	Value      uint32 // what the word held when the thread blocked
	Since      time.Duration
	What       string
	TimedOut   bool // this wait's timeout passed

	// Decoded reports that the word is a slot of one of the launch's pads;
	// then Slot names it (Rank and Peer are positions in the launch's
	// group of World ranks), Expect is the value the operation waits for
	// and PeerDevice is the device of Slot.Peer, the one that must act: for
	// a wait, by putting; for a put, by consuming the previous signal.
	Decoded    bool
	Slot       signal.Slot
	World      int
	Expect     uint32
	PeerDevice int
}

// SignalWaits returns the signal waits blocked now, in task order. After a
// run that ended in a deadlock they are the waits that deadlocked.
func (w *World) SignalWaits() []SignalWait {
	out := make([]SignalWait, 0, len(w.waits))
	for _, sw := range w.waits {
		out = append(out, *sw)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Task < out[j].Task })
	return out
}

// FirstSignalTimeout returns the signal waits that were blocked when a
// signal wait first timed out (that one included, with TimedOut set), in
// task order, and the virtual time it happened; nil when none timed out.
func (w *World) FirstSignalTimeout() ([]SignalWait, time.Duration) {
	if w.timedOut == nil {
		return nil, 0
	}
	return append([]SignalWait(nil), w.timedOut...), w.timeoutAt
}

// beginWait registers the running task's wait on the word at p and returns
// the task's ID.
func (w *World) beginWait(c *blockCtx, p device.Ptr, sg segment, what string) int {
	cur := w.sched.Current()
	sw := &SignalWait{
		Task: cur.ID(), Name: cur.Name(), Device: c.l.dev.index, Kernel: c.l.kernel, Launch: c.l.id,
		Block: c.index, Lane: c.lane, Addr: p, Phys: sg.phys.id, PhysOffset: sg.off, Owner: sg.phys.owner,
		Value: loadU32(sg.b), Since: w.sched.Now(), What: what,
	}
	c.decodeSlot(sw)
	w.waits[sw.Task] = sw
	return sw.Task
}

// endWait forgets task's wait; on a timeout the first one snapshots every
// wait still blocked.
func (w *World) endWait(task int, timedOut bool) {
	if timedOut && w.timedOut == nil {
		if sw := w.waits[task]; sw != nil {
			sw.TimedOut = true
			w.timeoutAt = w.sched.Now()
			w.timedOut = w.SignalWaits()
		}
	}
	delete(w.waits, task)
}

// decodeSlot finds the pad slot behind sw.Addr from the launch's arguments,
// reading the pad pointer array the kernel itself reads. It leaves sw
// undecoded when the launch has no pads or the address is in none of them.
func (c *blockCtx) decodeSlot(sw *SignalWait) {
	k, ok := kernels.Lookup(c.l.kernel)
	if !ok {
		return
	}
	p, err := k.Pads(c.l.args)
	if err != nil {
		return
	}
	rank, world, arr, padBytes := p.Rank, p.World, p.Ptrs, p.Bytes
	if signal.CheckRank(rank, world) != nil {
		return
	}
	d := c.l.dev
	segs, err := d.space.resolve(arr, 8*uint64(world), false, nil)
	if err != nil {
		return
	}
	raw := make([]byte, 0, 8*world)
	for _, sg := range segs {
		raw = append(raw, sg.b...)
	}
	pads := make([]device.Ptr, world)
	for i := range pads {
		pads[i] = device.Ptr(binary.LittleEndian.Uint64(raw[8*i:]))
	}
	owner := func(p device.Ptr) int {
		segs, err := d.space.resolve(p, 4, false, nil)
		if err != nil {
			return -1
		}
		return segs[0].phys.owner
	}
	for i, pad := range pads {
		if sw.Addr < pad || uint64(sw.Addr-pad) >= padBytes {
			continue
		}
		idx := int(uint64(sw.Addr-pad) / signal.SlotBytes)
		s := signal.Slot{Rank: rank, Channel: idx / world, Pad: i, Index: idx, Offset: uint64(idx) * signal.SlotBytes}
		if i == rank {
			s.Op, s.Peer = signal.Wait, idx%world
		} else {
			s.Op, s.Peer = signal.Put, i
		}
		sw.Decoded, sw.Slot, sw.World = true, s, world
		sw.Expect, _ = s.Op.Swap()
		sw.PeerDevice = owner(pads[s.Peer])
		return
	}
}
