package sim

import (
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/device/sim/ptx"
)

// LaneAccess is one lane's part of a [WarpAccess]: what differs between
// the lanes' accesses.
type LaneAccess struct {
	Task, Lane int
	Addr       device.Ptr
	Size       uint64
	Phys       uint64
	PhysOffset uint64
	Owner      int
}

// WarpAccess is the plain loads, or the plain stores, of global memory
// that lanes of one warp made at one instruction in lockstep
// ([ptx.Lockstep]), reported as one event: Access holds what the lanes'
// accesses share (Kind, Write, NC, Line, the launch, block and op), Lanes
// each lane's own part (a lane whose access spans mappings has a part per
// mapping), in the order the lanes made them. [WarpAccess.Lane] is the
// access an observer installed with [World.Observe] would have been
// handed for each.
type WarpAccess struct {
	Access
	Lanes []LaneAccess
}

// Lane is the access of part i.
func (w *WarpAccess) Lane(i int) Access {
	a := w.Access
	p := &w.Lanes[i]
	a.Task, a.Lane, a.Addr, a.Size, a.Phys, a.PhysOffset, a.Owner = p.Task, p.Lane, p.Addr, p.Size, p.Phys, p.PhysOffset, p.Owner
	return a
}

// ObserveWarp installs fn to receive the plain accesses that a warp's
// lanes make at one instruction in lockstep as one [WarpAccess], instead
// of one access each through the function installed with Observe (nil
// removes it). [World.Observe] removes it too: an observer that passes
// events on to one installed before it sees every access. The access fn
// is handed is valid only during the call.
func (w *World) ObserveWarp(fn func(*WarpAccess)) { w.observeWarp = fn }

// warpBatch is the plain accesses of the current lockstep instruction
// held back for one WarpAccess (see ptxLane.WarpBegin).
type warpBatch struct {
	on bool
	a  WarpAccess
}

// WarpBegin is [ptx.WarpEnv]: until WarpEnd, the plain accesses of the
// warp's lanes are held back for one [WarpAccess], when an observer takes
// them so.
func (l *ptxLane) WarpBegin() {
	w := l.l.dev.w
	if w.observeWarp == nil || w.observe == nil {
		return
	}
	w.batch.on = true
	w.batch.a.Lanes = w.batch.a.Lanes[:0]
}

// WarpEnd is [ptx.WarpEnv]: it hands on the accesses held back since
// WarpBegin, one alone as an [Access], several as a [WarpAccess].
func (l *ptxLane) WarpEnd() {
	w := l.l.dev.w
	if !w.batch.on {
		return
	}
	w.batch.on = false
	w.flushWarp()
}

// flushWarp hands on the accesses of the batch and empties it.
func (w *World) flushWarp() {
	b := &w.batch.a
	switch n := len(b.Lanes); {
	case n == 1:
		w.scratch = b.Lane(0)
		w.observe(&w.scratch)
	case n > 1 && w.observeWarp != nil:
		w.observeWarp(b)
	default:
		for i := range b.Lanes {
			w.scratch = b.Lane(i)
			w.observe(&w.scratch)
		}
	}
	b.Lanes = b.Lanes[:0]
}

// held holds back a, a plain access of the lane's, for the batch of its
// warp's instruction, and reports whether it did (no batch is being
// collected when it does not).
func (l *ptxLane) held(a *Access) bool {
	w := l.l.dev.w
	if !w.batch.on {
		return false
	}
	l.who(a)
	x := *a // a may be the access flushWarp hands on
	b := &w.batch.a
	if len(b.Lanes) > 0 && !sameWarpAccess(&b.Access, &x) {
		w.flushWarp()
	}
	if len(b.Lanes) == 0 {
		b.Access = x
	}
	b.Lanes = append(b.Lanes, LaneAccess{Task: x.Task, Lane: x.Lane, Addr: x.Addr, Size: x.Size, Phys: x.Phys, PhysOffset: x.PhysOffset, Owner: x.Owner})
	return true
}

// warpStart is what startWarp keeps from one warp to the next: the
// threads it hands to ptx.Lockstep and Lockstep's buffers.
type warpStart struct {
	threads  []*ptx.Thread
	lockstep ptx.Warp
}

// sameWarpAccess reports whether a and b, plain accesses, differ at most
// in what differs between the lanes of a [WarpAccess].
func sameWarpAccess(a, b *Access) bool {
	return a.Kind == b.Kind && a.Write == b.Write && a.NC == b.NC && a.Line == b.Line && a.Device == b.Device &&
		a.Stream == b.Stream && a.Seq == b.Seq && a.Op == b.Op && a.Kernel == b.Kernel && a.Launch == b.Launch &&
		a.Block == b.Block && a.Order == b.Order && a.Scope == b.Scope && a.Shared == b.Shared
}

var _ ptx.WarpEnv = (*ptxLane)(nil)
