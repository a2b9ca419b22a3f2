package ptx

import (
	"fmt"
	"math/bits"
)

// WarpWaiter is implemented by an [Env] that can block a thread until a
// condition holds: the lanes of a warp meet at shfl.sync and vote.sync
// through it. WaitWarp returns once ready() is true (it is a scheduling
// point: other threads run meanwhile) or with an error when the wait
// cannot end (the simulator's deadlock and timeout detection).
type WarpWaiter interface {
	WaitWarp(what string, ready func() bool) error
}

// Lane states of a warp, as the threads' runs leave them.
const (
	laneRunning uint8 = iota
	laneAtBarrier
	laneExited
	laneFailed
)

// warp is the meeting point of the lanes of one warp of a block: a lane
// reaching a collective (shfl.sync, vote.sync) deposits its operands; the
// last lane of the collective's member mask computes every member's
// result and releases them.
type warp struct {
	lanes   uint32 // the lanes that exist (a last warp may be partial)
	base    uint32 // the thread index of lane 0
	exited  uint32 // the lanes whose state is laneExited
	state   [32]uint8
	barLine [32]int
	barID   [32]int       // the barrier each lane waits at
	barAt   [32]*barPhase // the phase each lane's arrival at a barrier joined (nil: its warp has yet to arrive)
	barN    [32]uint64    // which of the lane's arrivals at its barrier that is

	waiting uint32 // lanes waiting at a collective
	inst    [32]*inst
	mask    [32]uint32
	val     [32]uint64 // shfl: the value; vote: the predicate
	b, c    [32]uint32 // shfl's lane operand and clamp
	res     [32]uint64
	resP    [32]bool
	resErr  [32]error
	done    [32]uint64 // collectives each lane completed

	// bar.warp.sync: each lane's syncs so far, and what the last sync of
	// each member mask released (its arrivals and largest token).
	syncN   [32]uint64
	syncArr [32][]Arrival
	syncRel [32]uint64
	relTok  uint64 // the largest token of the arrivals of the sync forming
}

// join registers the thread of dim with its warp.
func (mem *BlockMem) join(dim Dim) {
	wi := int(dim.Tid / 32)
	for len(mem.warps) <= wi {
		mem.warps = append(mem.warps, &warp{})
	}
	w := mem.warps[wi]
	w.base = 32 * uint32(wi)
	n := min(dim.Ntid-32*uint32(wi), 32)
	w.lanes = uint32(1<<n - 1)
	w.state[dim.Tid%32] = laneRunning
	mem.live++
	mem.running++
}

// leave records that the thread of dim waits at a barrier of line, exited,
// failed or runs again.
func (mem *BlockMem) leave(dim Dim, state uint8, line int) {
	w := mem.warps[dim.Tid/32]
	if w.state[dim.Tid%32] == laneRunning {
		mem.running--
	}
	if state == laneRunning {
		mem.running++
	}
	w.state[dim.Tid%32] = state
	w.barLine[dim.Tid%32] = line
	if bit := uint32(1) << (dim.Tid % 32); state == laneExited {
		w.exited |= bit
	} else {
		w.exited &^= bit
	}
}

// warpOp executes activemask, shfl.sync, vote.sync and bar.warp.sync.
// bar.warp.sync is a meeting of the lanes of its member mask like the
// others; where the Env models barriers ([BarrierEnv]), each lane's
// arrival releases what it did so far, and once all met, each acquires
// what the others' arrivals released (barrier id NumBarriers+w stands for
// warp w's).
func (t *Thread) warpOp(f *frame, in *inst) error {
	w := t.mem.warps[t.dim.Tid/32]
	lane := t.dim.Tid % 32
	if in.op == opActivemask {
		// The lanes that have neither exited nor stopped at a block
		// barrier: under independent thread scheduling any of them may
		// be converged with this one.
		var m uint32
		for l := uint32(0); l < 32; l++ {
			if w.lanes>>l&1 == 1 && w.state[l] == laneRunning {
				m |= 1 << l
			}
		}
		f.regs[in.ops[0].reg] = uint64(m)
		return nil
	}
	maskOp := &in.ops[len(in.ops)-1]
	mask := uint32(t.value(f, maskOp, tU32))
	if mask>>lane&1 == 0 {
		return fmt.Errorf("lane %d executes %s with member mask %#08x, which does not include it", lane, in.text, mask)
	}
	if mask&^w.lanes != 0 {
		return fmt.Errorf("member mask %#08x names lanes the block does not have (its warp has lanes %#08x)", mask, w.lanes)
	}
	benv, barriers := t.env.(BarrierEnv)
	if in.op == opWarpSync && barriers {
		benv.Arrive(NumBarriers+int(t.dim.Tid/32), w.syncN[lane], &w.relTok)
	}
	w.waiting |= 1 << lane
	w.inst[lane] = in
	w.mask[lane] = mask
	w.resErr[lane] = nil
	switch in.op {
	case opWarpSync:
	case opShfl:
		w.val[lane] = t.value(f, &in.ops[1], tB32)
		w.b[lane] = uint32(t.value(f, &in.ops[2], tB32))
		w.c[lane] = uint32(t.value(f, &in.ops[3], tB32))
	default:
		w.val[lane] = t.value(f, &in.ops[1], tPred)
	}
	before := w.done[lane]
	w.complete(mask)
	if w.done[lane] == before {
		waiter, ok := t.env.(WarpWaiter)
		if !ok {
			w.waiting &^= 1 << lane
			return fmt.Errorf("%s needs the lanes of a warp to meet, which this environment does not support", in.text)
		}
		what := fmt.Sprintf("lanes %#08x of warp %d at %s line %d", mask, t.dim.Tid/32, in.text, in.line)
		err := waiter.WaitWarp(what, func() bool { return w.done[lane] != before || w.stuck(mask) != "" })
		if w.done[lane] == before {
			w.waiting &^= 1 << lane
			if err != nil {
				return err
			}
			return fmt.Errorf("lane %d waits at %s with member mask %#08x, but %s", lane, in.text, mask, w.stuck(mask))
		}
	}
	if err := w.resErr[lane]; err != nil {
		return err
	}
	if in.op == opWarpSync {
		w.syncN[lane]++
		if barriers {
			benv.Leave(NumBarriers+int(t.dim.Tid/32), w.syncArr[lane], w.syncRel[lane])
		}
		return nil
	}
	d := &in.ops[0]
	if d.kind == oVec {
		f.regs[d.vec[0]], f.regs[d.vec[1]] = w.res[lane], b2u(w.resP[lane])
	} else {
		f.regs[d.reg] = w.res[lane]
	}
	return nil
}

// stuck says why the collective of mask cannot complete, "" if it still
// may. A member waiting at another collective (of another mask, in code
// the warp diverged in) holds it up only while no lane of the warp can
// move: once that collective completes, the member comes here too.
func (w *warp) stuck(mask uint32) string {
	var other, failed string
	for l := uint32(0); l < 32; l++ {
		if mask>>l&1 == 0 {
			continue
		}
		switch {
		case w.state[l] == laneExited:
			return fmt.Sprintf("lane %d exited", l)
		case w.state[l] == laneAtBarrier:
			return fmt.Sprintf("lane %d waits at %s (line %d)", l, barrierName(w.barID[l]), w.barLine[l])
		case w.state[l] == laneFailed && failed == "":
			failed = fmt.Sprintf("lane %d failed", l)
		case other == "" && w.waiting>>l&1 == 1 && w.mask[l] != mask:
			other = fmt.Sprintf("lane %d waits at %s line %d with member mask %#08x", l, w.inst[l].text, w.inst[l].line, w.mask[l])
		}
	}
	if failed != "" {
		return failed
	}
	if other == "" {
		return ""
	}
	for l := uint32(0); l < 32; l++ {
		if w.lanes>>l&1 == 1 && w.state[l] == laneRunning && w.waiting>>l&1 == 0 {
			return ""
		}
	}
	return other
}

// complete performs the collective of mask if every member arrived at the
// same instruction with the same mask.
func (w *warp) complete(mask uint32) {
	if w.waiting&mask != mask {
		return
	}
	first := uint32(bits.TrailingZeros32(mask))
	in := w.inst[first]
	for l := first; l < 32; l++ {
		if mask>>l&1 == 1 && (w.mask[l] != mask || w.inst[l].op != in.op || w.inst[l].mode != in.mode) {
			return
		}
	}
	switch in.op {
	case opWarpSync:
		var arr []Arrival
		for l := first; l < 32; l++ {
			if mask>>l&1 == 1 {
				arr = append(arr, Arrival{Thread: w.base + l, N: w.syncN[l]})
			}
		}
		for l := first; l < 32; l++ {
			if mask>>l&1 == 1 {
				w.syncArr[l], w.syncRel[l] = arr, w.relTok
			}
		}
	case opShfl:
		for l := first; l < 32; l++ {
			if mask>>l&1 == 0 {
				continue
			}
			j, p := shflSource(in.mode, l, w.b[l], w.c[l])
			if mask>>j&1 == 0 {
				w.resErr[l] = fmt.Errorf("lane %d reads lane %d, outside the member mask %#08x (undefined)", l, j, mask)
			}
			w.res[l], w.resP[l] = w.val[j], p
		}
	case opVote:
		var ballot uint32
		for l := first; l < 32; l++ {
			if mask>>l&1 == 1 && w.val[l] != 0 {
				ballot |= 1 << l
			}
		}
		var v uint64
		switch in.mode {
		case voteAll:
			v = b2u(ballot == mask)
		case voteAny:
			v = b2u(ballot != 0)
		case voteUni:
			v = b2u(ballot == mask || ballot == 0)
		case voteBallot:
			v = uint64(ballot)
		}
		for l := first; l < 32; l++ {
			if mask>>l&1 == 1 {
				w.res[l] = v
			}
		}
	}
	for l := first; l < 32; l++ {
		if mask>>l&1 == 1 {
			w.done[l]++
		}
	}
	w.waiting &^= mask
}

// shflSource is the lane that lane l reads in shfl mode with lane operand
// b and clamp value c, and whether it is in range (otherwise l reads its
// own value).
func shflSource(mode uint8, l, b, c uint32) (uint32, bool) {
	b &= 31
	segmask := c >> 8 & 31
	maxLane := l&segmask | c&31&^segmask
	minLane := l & segmask
	var j int32
	var p bool
	switch mode {
	case shflUp:
		j = int32(l) - int32(b)
		p = j >= int32(maxLane)
	case shflDown:
		j = int32(l + b)
		p = j <= int32(maxLane)
	case shflBfly:
		j = int32(l ^ b)
		p = j <= int32(maxLane)
	default:
		j = int32(minLane | b&^segmask)
		p = j <= int32(maxLane)
	}
	if !p {
		return l, false
	}
	return uint32(j), true
}
