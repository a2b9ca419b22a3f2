package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/signal"
)

// launch is one running kernel launch.
type launch struct {
	dev     *simDevice
	op      *op
	kernel  string
	id      uint64
	grid    int
	threads int
	args    any
	// begun is the weak stamp when the launch started: its threads start
	// knowing every strong store up to it (weak.go).
	begun uint64
}

// blockCtx is one block (lane -1) or one lane of a block; it implements
// kernels.Block.
type blockCtx struct {
	l     *launch
	index int
	lane  int
	wv    weakView // what its strong loads may read (weak.go)
	// bell rings on writes to the memory the block waits for (see
	// blockOn).
	bell actor.Bell
	// task is the ID of the task whose accesses these are, when another
	// task may make them (a PTX lane run in lockstep by its warp's first
	// lane, whose own task may never start), and ownTask says it is set;
	// else they are the running task's.
	task    int
	ownTask bool
}

var _ kernels.Block = (*blockCtx)(nil)

func (c *blockCtx) Kernel() string     { return c.l.kernel }
func (c *blockCtx) Device() int        { return c.l.dev.index }
func (c *blockCtx) Index() int         { return c.index }
func (c *blockCtx) Grid() int          { return c.l.grid }
func (c *blockCtx) Threads() int       { return c.l.threads }
func (c *blockCtx) Lane() int          { return c.lane }
func (c *blockCtx) Now() time.Duration { return c.l.dev.w.sched.Now() }
func (c *blockCtx) Yield(point string) { c.l.dev.w.sched.Yield(point) }

// name is the block's (or lane's) task name, "dev0 one_shot#3 block 1"
// with " lane 2" for a lane.
func (c *blockCtx) name() string {
	return threadName(c.l.dev.index, c.l.kernel, c.l.id, c.index, c.lane)
}

// threadName names block block (lane lane of it; -1: the block) of
// launch launch of kernel on device dev.
func threadName(dev int, kernel string, launch uint64, block, lane int) string {
	b := make([]byte, 0, 64)
	b = append(b, "dev"...)
	b = strconv.AppendInt(b, int64(dev), 10)
	b = append(b, ' ')
	b = append(b, kernel...)
	b = append(b, '#')
	b = strconv.AppendUint(b, launch, 10)
	b = append(b, " block "...)
	b = strconv.AppendInt(b, int64(block), 10)
	if lane >= 0 {
		b = append(b, " lane "...)
		b = strconv.AppendInt(b, int64(lane), 10)
	}
	return string(b)
}

// LaneLabel is the label of the task of the kernel thread that made a,
// a lane of a block ([Access].Lane at least 0): the label its own task
// has, or would have, for the accesses a lane makes while its warp runs
// in lockstep, in the task of the warp's first lane.
func LaneLabel(a *Access) actor.Label {
	return actor.Label{Kind: actor.LaneTask, Name: threadName(a.Device, a.Kernel, a.Launch, a.Block, a.Lane),
		Device: a.Device, Kernel: a.Kernel, Launch: a.Launch, Block: a.Block, Lane: a.Lane}
}

// label is the block's (or lane's) task label.
func (c *blockCtx) label() actor.Label {
	l := actor.Label{Kind: actor.BlockTask, Name: c.name(), Device: c.l.dev.index, Kernel: c.l.kernel, Launch: c.l.id, Block: c.index}
	if c.lane >= 0 {
		l.Kind, l.Lane = actor.LaneTask, c.lane
	}
	return l
}

// The prefixes of a block's and a lane's signal records: the fields of
// their names.
const (
	blockPrefix = "dev%d %s#%d block %d "
	lanePrefix  = "dev%d %s#%d block %d lane %d "
)

// record appends a signal interaction of the block to the trace: the
// block's name, then the rest of blockFormat (a block's) or laneFormat (a
// lane's) applied to args (see [actor.Trace.Addf] for their types), of
// which there are at most maxRecordArgs.
func (c *blockCtx) record(blockFormat, laneFormat string, args ...any) {
	var all [5 + maxRecordArgs]any
	all[0], all[1], all[2], all[3] = c.l.dev.index, c.l.kernel, c.l.id, c.index
	n, format := 4, blockFormat
	if c.lane >= 0 {
		all[4] = c.lane
		n, format = 5, laneFormat
	}
	for _, a := range args { // not copy, which would move args to the heap
		all[n] = a
		n++
	}
	c.l.dev.w.sched.Recordf("signal", format, all[:n]...)
}

// maxRecordArgs bounds the arguments of blockCtx.record.
const maxRecordArgs = 10

// emit fills in the launch coordinates of a and reports it.
func (c *blockCtx) emit(a *Access) {
	w := c.l.dev.w
	if w.observe == nil {
		return
	}
	c.who(a)
	w.emitAs(a, a.Task)
}

// who fills in who made a: the launch, the block and lane, and the task
// (the running one, -1 outside tasks, for a block without a task of its
// own).
func (c *blockCtx) who(a *Access) {
	a.Device, a.Stream, a.Seq, a.Op = c.l.dev.index, c.l.op.stream.id, c.l.op.seq, "kernel"
	a.Kernel, a.Launch, a.Block, a.Lane = c.l.kernel, c.l.id, c.index, c.lane
	a.Task = c.task
	if !c.ownTask {
		a.Task = -1
		if cur := c.l.dev.w.sched.Current(); cur != nil {
			a.Task = cur.ID()
		}
	}
}

func (c *blockCtx) emitSeg(kind AccessKind, sg segment, write bool, order signal.Order, scope signal.Scope) {
	c.emitAtomic(kind, sg, write, order, scope, 0, 0)
}

func (c *blockCtx) emitAtomic(kind AccessKind, sg segment, write bool, order signal.Order, scope signal.Scope, old, new uint32) {
	if c.l.dev.w.observe == nil {
		return
	}
	a := segAccess(kind, sg, write, order, scope, old, new)
	c.emit(&a)
}

// segAccess is the access of segment sg by a kernel thread; emit fills in
// who made it.
func segAccess(kind AccessKind, sg segment, write bool, order signal.Order, scope signal.Scope, old, new uint32) Access {
	return Access{Kind: kind, Parent: -1, Addr: sg.addr, Size: uint64(len(sg.b)), Phys: sg.phys.id,
		PhysOffset: sg.off, Owner: sg.phys.owner, Write: write, Order: order, Scope: scope, Old: old, New: new}
}

// emitRMW reports a read-modify-write (write: it stored, the store
// numbered stamp) made at PTX line line (0 for a Go twin). Its read
// returned the newest store, as the model has it: from names that store
// when it is not the one that ran last ([Access].From; 0 when it is).
func (c *blockCtx) emitRMW(sg segment, write bool, order signal.Order, scope signal.Scope, old, new uint32, stamp, from uint64, line int) {
	if c.l.dev.w.observe == nil {
		return
	}
	a := segAccess(Atomic, sg, write, order, scope, old, new)
	a.RMW, a.Stamp, a.Line = true, stamp, line
	if from != 0 {
		a.From = []uint64{from}
	}
	c.emit(&a)
}

// Load copies device memory at p into dst.
func (c *blockCtx) Load(p device.Ptr, dst []byte) error {
	segs, err := c.l.dev.resolve(p, uint64(len(dst)), false)
	if err != nil {
		return err
	}
	at := 0
	for _, sg := range segs {
		at += copy(dst[at:], sg.b)
		if sg.phys.weak != nil {
			c.view().plainLoad(&c.l.dev.w.weak, sg)
		}
		c.emitSeg(Load, sg, false, signal.Relaxed, signal.Block)
	}
	return nil
}

// Store copies src to device memory at p.
func (c *blockCtx) Store(p device.Ptr, src []byte) error {
	segs, err := c.l.dev.resolve(p, uint64(len(src)), true)
	if err != nil {
		return err
	}
	at := 0
	for _, sg := range segs {
		plainStore(sg)
		at += copy(sg.b, src[at:])
		c.emitSeg(Store, sg, true, signal.Relaxed, signal.Block)
	}
	return nil
}

// LoadU64 reads a little-endian uint64 at p.
func (c *blockCtx) LoadU64(p device.Ptr) (uint64, error) {
	var b [8]byte
	if err := c.Load(p, b[:]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b[:]), nil
}

// word resolves the aligned uint32 at p.
func (c *blockCtx) word(p device.Ptr, write bool) (segment, error) {
	if p%4 != 0 {
		return segment{}, &FaultError{Device: c.l.dev.index, Addr: p, Size: 4, Write: write, Reason: "atomic on an address that is not 4-byte aligned"}
	}
	segs, err := c.l.dev.resolve(p, 4, write)
	if err != nil {
		return segment{}, err
	}
	return segs[0], nil
}

// CAS32 is an atomic compare-and-swap of the uint32 at p, performed after a
// scheduling point. Every call is recorded in the trace as a "signal" event.
func (c *blockCtx) CAS32(p device.Ptr, old, new uint32, order signal.Order, scope signal.Scope) (uint32, error) {
	if !order.Valid() || !scope.Valid() {
		return 0, fmt.Errorf("%s: compare-and-swap at %v with invalid order %v or scope %v", c.name(), p, order, scope)
	}
	// Every atomic is an interaction point: let the scheduler interleave.
	c.l.dev.w.sched.Yield("atomic")
	sg, err := c.word(p, true)
	if err != nil {
		return 0, err
	}
	prev := loadU32(sg.b)
	swapped := prev == old
	w := c.l.dev.w
	carried, from := w.weakRMW(c.view(), sg, 4, order, scope)
	var stamp uint64
	if swapped {
		stamp, _ = w.weakStore(c.view(), sg, 4, uint64(new), order, scope, carried, 0)
		binary.LittleEndian.PutUint32(sg.b, new)
	}
	const cas = "cas %#x phys %d+%d %d->%d prev %d %s %s"
	c.record(blockPrefix+cas, lanePrefix+cas, uint64(p), sg.phys.id, sg.off, old, new, prev, order.String(), scope.String())
	c.emitRMW(sg, swapped, order, scope, old, new, stamp, from, 0)
	return prev, nil
}

// WaitU32 blocks until ready holds for the uint32 at p or timeout passes.
// The wait is a loop of relaxed system-scope loads: it sleeps until the
// newest value is ready, then reads one of the values the memory model
// lets it read (weak.go), and goes round again while that one is not.
func (c *blockCtx) WaitU32(p device.Ptr, what string, ready func(uint32) bool, timeout time.Duration) error {
	sg, err := c.word(p, false)
	if err != nil {
		return err
	}
	ph, off := sg.phys, sg.off
	// A freed allocation wakes the waiter, whose next access then faults.
	cond := func() bool { return ph.freed() || ready(loadU32(ph.data[off:])) }
	w := c.l.dev.w
	var deadline time.Duration
	if timeout > 0 {
		deadline = w.sched.Now() + timeout
	}
	for {
		if !cond() {
			left := time.Duration(0)
			if timeout > 0 {
				if left = deadline - w.sched.Now(); left <= 0 {
					left = time.Nanosecond
				}
			}
			if err := c.blockOn(p, []segment{sg}, what, cond, left); err != nil {
				return err
			}
		}
		if ph.freed() {
			return nil
		}
		// The race detector does not see this load (which store it read
		// does not matter to it): the kernel learns nothing from it but
		// when to retry its compare-and-swap, which reads the newest store.
		if v, _ := w.weakLoad(c.view(), sg, 4, signal.Relaxed, signal.System); ready(uint32(v)) {
			return nil
		}
		c.Yield("wait")
	}
}

// blockOn parks the block (or lane) until cond holds, waiting for the
// words of segs at p: the wait is recorded in the trace and shown among
// the waits of a deadlock; kernels.ErrWaitTimeout when timeout passes
// first. cond reads only the bytes of segs, whose writes ring the block's
// bell while it waits.
func (c *blockCtx) blockOn(p device.Ptr, segs []segment, what string, cond func() bool, timeout time.Duration) error {
	w := c.l.dev.w
	const blockOn = "block on %#x: %s"
	c.record(blockPrefix+blockOn, lanePrefix+blockOn, uint64(p), what)
	task := w.beginWait(c, p, segs[0], what)
	c.watch(segs)
	err := w.sched.WaitBell(what, cond, &c.bell, timeout)
	c.unwatch(segs)
	var te *actor.TimeoutError
	if errors.As(err, &te) {
		w.endWait(task, true)
		return kernels.ErrWaitTimeout
	}
	w.endWait(task, false)
	return err
}

// watch has writes to the bytes of segs ring the block's bell (see
// [physical.watch]), until unwatch.
func (c *blockCtx) watch(segs []segment) {
	for _, sg := range segs {
		sg.phys.watch(sg.off, uint64(len(sg.b)), &c.bell)
	}
}

// unwatch stops the rings of watch(segs).
func (c *blockCtx) unwatch(segs []segment) {
	for _, sg := range segs {
		sg.phys.unwatch(sg.off, &c.bell)
	}
}

// Lanes runs fn for lanes 0..n-1 as separate tasks and joins them.
func (c *blockCtx) Lanes(n int, fn func(kernels.Block) error) error {
	if c.lane >= 0 {
		return fmt.Errorf("%s: Lanes called from a lane (lanes do not nest)", c.name())
	}
	if n < 1 || n > c.l.threads {
		return fmt.Errorf("%s: %d lanes requested with %d threads per block", c.name(), n, c.l.threads)
	}
	w := c.l.dev.w
	parent := w.sched.Current().ID()
	errs := make([]error, n)
	done := 0
	var finished actor.Bell // rung by every lane that finishes
	for i := 0; i < n; i++ {
		lc := &blockCtx{l: c.l, index: c.index, lane: i}
		w.sched.GoLabeled(lc.label(), func() {
			lc.emit(&Access{Kind: LaneStart, Parent: parent})
			errs[i] = fn(lc)
			w.weak.forget(&lc.wv)
			lc.emit(&Access{Kind: LaneEnd, Parent: -1})
			done++
			finished.Ring()
		})
	}
	what := c.name() + ": its " + itoa(n) + " lanes to finish"
	if err := w.sched.WaitBell(what, func() bool { return done == n }, &finished, 0); err != nil {
		return err
	}
	c.wv.sync(&w.weak) // the block knows what its lanes did
	return firstError(errs, "lanes")
}
