package sim

import (
	"encoding/binary"
	"slices"
	"time"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/signal"
)

// words resolves n aligned uint64 words at p, copying the segments out of
// the device's reusable slice.
func (c *blockCtx) words(p device.Ptr, n int, write bool) ([]segment, error) {
	if p%8 != 0 {
		return nil, &FaultError{Device: c.l.dev.index, Addr: p, Size: uint64(8 * n), Write: write,
			Reason: "64-bit atomic on an address that is not 8-byte aligned"}
	}
	segs, err := c.l.dev.resolve(p, uint64(8*n), write)
	if err != nil {
		return nil, err
	}
	return slices.Clone(segs), nil
}

// StoreU64s writes vals at p as atomic 64-bit stores, after a scheduling
// point; the trace records the first word.
func (c *blockCtx) StoreU64s(p device.Ptr, vals []uint64) error {
	if len(vals) == 0 {
		return nil
	}
	c.l.dev.w.sched.Yield("atomic")
	segs, err := c.words(p, len(vals), true)
	if err != nil {
		return err
	}
	var buf []byte
	for _, v := range vals {
		buf = binary.LittleEndian.AppendUint64(buf, v)
	}
	at := 0
	for _, sg := range segs {
		at += copy(sg.b, buf[at:])
		c.emitWords(sg, true)
	}
	const st = "store64 %#x x%d first %#x"
	c.record(blockPrefix+st, lanePrefix+st, uint64(p), len(vals), vals[0])
	return nil
}

// WaitU64s blocks until ready holds for the words at p, then reads them.
func (c *blockCtx) WaitU64s(p device.Ptr, dst []uint64, what string, ready func([]uint64) bool, timeout time.Duration) error {
	if len(dst) == 0 {
		return nil
	}
	segs, err := c.words(p, len(dst), false)
	if err != nil {
		return err
	}
	raw := make([]byte, 8*len(dst))
	read := func() {
		at := 0
		for _, sg := range segs {
			at += copy(raw[at:], sg.b)
		}
		for i := range dst {
			dst[i] = binary.LittleEndian.Uint64(raw[8*i:])
		}
	}
	freed := func() bool {
		for _, sg := range segs {
			if sg.phys.freed() {
				return true
			}
		}
		return false
	}
	// A freed allocation wakes the waiter, whose next access then faults.
	cond := func() bool {
		if freed() {
			return true
		}
		read()
		return ready(dst)
	}
	if !cond() {
		if err := c.blockOn(p, segs, what, cond, timeout); err != nil {
			return err
		}
	}
	if freed() {
		_, err := c.words(p, len(dst), false)
		return err
	}
	read()
	for _, sg := range segs {
		c.emitWords(sg, false)
	}
	return nil
}

// emitWords reports a run of relaxed system-scope 8-byte strong accesses,
// one per word, as the kernel's packets are: one Access with Unit 8.
func (c *blockCtx) emitWords(sg segment, write bool) {
	if c.l.dev.w.observe == nil {
		return
	}
	c.emit(&Access{Kind: Atomic, Parent: -1, Addr: sg.addr, Size: uint64(len(sg.b)), Unit: 8, Phys: sg.phys.id,
		PhysOffset: sg.off, Owner: sg.phys.owner, Write: write, Order: signal.Relaxed, Scope: signal.System})
}
