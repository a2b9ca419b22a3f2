package sim

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/device/sim/ptx"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/kernels/cabi"
	"github.com/symmem/symmem/signal"
)

// Kernels selects the code kernel launches run.
type Kernels struct {
	// PTX runs, for every launch, the PTX entry point a GPU would run
	// (cabi.Entry) thread by thread, instead of the kernel's Go twin.
	PTX bool
	// Module is the PTX to run; nil means the kernels' own (kernels.PTX).
	Module *ptx.Module
	// MaxThreads and MaxBlocks cap the shape of every PTX launch (the
	// kernels' and [PTXLauncher.LaunchPTX]'s), for speed; 0 runs the
	// grid and block the launch asks for. The kernels are correct for any
	// shape; a capped launch of theirs keeps at least one thread per
	// rank, which their barriers need. The suite's PTX sweeps use
	// [SweepThreads] and [SweepBlocks].
	MaxThreads, MaxBlocks int
	// PlainYield makes every PlainYield-th plain (weak) global access of a
	// thread a scheduling point (1: every one). 0, the default, makes a
	// plain access one only once the thread went round
	// DefaultPTXPlainLoops loops since its last scheduling point, so that
	// a loop of plain accesses (a spin on a plain load) lets the others
	// run. Plain accesses of shared memory count as global ones. Atomics,
	// strong loads and stores, fences and barriers always are scheduling
	// points. Plain accesses order nothing, so where they
	// interleave changes no outcome of a program without data races, and
	// the race detector sees every one of them either way.
	PlainYield int
	// LaneByLane runs every thread of a PTX launch by itself, as before
	// warps ran in lockstep (ptx.Lockstep): the converged lanes of a warp
	// no longer execute their plain instructions together. Outcomes and
	// findings are the same either way; it is for comparing the two.
	LaneByLane bool
}

// Capped reports whether k caps launch shapes, and how, as "64 threads x
// 3 blocks" ("none" when it does not): reports show it beside the shapes
// that ran.
func (k Kernels) Capped() string {
	switch {
	case k.MaxThreads > 0 && k.MaxBlocks > 0:
		return fmt.Sprintf("%d blocks x %d threads", k.MaxBlocks, k.MaxThreads)
	case k.MaxBlocks > 0:
		return fmt.Sprintf("%d blocks", k.MaxBlocks)
	case k.MaxThreads > 0:
		return fmt.Sprintf("%d threads", k.MaxThreads)
	}
	return "none"
}

// DefaultPTXPlainLoops is how many loops a thread goes round between
// two scheduling points at most, when it makes plain accesses and
// [Kernels].PlainYield is 0.
const DefaultPTXPlainLoops = 16

// The cap of the suite's PTX sweeps (conformance, the fuzzer's PTX mode):
// two warps and three blocks, so that code for a second warp and for
// blocks past the second runs, at a cost the default test run affords.
const (
	SweepThreads = 64
	SweepBlocks  = 3
)

// DefaultPTXSpinTimeout is the default [PTXLaunch].Timeout.
const DefaultPTXSpinTimeout = 10 * time.Second

// errRecordAddr is where a PTX launch's error record appears in global
// memory: outside every device's address space, private to the launch.
const errRecordAddr = 0x0000_3000_0000_0000

// embeddedPTX is the parsed PTX of the kernels.
var embeddedPTX = sync.OnceValues(func() (*ptx.Module, error) {
	text, err := kernels.PTX()
	if err != nil {
		return nil, err
	}
	return ptx.Parse(text)
})

// ptxShape caps a launch's shape as cfg says, keeping a thread per rank.
func ptxShape(cfg Kernels, grid, threads int, args any) (int, int) {
	need := 1
	switch a := args.(type) {
	case kernels.AllReduceArgs:
		need = int(a.World)
	case kernels.SignalArgs:
		need = int(a.World)
	}
	if cfg.MaxBlocks > 0 {
		grid = min(grid, cfg.MaxBlocks)
	}
	if cfg.MaxThreads > 0 {
		threads = min(threads, max(cfg.MaxThreads, need))
	}
	return grid, threads
}

// runPTX runs the launch's PTX entry point: every block is a task that
// runs its threads, each thread a task of its own between two barriers.
// The kernel's error record lives in the launch; a recorded failure is
// the launch's error, as on a GPU.
func (d *simDevice) runPTX(o *op, k *kernels.Kernel, id uint64, grid, threads int, args any) error {
	cfg := d.w.cfg.Kernels
	mod := cfg.Module
	if mod == nil {
		var err error
		if mod, err = embeddedPTX(); err != nil {
			return err
		}
	}
	entry := cabi.Entry(k.Name, args)
	params, err := cabi.Pack(cabi.LaunchHeader{ErrorRecord: errRecordAddr, Launch: uint32(id)}, k.Name, args)
	if err != nil {
		return err
	}
	grid, threads = ptxShape(cfg, grid, threads, args)
	ln := &launch{dev: d, op: o, kernel: k.Name, id: id, grid: grid, threads: threads, args: args}
	rec := make([]byte, cabi.ErrorRecordSize)
	d.record("kernel", "dev%d start %s#%d grid %d x %d ptx %s", d.index, k.Name, id, grid, threads, entry)
	if err := d.runBlocks(ln, func(ctx *blockCtx) error { return ctx.runPTXBlock(mod, entry, params, 0, rec) }); err != nil {
		return err
	}
	if r, ok := cabi.DecodeErrorRecord(rec); ok {
		return r.KernelError(k.Name)
	}
	return nil
}

// runPTXBlock runs the block's threads from one barrier of every thread
// to the next: each thread a task (a lane, for the race detector) that
// runs until it stops at such a barrier (bar.sync or bar.red without a
// thread count) or exits; then the block, having joined them, releases
// them once the barrier completed. Barriers with a thread count and
// bar.arrive run inside the threads' tasks ([ptxLane.Arrive]). The block
// has shared bytes of dynamic shared memory.
func (c *blockCtx) runPTXBlock(mod *ptx.Module, entry string, params []byte, shared int, rec []byte) error {
	w := c.l.dev.w
	mem, err := mod.NewBlockMemDynamic(entry, params, shared)
	if err != nil {
		return fmt.Errorf("%s: %w", c.name(), err)
	}
	live := make([]*ptxLane, c.l.threads)
	lanes := make([]ptxLane, c.l.threads) // one allocation for the block's lanes
	for i := range live {
		ln := &lanes[i]
		// Field by field: lanes is zeroed, and a composite literal would
		// copy the whole record.
		ln.l, ln.index, ln.lane, ln.ownTask, ln.rec = c.l, c.index, i, true, rec
		err := mod.InitThread(&ln.thread, entry, ln, mem, ptx.Dim{Tid: uint32(i), Ntid: uint32(c.l.threads),
			Ctaid: uint32(c.index), Nctaid: uint32(c.l.grid)})
		if err != nil {
			return fmt.Errorf("%s: %w", c.name(), err)
		}
		live[i] = ln
	}
	parent := w.sched.Current().ID()
	block := &weakView{started: true} // the floors of what the block read (weak.go)
	w.weak.enlist(block)
	defer func() {
		// The block's threads read no more: the histories they read
		// no longer find their views (nor keep their records).
		w.weak.forget(block)
		for i := range lanes {
			w.weak.forget(&lanes[i].wv)
		}
	}()
	for phase := 0; len(live) > 0; phase++ {
		ph := &lanePhase{parent: parent}
		bar := blockSync{stamp: w.weak.stamp, block: block}
		for _, ln := range live {
			bar.add(&w.weak, &ln.wv)
		}
		warpsOf(live, w.cfg.Kernels.LaneByLane)
		for _, ln := range live {
			ln.reset()
			if phase == 0 {
				ln.wv.start(&w.weak, c.l.begun, place{dev: int32(c.l.dev.index), launch: c.l.id, block: int32(c.index), lane: int32(ln.lane)})
				ln.wv.block = block
			} else {
				ln.wv.syncBlock(&bar) // bar.sync
			}
		}
		for _, ln := range live {
			if ln.mates[0] == ln {
				// Its warp's first lane: it starts the others.
				ln.task = w.sched.ReserveID()
				ln.spawn(ph)
			}
		}
		n := len(live)
		what := c.name() + ": its " + itoa(n) + " threads to reach a barrier or exit"
		if err := w.sched.WaitBell(what, func() bool { return ph.done == n }, &ph.stopped, 0); err != nil {
			return err
		}
		c.emit(&Access{Kind: BlockSync, Parent: -1})
		var errs []error // the threads' errors, in order: most phases have none
		next := live[:0]
		for _, ln := range live {
			if ln.err != nil {
				errs = append(errs, ln.err)
			}
			if ln.err == nil && ln.stop == ptx.AtBarrier {
				next = append(next, ln)
			}
		}
		if err := firstError(errs, "threads"); err != nil {
			return err
		}
		if err := mem.Err(); err != nil {
			return fmt.Errorf("%s: %w", c.name(), err) // found when a thread exited
		}
		// Every thread left waits at a barrier of every thread: either
		// one that completed (all of them are at it), or none can.
		for _, ln := range next {
			if !ln.thread.Barrier().Done {
				return fmt.Errorf("%s: %w", c.name(), mem.Deadlock())
			}
		}
		for _, ln := range next {
			if err := ln.thread.Release(); err != nil {
				return fmt.Errorf("%s: %w", c.name(), err)
			}
		}
		live = next
	}
	return nil
}

// lanePhase is what the tasks of a block's threads share in one phase
// (from one barrier of every thread to the next).
type lanePhase struct {
	parent  int        // the block's task
	done    int        // the threads that stopped
	stopped actor.Bell // rung by every thread that stops
}

// warpsOf groups the lanes of a phase by warp (each lane alone when
// laneByLane), setting each lane's mates.
func warpsOf(live []*ptxLane, laneByLane bool) {
	for i := 0; i < len(live); {
		j := i + 1
		for !laneByLane && j < len(live) && live[j].lane/32 == live[i].lane/32 {
			j++
		}
		for _, ln := range live[i:j] {
			ln.mates = live[i:j:j]
			ln.begun = false
		}
		i = j
	}
}

// spawn starts the task that runs the lane in phase ph, under the task
// ID its accesses are reported with.
func (l *ptxLane) spawn(ph *lanePhase) {
	if l.lbl.Name == "" {
		l.lbl, l.where = l.label(), l.place // made once a lane needs a task
	}
	l.l.dev.w.sched.SpawnLabeledID(l.task, l.lbl, func() { l.run(ph) })
}

// parkKind is the scheduling point a lane parked before (see resume).
type parkKind uint8

const (
	parkNone parkKind = iota
	parkYield
	parkWait
)

// run runs the lane until it stops at a barrier of every thread, exits or
// fails.
func (l *ptxLane) run(ph *lanePhase) {
	w := l.l.dev.w
	w.sched.SetWhere(l.where)
	if !l.begun {
		l.startWarp(ph)
	}
	if stop, ok := l.thread.Stopped(); ok {
		l.end(ph, stop, nil) // in lockstep with its warp
		return
	}
	l.ph = ph
	l.resume()
}

// resume runs the lane's thread on from where it stopped, in its phase
// l.ph. A thread that parked before a global access (ptx.Parked) leaves
// its task parked at that scheduling point holding no goroutine (see
// [actor.Scheduler.YieldThen]); when chosen again, the task resumes the
// thread, which makes the access without a scheduling point of its own.
//
// A lane that lockstep left standing at its scheduling point (fresh,
// chosen for the first time in its phase, and parking before it executed
// an instruction) takes that point at once: the step that chose it is
// the point's, as the step that chose it parked there would have been.
// No instruction, access or other lane's step lies between the two, so
// the schedules are the same but for a step that did nothing.
func (l *ptxLane) resume() {
	w := l.l.dev.w
	for {
		before := l.thread.Executed()
		stop, err := l.thread.Run()
		w.executed += l.thread.Executed() - before
		fresh := l.fresh
		l.fresh = false
		if err != nil || stop != ptx.Parked {
			l.end(l.ph, stop, err)
			return
		}
		kind := l.parked
		l.parked, l.tookPoint = parkNone, true
		switch {
		case kind == parkYield && fresh && l.thread.Executed() == before:
			continue // the point is this step's
		case kind == parkWait:
			w.sched.WaitBellThen(l.waitWhat, l.changed, &l.bell, l.waitFor, (*wokeLane)(l))
		default:
			w.sched.YieldThen(l.parkWhat, l)
		}
		return
	}
}

// Continue is [actor.Continuation]: the lane's task, parked before an
// access, was chosen (resume).
func (l *ptxLane) Continue() { l.resume() }

// Warm is [actor.Warmer]: it reads the lane's first line and what its
// thread's Run reads first.
func (l *ptxLane) Warm() uint64 { return uint64(l.parked) + l.thread.Warm() }

// Warm is [actor.Warmer], as [ptxLane.Warm].
func (l *wokeLane) Warm() uint64 { return (*ptxLane)(l).Warm() }

// wokeLane is a lane parked in the wait of a spin, as the
// [actor.Continuation] of its task (woke).
type wokeLane ptxLane

// Continue is [actor.Continuation]: the lane's wait ended.
func (l *wokeLane) Continue() { (*ptxLane)(l).woke() }

// woke resumes a lane that parked in the wait of a spin.
func (l *ptxLane) woke() {
	var err error
	if l.l.dev.w.sched.TimedOut() {
		err = &actor.TimeoutError{Task: l.lbl.Name, What: l.waitWhat, After: l.waitFor}
	}
	l.waitErr = l.waited(err)
	l.resume()
}

// yield is a scheduling point of the lane's thread: where the thread may
// stop before its access (ptx.Thread.Parkable) it parks there (the
// access returns ptx.ErrPark, and resume yields once Run returned), else
// its task yields at once.
func (l *ptxLane) yield(what string) error {
	if l.thread.Parkable() {
		l.parked, l.parkWhat = parkYield, what
		return ptx.ErrPark
	}
	l.l.dev.w.sched.Yield(what)
	return nil
}

// took reports whether the scheduling point of the access now made was
// taken already: the thread parked before it (see resume). err is what
// the spin's wait there left to return.
func (l *ptxLane) took() (ok bool, err error) {
	if !l.tookPoint {
		return false, nil
	}
	err, l.tookPoint, l.waitErr = l.waitErr, false, nil
	return true, err
}

// end notes that the lane stopped in phase ph (at a barrier of every
// thread, or at its exit, or failed).
func (l *ptxLane) end(ph *lanePhase, stop ptx.Stop, err error) {
	l.stop, l.err = stop, err
	l.emit(&Access{Kind: LaneEnd, Parent: -1})
	ph.done++
	ph.stopped.Ring()
}

// startWarp starts the phase of the warp of l, its first lane, whose task
// alone the block started: a warp is scheduled as one until its lanes
// part. It reports every lane's start to the race detector, each under a
// task ID of its own, runs the lanes in lockstep up to the first
// instruction one of them must make alone (ptx.Lockstep), each lane's
// accesses its own, and starts a task for each other lane that did not
// stop there (at a barrier of every thread or its exit): a lane that
// did ends its phase without one.
func (l *ptxLane) startWarp(ph *lanePhase) {
	w := l.l.dev.w
	for _, m := range l.mates {
		if m != l {
			m.task = w.sched.ReserveID()
		}
		m.begun = true
		m.emit(&Access{Kind: LaneStart, Parent: ph.parent})
	}
	if len(l.mates) > 1 {
		// The World's buffers, taken for the call: none is shared should
		// a lane's access start another warp.
		ws := w.warp
		if ws == nil {
			ws = &warpStart{}
		}
		w.warp = nil
		ths := ws.threads[:0]
		for _, m := range l.mates {
			ths = append(ths, &m.thread)
		}
		n := ws.lockstep.Lockstep(ths)
		clear(ths)
		ws.threads = ths[:0]
		w.warp = ws
		w.executed += n
		w.lockstep += n
	}
	for _, m := range l.mates {
		switch stop, ok := m.thread.Stopped(); {
		case m == l:
		case ok:
			m.end(ph, stop, nil)
		default:
			m.fresh = true
			m.spawn(ph)
		}
	}
}

// ptxLane is one thread of a PTX block: the thread and the [ptx.Env] it
// runs against.
type ptxLane struct {
	// The fields a step of the lane's task reads first come first, with
	// the blockCtx's launch: a lane chosen among thousands is a cache
	// miss.
	rec []byte // the launch's error record
	// ph is the phase the lane runs in. parked is the scheduling point
	// the thread parked before (see resume): a yield named parkWhat, or
	// the wait of a spin named waitWhat with timeout waitFor; tookPoint:
	// the task took it, so the access the thread makes again goes ahead,
	// waitErr being what the wait left for it to return.
	ph        *lanePhase
	plain     int // plain accesses since the last scheduling point
	parked    parkKind
	tookPoint bool
	// begun: the phase's first lane of the warp to run started its mates
	// (startWarp). fresh: startWarp gave the lane its task, which has not
	// run yet (see resume).
	begun, fresh bool
	blockCtx
	// thread is the lane's thread, in the lane's record: a step reads
	// both.
	thread ptx.Thread
	// mates are the lanes of its warp that run in the block's current
	// phase (itself included).
	mates []*ptxLane
	lbl   actor.Label // its tasks' label, one for every phase (made by spawn)
	stop  ptx.Stop
	err   error

	pointLoops uint64 // the thread's loop count at its last scheduling point

	parkWhat, waitWhat string
	waitFor            time.Duration
	waitErr            error

	// prev is the thread's last strong poll (a strong load, or a
	// compare-and-swap that failed; b holds its first n bytes, at most
	// 16), live while no other access followed it; prevLoops is the
	// thread's loop count at it.
	prev      poll
	prevLive  bool
	prevLoops uint64
	// hoisted: a store of the thread ran before the load it performs
	// now (see Hoist), so that load's round writes: it polls nothing.
	hoisted bool
	// round is the thread's polls (loads and failed compare-and-swaps)
	// since its loop count last changed, with no other access among
	// them, and last the round before it: a loop that polls several
	// words, or reloads the pointer to its flag (see spinsAt).
	round, last pollRound
	one         [1]poll // the last poll, when it alone spins
	spinning    bool
	// laneSpin is the state of the thread's spins, made when it first
	// spins (spinOnce): most threads never do.
	*laneSpin
	where func() fmt.Stringer // place, for the scheduler's reports
}

// laneSpin is what a thread that spins keeps from one spin to the next.
type laneSpin struct {
	spinStart time.Duration
	// pastTimeout counts the rounds the thread polled on after its spin
	// outlasted the launch's timeout (see spin), moved the rounds among
	// them that left the thread's state (registers, local memory) other
	// than the round before, and state and prevState hold the state at
	// the start of the current round and of the one before.
	pastTimeout, moved int
	state, prevState   []byte
	// reads are the words of the thread's current spin, and changed
	// (spinChanged) reports whether one of them changed: kept from spin
	// to spin (a low-latency kernel's lanes spin at most of their polls).
	reads    []spinRead
	changed  func() bool
	what     []byte // the spin's description, built here
	whatText string // what, as the last spin's wait took it
}

// spinOnce makes the thread's spin state, before its first spin.
func (l *ptxLane) spinOnce() {
	if l.laneSpin == nil {
		l.laneSpin = &laneSpin{}
		l.changed = l.spinChanged
	}
}

// ThreadPlace is where a thread of a PTX launch is, as a run that reached
// its step limit reports the threads that kept it going
// ([actor.StepLimitError]).
type ThreadPlace struct {
	Line int // the PTX line of its last access, fence or barrier
	Loop int // the PTX line of its last backward branch (the loop's end); 0: none
}

func (p ThreadPlace) String() string {
	if p.Loop == 0 {
		return fmt.Sprintf("PTX line %d", p.Line)
	}
	return fmt.Sprintf("PTX line %d, in the loop that branches back at PTX line %d", p.Line, p.Loop)
}

func (l *ptxLane) place() fmt.Stringer {
	return ThreadPlace{Line: l.thread.Line(), Loop: l.thread.LoopLine()}
}

// spinRead is one word of a spin: its segments, and what the poll read
// (the poll's own bytes).
type spinRead struct {
	segs []segment
	last []byte
}

// spinChanged reports whether a word of the thread's spin no longer holds
// what its poll read (or its allocation was freed: the next access
// faults).
func (l *ptxLane) spinChanged() bool {
	var cur [16]byte
	for _, r := range l.reads {
		at := 0
		for _, sg := range r.segs {
			if sg.phys.freed() {
				return true
			}
			at += copy(cur[at:], sg.b)
		}
		if !bytes.Equal(cur[:len(r.last)], r.last) {
			return true
		}
	}
	return false
}

// roundsPastTimeout is how many rounds a thread of a user's launch whose
// spin outlasted the launch's timeout still polls, a step each, before
// the spin is a hang: a loop that gives up by the clock, which now reads
// past its timeout too, ends meanwhile. Rounds that change the thread's
// registers or local memory do not count (a loop that gives up by its
// own count of polls changes that count each round), up to
// maxRoundsPastTimeout rounds in all: a round that reads the same bytes
// from the same state as the round before goes round the same way, and
// only such rounds show that the loop cannot end by itself.
const roundsPastTimeout = 256

// maxRoundsPastTimeout bounds the rounds a thread of a user's launch
// polls on after its spin outlasted the launch's timeout, rounds that
// changed its state included: a loop that counts its polls without a
// bound, or past this one, is a hang.
const maxRoundsPastTimeout = 1 << 16

// poll is one read of a poll round: n bytes at addr that held b.
type poll struct {
	addr uint64
	n    int
	line int // the PTX line of the read (of a strong one)
	kind pollKind
	b    [16]byte
}

// pollKind is how a poll read: a strong load, a compare-and-swap that
// failed, or a plain load (a loop that reloads a pointer to its flag).
type pollKind uint8

const (
	strongPoll pollKind = iota
	casPoll
	plainPoll
)

// maxPolls bounds the reads of a poll round: a loop that reads more is
// not taken for a spin.
const maxPolls = 64

// pollRound is the polls of one round of a loop. Plain loads are noted
// only in a round after one with a strong poll (track): a loop of plain
// loads alone (one that copies a buffer) is no spin, and noting its
// reads would cost every plain load.
type pollRound struct {
	loops   uint64 // the thread's loop count during the round
	started bool   // a read began it (the round after a barrier has none yet)
	ok      bool   // its reads so far are polls, all noted
	strong  bool   // a strong poll among them
	track   bool   // plain polls are noted: the round before had a strong poll
	// spun: the round began with a spin on several words, whose other
	// reads continue the spin rather than end it.
	spun  bool
	polls []poll
}

func (l *ptxLane) reset() {
	l.prevLive, l.spinning, l.hoisted = false, false, false
	l.round, l.last = pollRound{polls: l.round.polls[:0]}, pollRound{polls: l.last.polls[:0]}
}

// unpoll notes an access that is not a poll: neither the round it falls
// in nor the next one can be a spin.
func (l *ptxLane) unpoll() { l.prevLive, l.round.ok = false, false }

// spinsAt reports whether the thread, about to read n bytes at addr as
// kind says, is spinning, and on what: the bytes of its last strong
// poll when that was the same read, made before its loop went round with
// no other access since (one word polled); else the bytes of the last
// round when that round read several words, one of them strong, and
// nothing else, and began with the same read (all of them would read the
// same again). A poll at a new loop count starts a new round.
func (l *ptxLane) spinsAt(addr uint64, n int, kind pollKind) (polls []poll, ok bool) {
	loops := l.thread.Loops()
	if !l.round.started || loops != l.round.loops {
		l.last, l.round = l.round, pollRound{loops: loops, started: true, ok: true, track: l.round.strong,
			polls: l.last.polls[:0]}
	}
	if p := l.prev; l.prevLive && p.kind == kind && p.addr == addr && p.n == n && loops != l.prevLoops {
		p.line = l.thread.Line()
		l.one[0] = p
		return l.one[:], true
	}
	if !l.round.ok || len(l.round.polls) > 0 || !l.last.ok || !l.last.strong || len(l.last.polls) < 2 {
		return nil, false
	}
	first := l.last.polls[0]
	return l.last.polls, first.addr == addr && first.n == n && first.kind == kind
}

// polled notes a poll that read b at addr; a read whose round's store
// ran before it (see Hoist) is no poll.
func (l *ptxLane) polled(addr uint64, b []byte, kind pollKind) {
	if l.hoisted {
		l.hoisted = false
		l.unpoll()
		return
	}
	r := &l.round
	l.prevLive = kind != plainPoll
	if l.prevLive {
		l.prev = poll{addr: addr, kind: kind}
		l.prev.n, l.prevLoops = copy(l.prev.b[:], b), l.thread.Loops()
		r.strong = true
	}
	switch {
	case !r.ok:
		return
	case kind == plainPoll && !r.track, len(b) > len(poll{}.b), len(r.polls) == maxPolls:
		r.ok = false
		return
	}
	p := poll{addr: addr, n: len(b), kind: kind}
	if kind != plainPoll {
		p.line = l.thread.Line()
	}
	copy(p.b[:], b)
	r.polls = append(r.polls, p)
}

// emitSeg reports an access of the thread as blockCtx's does, with the
// PTX line of the instruction that made it.
func (l *ptxLane) emitSeg(kind AccessKind, sg segment, write bool, order signal.Order, scope signal.Scope) {
	if l.l.dev.w.observe == nil {
		return
	}
	a := l.l.dev.w.scratchAccess()
	*a = segAccess(kind, sg, write, order, scope, 0, 0)
	a.Line = l.thread.Line()
	if kind == Store && l.held(a) {
		return
	}
	l.emit(a)
}

// emitLoad emits a plain load of sg, nc telling whether it is an
// ld.global.nc.
func (l *ptxLane) emitLoad(sg segment, nc bool) {
	if l.l.dev.w.observe == nil {
		return
	}
	a := l.l.dev.w.scratchAccess()
	*a = segAccess(Load, sg, false, signal.Relaxed, signal.Block, 0, 0)
	a.Line = l.thread.Line()
	a.NC = nc
	if l.held(a) {
		return
	}
	l.emit(a)
}

// point is the scheduling point of a global access: every strong one,
// and a plain one as Kernels.PlainYield says.
func (l *ptxLane) point(strong bool, what string) error {
	if !l.pointNow(strong) {
		return nil
	}
	return l.yield(what)
}

// pointNow reports whether an access, strong or plain, is a scheduling
// point, and counts it: every strong one is, a plain one as
// Kernels.PlainYield says.
func (l *ptxLane) pointNow(strong bool) bool {
	if !strong && !l.plainDue() {
		l.plain++
		return false
	}
	l.plain, l.pointLoops = 0, l.thread.Loops()
	return true
}

// plainDue reports whether the next plain access of the thread would be
// a scheduling point (see pointNow), counting nothing.
func (l *ptxLane) plainDue() bool {
	if every := l.l.dev.w.cfg.Kernels.PlainYield; every > 0 {
		return l.plain+1 >= every
	}
	return l.thread.Loops()-l.pointLoops >= DefaultPTXPlainLoops
}

// PlainNow is [ptx.PlainEnv]: a plain access may run in lockstep with the
// lane's warp when it is no scheduling point (see point), cannot be the
// poll of a spin (the lane made no strong poll since its phase began),
// and its bytes exist.
func (l *ptxLane) PlainNow(addr uint64, n int, write bool) bool {
	if l.prevLive || l.round.strong || l.last.strong || l.hoisted || l.plainDue() {
		return false
	}
	if _, ok, err := l.inRecord(addr, n); ok || err != nil {
		return err == nil
	}
	_, err := l.l.dev.resolve(device.Ptr(addr), uint64(n), write)
	return err == nil
}

var _ ptx.PlainEnv = (*ptxLane)(nil)

// inRecord returns the bytes of the launch's error record that an access
// of n bytes at addr touches; ok is false when addr is not in the record.
func (l *ptxLane) inRecord(addr uint64, n int) (b []byte, ok bool, err error) {
	if addr < errRecordAddr || addr >= errRecordAddr+uint64(len(l.rec)) {
		return nil, false, nil
	}
	if addr+uint64(n) > errRecordAddr+uint64(len(l.rec)) {
		return nil, true, fmt.Errorf("%s: access at %#x of %d bytes crosses the end of the error record", l.name(), addr, n)
	}
	return l.rec[addr-errRecordAddr:][:n], true, nil
}

func order(s ptx.Sem) signal.Order {
	switch s {
	case ptx.Acquire:
		return signal.Acquire
	case ptx.Release:
		return signal.Release
	case ptx.AcqRel:
		return signal.AcqRel
	}
	return signal.Relaxed
}

func scope(s ptx.Scope) signal.Scope {
	switch s {
	case ptx.CTA:
		return signal.Block
	case ptx.GPU:
		return signal.GPU
	}
	return signal.System
}

// Load reads global memory. A strong load is a scheduling point; one that
// repeats the thread's previous strong load of the same address, after a
// loop went round and with no other access but fences in between, is a
// spin: if the bytes are still the same, the thread sleeps until they
// change (or until the launch's timeout would have passed). So is a load
// that begins a round of a loop as the round before began, when that
// round only read (loads, plain ones included, and failed
// compare-and-swaps, at least one of them strong) and fenced, and every
// byte it read still holds what it read: the thread sleeps until one of
// them changes. Each element of a strong load (a vector's elements are
// accesses of their own) returns one of the stores the memory model lets
// the thread read (weak.go); a plain load returns the newest bytes.
func (l *ptxLane) Load(addr uint64, dst []byte, sem ptx.Sem, sc ptx.Scope) error {
	if r, ok, err := l.inRecord(addr, len(dst)); ok || err != nil {
		l.round.ok = false
		copy(dst, r)
		return err
	}
	p := device.Ptr(addr)
	strong := sem != ptx.Weak
	kind := strongPoll
	if !strong {
		kind = plainPoll
	}
	if took, err := l.took(); err != nil {
		return err
	} else if !took {
		polls, spins := l.spinsAt(addr, len(dst), kind)
		if spins {
			l.spinOnce()
			if err := l.spin(polls); err != nil {
				return err
			}
		} else {
			l.spinning = l.spinning && l.round.spun
			if err := l.point(strong, "ptx load"); err != nil {
				return err
			}
		}
	}
	segs, err := l.l.dev.resolve(p, uint64(len(dst)), false)
	if err != nil {
		return err
	}
	w := l.l.dev.w
	unit := l.unit(len(dst))
	at := 0
	for _, sg := range segs {
		n := copy(dst[at:], sg.b)
		if strong {
			// from tells the race detector which store each element
			// read, once one read an older store than its location's
			// newest.
			var from []uint64
			for e := 0; e+unit <= n; e += unit {
				v, f := w.weakLoad(&l.wv, sg.sub(e, unit), unit, order(sem), scope(sc))
				storeN(dst[at+e:at+e+unit], v)
				if f != 0 && w.observe != nil {
					if from == nil {
						from = make([]uint64, n/unit)
					}
					from[e/unit] = f
				}
			}
			l.emitStrong(sg, false, order(sem), scope(sc), unit, 0, from)
		} else {
			l.wv.plainLoad(&w.weak, sg)
			l.emitLoad(sg, l.thread.NonCoherent())
		}
		at += n
	}
	l.polled(addr, dst, kind)
	return nil
}

// unit is the size of each strong access an access of n bytes by the
// current instruction stands for: its element size (at most 8 bytes).
func (l *ptxLane) unit(n int) int {
	u := l.thread.AccessUnit()
	if u <= 0 || u > 8 || n%u != 0 {
		return min(n, 8)
	}
	return u
}

// emitStrong reports a strong access of the thread; an access of several
// units (a vector) is a run of unit-byte strong accesses. A write's units
// are the stores numbered from stamp on; a read's units read the stores
// from names (nil: each its location's newest).
func (l *ptxLane) emitStrong(sg segment, write bool, order signal.Order, scope signal.Scope, unit int, stamp uint64, from []uint64) {
	if l.l.dev.w.observe == nil {
		return
	}
	a := l.l.dev.w.scratchAccess()
	*a = segAccess(Atomic, sg, write, order, scope, 0, 0)
	a.Line, a.Stamp, a.From = l.thread.Line(), stamp, from
	if len(sg.b) > unit {
		a.Unit = uint64(unit)
	}
	l.emit(a)
}

// spin sleeps until the bytes of one of polls (the first: the read the
// thread is about to make) differ from what that poll read, or for the
// time left of the kernel's timeout (forever without one). A thread of a
// user's launch that spins that long polls on for roundsPastTimeout
// rounds, then fails with a [*SpinError] that names its first strong
// poll (its flag, rather than a pointer to it that the loop reloads).
func (l *ptxLane) spin(polls []poll) error {
	w := l.l.dev.w
	now := w.sched.Now()
	if !l.spinning {
		l.spinning, l.spinStart, l.pastTimeout, l.moved = true, now, 0, 0
	}
	l.round.spun = len(polls) > 1
	l.reads = slices.Grow(l.reads[:0], len(polls))[:len(polls)]
	reads := l.reads
	main := 0
	for i := range polls {
		q := &polls[i]
		segs, err := l.l.dev.resolve(device.Ptr(q.addr), uint64(q.n), false)
		if err != nil {
			if i == 0 {
				return err
			}
			return l.yield("ptx load") // the loop's later read faults
		}
		reads[i] = spinRead{append(reads[i].segs[:0], segs...), q.b[:q.n]}
		if polls[main].kind == plainPoll && q.kind != plainPoll {
			main = i
		}
	}
	changed := l.changed
	if changed() {
		return l.yield("ptx load")
	}
	p, line := device.Ptr(polls[main].addr), polls[main].line
	if l.pastTimeout > 0 {
		// The spin outlasted the launch's timeout: the thread polls on,
		// a round a step, for roundsPastTimeout rounds that did not
		// change its state.
		l.state, l.prevState = l.thread.AppendState(l.prevState[:0]), l.state
		if l.pastTimeout > 1 && !bytes.Equal(l.state, l.prevState) {
			l.moved++
		}
		if l.pastTimeout-l.moved == roundsPastTimeout || l.pastTimeout == maxRoundsPastTimeout {
			e := &SpinError{Device: l.l.dev.index, Kernel: l.l.kernel, Launch: l.l.id, Block: l.index, Lane: l.lane,
				Line: line, Addr: p, Value: slices.Clone(reads[main].last), Waited: w.sched.Now() - l.spinStart}
			for i, r := range reads {
				if i != main {
					e.Also = append(e.Also, SpinRead{Addr: device.Ptr(polls[i].addr), Value: slices.Clone(r.last)})
				}
			}
			e.Lost = lostStores(reads[main].segs)
			return e
		}
		l.pastTimeout++
		return l.yield("ptx load")
	}
	var timeout time.Duration
	if t := launchTimeout(l.l.args); t > 0 {
		timeout = max(t-(now-l.spinStart), time.Nanosecond)
	}
	name := l.lbl.Name // l.name(), made once the lane has a task
	if name == "" {
		name = l.name()
	}
	if l.what == nil {
		l.what = make([]byte, 0, len(name)+96) // the text below, grown once
	}
	b := append(l.what[:0], name...)
	b = append(b, ": spinning on 0x"...)
	b = strconv.AppendUint(b, uint64(p), 16)
	if len(polls) > 1 {
		b = append(b, " and "...)
		b = strconv.AppendInt(b, int64(len(polls)-1), 10)
		b = append(b, " other words"...)
	}
	b = append(b, " at PTX line "...)
	b = strconv.AppendInt(b, int64(line), 10)
	b = append(b, " for a change"...)
	l.what = b
	what := l.whatText
	if string(b) != what { // a spin of the same words keeps its text
		what = string(b)
		l.whatText = what
	}
	l.record(blockPrefix+"spin on %#x", lanePrefix+"spin on %#x", uint64(p))
	for _, r := range reads {
		l.watch(r.segs)
	}
	if l.thread.Parkable() {
		l.parked, l.waitWhat, l.waitFor = parkWait, what, timeout
		return ptx.ErrPark
	}
	return l.waited(w.sched.WaitBell(what, changed, &l.bell, timeout))
}

// waited ends the wait of a spin, whose outcome err is: the thread stops
// watching the words it read and goes on, polling on for a while if the
// wait outlasted the launch's timeout.
func (l *ptxLane) waited(err error) error {
	for _, r := range l.reads {
		l.unwatch(r.segs)
	}
	switch {
	case err == nil:
		return nil
	case !isTimeout(err):
		return err
	}
	if _, user := l.l.args.(PTXLaunch); user {
		// The kernels' own give up through their clock; any other
		// kernel that spins that long, and then roundsPastTimeout rounds
		// more, hangs.
		l.pastTimeout = 1
	}
	return nil
}

// launchTimeout is the per-operation timeout of a launch's arguments.
func launchTimeout(args any) time.Duration {
	switch a := args.(type) {
	case kernels.AllReduceArgs:
		return time.Duration(a.TimeoutNs)
	case kernels.SignalArgs:
		return time.Duration(a.TimeoutNs)
	case PTXLaunch:
		return a.Timeout
	}
	return 0
}

// Store writes global memory, after a scheduling point. Each element of
// a strong store joins its location's history (weak.go); a plain store
// ends the histories of what it overwrites.
func (l *ptxLane) Store(addr uint64, src []byte, sem ptx.Sem, sc ptx.Scope) error {
	l.unpoll()
	if r, ok, err := l.inRecord(addr, len(src)); ok || err != nil {
		copy(r, src)
		return err
	}
	strong := sem != ptx.Weak
	if took, _ := l.took(); !took {
		if err := l.point(strong, "ptx store"); err != nil {
			return err
		}
	}
	segs, err := l.l.dev.resolve(device.Ptr(addr), uint64(len(src)), true)
	if err != nil {
		return err
	}
	w := l.l.dev.w
	unit := l.unit(len(src))
	at := 0
	for _, sg := range segs {
		if !strong {
			plainStore(sg)
			at += copy(sg.b, src[at:])
			l.emitSeg(Store, sg, true, signal.Relaxed, signal.Block)
			continue
		}
		n := min(len(sg.b), len(src)-at)
		var first uint64 // the stamp of the segment's first element
		for e := 0; e+unit <= n; e += unit {
			el := sg.sub(e, unit)
			v := loadN(src[at+e : at+e+unit])
			stamp, newest := w.weakStore(&l.wv, el, unit, v, order(sem), scope(sc), nil, l.thread.Line())
			if e == 0 {
				first = stamp
			}
			if newest {
				storeN(el.b, v)
			}
		}
		full := n - n%unit // bytes past the last whole element, if any
		copy(sg.b[full:n], src[at+full:at+n])
		at += n
		l.emitStrong(sg, true, order(sem), scope(sc), unit, first, nil)
	}
	return nil
}

// Atomic performs an atom instruction after a scheduling point, and
// records it in the trace.
func (l *ptxLane) Atomic(addr uint64, size int, op ptx.AtomOp, sem ptx.Sem, sc ptx.Scope, a, b uint64) (uint64, error) {
	if r, ok, err := l.inRecord(addr, size); ok || err != nil {
		l.unpoll()
		if err != nil {
			return 0, err
		}
		old := loadWord(r)
		storeWord(r, ptx.AtomicResult(op, size, old, a, b))
		return old, nil
	}
	w := l.l.dev.w
	p := device.Ptr(addr)
	if addr%uint64(size) != 0 {
		return 0, &FaultError{Device: l.l.dev.index, Addr: p, Size: uint64(size), Write: true, Reason: "atomic on a misaligned address"}
	}
	// A compare-and-swap that failed on this word, retried after a loop
	// went round with no other access in between, spins like a load:
	// the thread sleeps until the word changes.
	if took, err := l.took(); err != nil {
		return 0, err
	} else if !took {
		var polls []poll
		spins := false
		if op == ptx.AtomCAS {
			polls, spins = l.spinsAt(addr, size, casPoll)
		}
		if spins {
			l.spinOnce()
			if err := l.spin(polls); err != nil {
				return 0, err
			}
		} else {
			l.spinning = l.spinning && l.round.spun
			if err := l.yield("atomic"); err != nil {
				return 0, err
			}
		}
	}
	segs, err := l.l.dev.resolve(p, uint64(size), true)
	if err != nil {
		return 0, err
	}
	sg := segs[0]
	old := loadWord(sg.b)
	val := ptx.AtomicResult(op, size, old, a, b)
	write := op != ptx.AtomCAS || old == a
	o := order(sem)
	carried, from := w.weakRMW(&l.wv, sg, size, o, scope(sc))
	var stamp uint64
	if write {
		// A writing atom is no poll, whether or not a store of its round
		// ran before it: that store's mark (see Hoist) ends here too.
		l.hoisted = false
		l.unpoll()
		stamp, _ = w.weakStore(&l.wv, sg, size, val, o, scope(sc), carried, l.thread.Line())
		storeWord(sg.b, val)
	} else {
		l.polled(addr, sg.b, casPoll)
	}
	const at = "atom %s %#x phys %d+%d %d %d prev %d %s %s"
	l.record(blockPrefix+at, lanePrefix+at, op.String(), addr, sg.phys.id, sg.off, a, b, old, o.String(), scope(sc).String())
	l.emitRMW(sg, write, o, scope(sc), uint32(a), uint32(b), stamp, from, l.thread.Line())
	return old, nil
}

// Fence is a fence or membar, after a scheduling point. The race
// detector and the thread's weak view (weak.go) give it the model's
// meaning: it releases the thread's accesses before it to the strong
// writes after it, acquires what the strong reads before it observed, and
// (fence.sc) is ordered with the other sc fences it is morally strong with.
// A fence does not end a poll round: a round that reads unchanged bytes
// and fences learns nothing its first fence did not, so a wait loop that
// fences each round is a spin too.
func (l *ptxLane) Fence(sem ptx.Sem, sc ptx.Scope) {
	l.l.dev.w.sched.Yield("ptx fence")
	l.wv.fence(&l.l.dev.w.weak, scope(sc), sem == ptx.SC)
	l.emit(&Access{Kind: Fence, Parent: -1, Order: signal.AcqRel, Scope: scope(sc), SC: sem == ptx.SC})
}

// SharedNow is [ptx.PlainEnv]: a plain access of shared memory may run
// in lockstep with the lane's warp when it is no scheduling point (see
// pointNow).
func (l *ptxLane) SharedNow() bool { return !l.plainDue() }

// Shared reports an access to the block's shared memory to the race
// detector. An atom and a strong ld or st are scheduling points, so the
// threads of a block interleave them; a plain ld or st is one as a plain
// access of global memory is (pointNow), for plain accesses order
// nothing and the race detector sees each either way. The detector takes
// an atom as a read-modify-write and a strong ld or st as a strong load
// or store, each with its semantics, at the block's scope (which holds
// every thread that shares the memory).
func (l *ptxLane) Shared(off uint64, n int, write bool, sem ptx.Sem, atomic bool) {
	l.unpoll()
	strong := atomic || sem != ptx.Weak
	if l.pointNow(strong) {
		l.l.dev.w.sched.Yield("ptx shared")
	}
	if w := l.l.dev.w; w.batch.on && len(w.batch.a.Lanes) > 0 {
		w.flushWarp() // in lockstep, after a warp's global accesses
	}
	kind := Load
	switch {
	case strong:
		kind = Atomic
	case write:
		kind = Store
	}
	l.emit(&Access{Kind: kind, Parent: -1, Size: uint64(n), Phys: SharedPhys(l.l.id, l.index), PhysOffset: off,
		Owner: l.l.dev.index, Write: write, RMW: atomic, Shared: true, Order: order(sem), Scope: signal.Block})
}

// Clock is %globaltimer: the virtual time in nanoseconds, plus a second
// so that it never reads 0 (which the kernels take for "not read yet").
func (l *ptxLane) Clock() uint64 {
	return uint64(l.l.dev.w.sched.Now()) + uint64(time.Second)
}

var _ ptx.BarrierEnv = (*ptxLane)(nil)

// WaitWarp is [ptx.WarpWaiter]: the lanes of a warp meet at shfl.sync and
// vote.sync, and threads wait at barriers with a thread count, through the
// scheduler, which reports a wait that cannot end with what it waited for.
func (l *ptxLane) WaitWarp(what string, ready func() bool) error {
	return l.l.dev.w.sched.Wait(l.name()+": "+what, ready, 0)
}

// Arrive is [ptx.BarrierEnv]: the thread arrives at a barrier with a
// thread count or at bar.arrive. For the race detector it is a release
// store to bytes of that arrival's own (see [BarrierPhys]), which the
// threads its phase releases acquire; for weak reads it releases every
// strong store so far (weak.go).
func (l *ptxLane) Arrive(id int, n uint64, released *uint64) {
	l.unpoll()
	w := l.l.dev.w
	*released = max(*released, w.weak.stamp)
	a := l.barrierAccess(id, ptx.Arrival{Thread: uint32(l.lane), N: n}, true)
	l.emit(&a)
	w.sched.Yield("ptx barrier")
}

// Leave is [ptx.BarrierEnv]: the thread acquires what the arrivals of
// the phase that released it released.
func (l *ptxLane) Leave(id int, arrivals []ptx.Arrival, released uint64) {
	l.unpoll()
	l.wv.learn(released)
	if l.l.dev.w.observe == nil {
		return
	}
	for _, a := range arrivals {
		if int(a.Thread) != l.lane {
			b := l.barrierAccess(id, a, false)
			l.emit(&b)
		}
	}
}

// barrierAccess is the race detector's view of arrival a at barrier id
// (a release store) or of a thread released by its phase learning it (an
// acquire load).
func (l *ptxLane) barrierAccess(id int, a ptx.Arrival, arrive bool) Access {
	phys := BarrierPhys(l.l.id, l.index, id)
	switch {
	case id == ptx.ClusterBarrierID:
		phys = ClusterBarrierPhys(l.l.id, l.index)
	case id >= ptx.NumBarriers:
		phys = WarpSyncPhys(l.l.id, l.index, id-ptx.NumBarriers)
	}
	acc := Access{Kind: Atomic, Parent: -1, Size: 4, Phys: phys,
		PhysOffset: 4 * (a.N%BarrierSlots*uint64(l.l.threads) + uint64(a.Thread)), Owner: l.l.dev.index, Write: arrive,
		Order: signal.Acquire, Scope: signal.Block, Line: l.thread.Line()}
	if arrive {
		acc.Order = signal.Release
	}
	return acc
}

func loadWord(b []byte) uint64 {
	if len(b) == 8 {
		return binary.LittleEndian.Uint64(b)
	}
	return uint64(binary.LittleEndian.Uint32(b))
}

func storeWord(b []byte, v uint64) {
	if len(b) == 8 {
		binary.LittleEndian.PutUint64(b, v)
		return
	}
	binary.LittleEndian.PutUint32(b, uint32(v))
}

func isTimeout(err error) bool {
	var te *actor.TimeoutError
	return errors.As(err, &te)
}
