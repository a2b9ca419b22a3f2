package race

import (
	"slices"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/device/sim"
)

// Coalesced warp accesses. The plain loads (or stores) that the lanes of
// a warp make at one instruction in lockstep come as one event
// ([sim.WarpAccess]). When the lanes' bytes are one run of whole granules,
// the same number a lane, in lane order, in one allocation through one
// mapping, the detector keeps them as one record (warpRec) holding each
// lane's epoch, and the granules they touch hold one state for the run
// (a warp state: each of its accesses is either one that touched every
// granule of the run, or a warp record of the same layout, whose lane j
// touched the granules of column j). A granule of column j is checked
// against lane j's epoch: the check is made column by column, with the
// lane's own clock, and reports name the lane (its own record, made
// when a report or a split needs it).
//
// The run keeps one state only as long as every column keeps the same
// accesses: a check that would keep different ones in different columns,
// and any access of another kind (strong, non-coherent, shared, partial)
// of the run's granules, first splits the warp state into a state per
// column (explode), each holding the lanes' own records with their
// epochs, which is what lane-by-lane accesses would have left; the
// access is then checked as ever. A warp access that cannot be kept so
// is checked lane by lane.

// warpRec is a warp's plain access: rec holds what its lanes share, lane
// 0's offset and the size of each lane's bytes (lane j's start at
// off+j*size), and lane 0's epoch and origin.
type warpRec struct {
	rec
	lanes []warpLane
}

// warpLane is one lane of a warpRec: its epoch and origin, and its own
// record once something needed it (see laneRec).
type warpLane struct {
	ep  epoch
	org *origin
	r   *rec
}

// laneRec is lane j's access as a record of its own, made once.
func (w *warpRec) laneRec(d *Detector, j int) *rec {
	l := &w.lanes[j]
	if l.r == nil {
		r := d.slab.rec()
		*r = w.rec
		r.ep, r.org, r.off = l.ep, l.org, w.off+uint64(j)*w.size
		l.r = r
	}
	return l.r
}

// warpSet is what makes a state a warp state: the layout of its granules
// (n columns of k granules from g0) and, parallel to its accesses, the
// warp record of each that is one (nil for the others).
type warpSet struct {
	g0, k uint64
	n     int
	recs  []*warpRec
}

// maxWarpAccs bounds the accesses a warp state keeps; past it the state
// is split into its columns.
const maxWarpAccs = 16

// observeWarp checks and records the accesses of the lanes of wa.
func (d *Detector) observeWarp(wa *sim.WarpAccess) {
	if !d.coalescable(wa) {
		if d.broadcast(wa) {
			return
		}
		for i := range wa.Lanes {
			a := wa.Lane(i)
			d.access(&a)
		}
		return
	}
	n := len(wa.Lanes)
	ts := d.laneThreads(wa)
	l0, last := &wa.Lanes[0], &wa.Lanes[n-1]
	size := l0.Size
	lo, hi := l0.PhysOffset/granule, (last.PhysOffset+last.Size)/granule
	sh := d.shadowOf(l0.Phys)
	sh.grow(hi)
	ws := warpSet{g0: lo, k: size / granule, n: n}
	s := sh.at(lo)
	end, _, _ := sh.run(lo, hi, s)
	var mask uint64
	settled, racy := !wa.Write, false
	ok := end == hi && ws.takes(s)
	if ok && s != nil {
		mask, settled, racy, ok = d.uniform(s, &ws, wa.Write, func(j int) (*thread, uint64, uint64) {
			return ts[j], l0.PhysOffset + uint64(j)*size, size
		})
	}
	if !ok {
		if sh.warped {
			d.explodeIn(sh, lo, hi)
		}
		d.lanesBy(wa, ts)
		return
	}
	a0 := wa.Lane(0)
	wr := &warpRec{lanes: make([]warpLane, n)}
	for j := range wa.Lanes {
		t := ts[j]
		a := &a0
		if j > 0 {
			d.warpLane = wa.Lane(j)
			a = &d.warpLane
		}
		if o := t.org; o == nil || !o.made(a, d.label(t, a)) {
			t.org = &origin{}
			*t.org = originOf(a, d.label(t, a))
		}
		wr.lanes[j] = warpLane{ep: t.now(), org: t.org}
	}
	d.coalesced++
	wr.rec = d.recOf(&a0, ts[0], sh.places.of(&a0), nil)
	wr.rec.nc = a0.NC
	if racy {
		for j := range n {
			d.pairs.reset()
			xr := wr.laneRec(d, j)
			d.column(s, j, wa.Write, xr.off, size, ts[j], func(y *rec) { d.report(y, xr, ts[j]) })
		}
	}
	sh.update(lo, hi, func(s *state, whole bool) *state {
		y := acc{r: &wr.rec}
		if wa.Write {
			y.tag |= accWrite
		}
		if settled {
			y.tag |= accSettled
		}
		return d.rebuild(s, whole, mask, y, wr, ws)
	})
	sh.warped = true
}

// laneThreads is the threads of the lanes of wa, each stepped to the
// event of its lane's access (scratch space, valid until the next call).
func (d *Detector) laneThreads(wa *sim.WarpAccess) []*thread {
	ts := d.warpThreads[:0]
	for i := range wa.Lanes {
		t := d.self(wa.Lanes[i].Task)
		t.step()
		ts = append(ts, t)
	}
	d.warpThreads = ts
	return ts
}

// lanesBy checks and records the lanes of wa one by one, lane i's made
// by thread ts[i].
func (d *Detector) lanesBy(wa *sim.WarpAccess, ts []*thread) {
	for i := range wa.Lanes {
		a := wa.Lane(i)
		d.accessBy(&a, ts[i])
	}
}

// Coalesced is the number of warp accesses ([sim.WarpAccess]) the
// detector kept as one record each, rather than lane by lane.
func (d *Detector) Coalesced() int { return d.coalesced }

// coalescable reports whether the lanes of wa may be kept as one warp
// record: plain accesses, not by ld.global.nc (nor writes that may follow
// one: ncafter.go), of one run of whole granules, the same number a lane,
// in lane order, in one allocation through one mapping, each lane's
// thread once.
func (d *Detector) coalescable(wa *sim.WarpAccess) bool {
	if len(wa.Lanes) < 2 || wa.NC || wa.Shared || wa.Kind == sim.Atomic || wa.Write && d.ncOps != nil {
		return false
	}
	l0 := &wa.Lanes[0]
	size, base := l0.Size, l0.Addr-device.Ptr(l0.PhysOffset)
	if size == 0 || size%granule != 0 || l0.PhysOffset%granule != 0 {
		return false
	}
	for i := 1; i < len(wa.Lanes); i++ {
		l, p := &wa.Lanes[i], &wa.Lanes[i-1]
		if l.Size != size || l.Phys != l0.Phys || l.Owner != l0.Owner || l.Addr-device.Ptr(l.PhysOffset) != base ||
			l.PhysOffset != p.PhysOffset+size || l.Task == p.Task {
			return false
		}
	}
	return true
}

// takes reports whether a warp access of layout ws may be checked against
// s, the state every granule of its run holds, column by column: none, a
// state of plain accesses with no history or read cache and room for
// one more, or a warp state of the same layout.
func (ws *warpSet) takes(s *state) bool {
	switch {
	case s == nil:
		return true
	case s.h != nil || s.rc != nil || len(s.accs) >= maxWarpAccs:
		return false
	case s.w != nil:
		return s.w.g0 == ws.g0 && s.w.k == ws.k && s.w.n == ws.n
	}
	return true
}

// uniform checks, without reporting, an access (write: a write) against
// the accesses of s column by column in the layout ws, col giving each
// column's thread and bytes of the access; it returns the accesses of s
// that the access leaves (a bit each) and, for a read, whether it leaves
// every write ordered before it, whether it races with any, and reports
// whether the accesses left and settled are the same in every column.
func (d *Detector) uniform(s *state, ws *warpSet, write bool, col func(j int) (*thread, uint64, uint64)) (mask uint64, settled, racy, ok bool) {
	for j := range ws.n {
		t, off, size := col(j)
		m, st, r := d.column(s, j, write, off, size, t, nil)
		racy = racy || r
		if j == 0 {
			mask, settled = m, st
		} else if m != mask || st != settled {
			return 0, false, false, false
		}
	}
	return mask, settled, racy, true
}

// column checks an access of thread t (write: a write) of bytes [off,
// off+size) against the accesses of s as column j of its layout has
// them, as [Detector.check] does: it returns the accesses the access does
// not supersede (a bit each) and, for a read, whether it leaves every
// write ordered before it; race, when not nil, is called with each access
// the access races with.
func (d *Detector) column(s *state, j int, write bool, off, size uint64, t *thread, race func(y *rec)) (mask uint64, settled, racy bool) {
	now := t.sight()
	settled = !write
	for i, y := range s.accs {
		var wr *warpRec
		if s.w != nil {
			wr = s.w.recs[i]
		}
		slot, clock := y.slot(), y.clock
		yoff, ysize, yw, shared := y.r.off, y.r.size, y.write(), y.r.shared
		if wr != nil {
			l := &wr.lanes[j]
			slot, clock = int(l.ep.slot), l.ep.clock
			yoff, ysize, yw, shared = wr.off+uint64(j)*wr.size, wr.size, wr.write, false
		}
		ordered := clock <= now.get(slot) || y.tag&accStrong != 0 && y.r.observedBy(now.slot)
		if !ordered && (yw || write) && !shared && yoff < off+size && off < yoff+ysize {
			racy = true
			switch {
			case race == nil:
			case wr != nil:
				race(wr.laneRec(d, j))
			default:
				race(y.r)
			}
		}
		if !ordered || (!write && yw) {
			mask |= 1 << i
			if yw && !ordered {
				settled = false
			}
		}
	}
	return mask, settled, racy
}

// rebuild is the state that follows s (nil: none) once an access, x
// (warp record wx, nil for another access), left the accesses of s that
// mask has: s itself when whole (its granules hold every reference to
// it), else a new one; a warp state of layout ws while it holds a warp
// record.
func (d *Detector) rebuild(s *state, whole bool, mask uint64, x acc, wx *warpRec, ws warpSet) *state {
	keep, recs := d.warpAccs[:0], d.warpRecs[:0]
	writes := int32(0)
	warp := wx != nil
	if s != nil {
		for i, y := range s.accs {
			if mask&(1<<i) == 0 {
				continue
			}
			var wr *warpRec
			if s.w != nil {
				wr = s.w.recs[i]
			}
			keep = append(keep, y)
			recs = append(recs, wr)
			warp = warp || wr != nil
			if y.write() {
				writes++
			}
		}
	}
	keep = append(keep, x)
	recs = append(recs, wx)
	if x.write() {
		writes++
	}
	n := s
	if !whole || s == nil {
		n = d.slab.state()
	}
	var w *warpSet
	switch {
	case !warp:
	case n.w != nil:
		// n is s, changed in place: its set is its own.
		w = n.w
		w.recs = append(w.recs[:0], recs...)
	default:
		w = &warpSet{g0: ws.g0, k: ws.k, n: ws.n, recs: slices.Clone(recs)}
	}
	n.accs = append(n.accs[:0], keep...)
	n.writes, n.h, n.rc, n.w = writes, nil, nil, w
	clear(keep)
	clear(recs)
	d.warpAccs, d.warpRecs = keep[:0], recs[:0]
	return n
}

// unwarp prepares the granules [lo, hi) of sh for a, an access of thread
// t checked as ever: a warp state there stays when a, a plain access of
// all its granules, keeps the same accesses in every column of it (see
// [Detector.warpStep]); any other is split into its columns.
func (d *Detector) unwarp(sh *shadow, a *sim.Access, t *thread, lo, hi uint64) {
	plain := (a.Kind == sim.Load || a.Kind == sim.Store) && !a.NC && !a.Shared && !(a.Write && d.ncOps != nil)
	split := d.warpStates[:0]
	sh.each(lo, hi, func(s *state) {
		if s == nil || s.w == nil {
			return
		}
		ws := s.w
		if plain && ws.g0 >= lo && ws.g0+uint64(ws.n)*ws.k <= hi && len(s.accs) < maxWarpAccs {
			if _, _, _, ok := d.uniform(s, ws, a.Write, func(int) (*thread, uint64, uint64) { return t, a.PhysOffset, a.Size }); ok {
				return
			}
		}
		split = append(split, s)
	})
	d.explodeAll(sh, split)
}

// warpStep checks x, a plain access of thread t that covers every
// granule of the warp state s (unwarp kept s), column by column, and
// returns the state that follows.
func (d *Detector) warpStep(s *state, whole bool, x *rec, t *thread) *state {
	var mask uint64
	settled := !x.write
	for j := range s.w.n {
		m, st, _ := d.column(s, j, x.write, x.off, x.size, t, func(y *rec) { d.report(y, x, t) })
		if j == 0 {
			mask, settled = m, st
		}
	}
	return d.rebuild(s, whole, mask, accOf(x, settled), nil, *s.w)
}

// explodeIn splits every warp state held in granules [lo, hi) of sh into
// its columns.
func (d *Detector) explodeIn(sh *shadow, lo, hi uint64) {
	split := d.warpStates[:0]
	sh.each(lo, hi, func(s *state) {
		if s != nil && s.w != nil {
			split = append(split, s)
		}
	})
	d.explodeAll(sh, split)
}

// explodeAll splits each of the states split (scratch space: d.warpStates)
// that is still a warp state into its columns.
func (d *Detector) explodeAll(sh *shadow, split []*state) {
	for _, s := range split {
		if s.w != nil {
			d.explode(sh, s)
		}
	}
	clear(split)
	d.warpStates = split[:0]
}

// explode splits s, a warp state, into a state per column, holding what
// lane-by-lane accesses would have left there: each warp record's lane
// for the column, as a record of its own with the lane's epoch.
func (d *Detector) explode(sh *shadow, s *state) {
	ws := s.w
	for j := range ws.n {
		n := d.slab.state()
		for i, y := range s.accs {
			if wr := ws.recs[i]; wr != nil {
				l := &wr.lanes[j]
				y = acc{r: wr.laneRec(d, j), tag: uint32(l.ep.slot)<<accSlotShift | y.tag&(accWrite|accSettled), clock: l.ep.clock}
			}
			n.accs = append(n.accs, y)
		}
		n.writes = s.writes
		lo := ws.g0 + uint64(j)*ws.k
		sh.assign(lo, lo+ws.k, s, n)
	}
	s.w = nil
}

// Broadcast loads. When every lane of a warp loads the same bytes (the
// lanes of a block reading one pointer), the lanes' reads are checked
// together: lane by lane, each lane's read would be checked against the
// granules' accesses and the reads of the lanes before it, and take its
// place after them. Lanes that share their block's snapshot (their
// clocks differ only in their own components) and made no access in the
// granules' list since their threads started see every access there
// alike, save the strong writes that some of them observed and the
// accesses of their own slots (see broadcastNow); and no lane's read is
// ordered before another's (each lane's event is new), nor races with
// it (reads both). So one pass over the list finds the reads that the first lane
// drops (those ordered before the snapshot), and the writes that race
// with a lane; each lane's races are then reported in lane order, against
// those writes only, and the lanes' reads, each its own record with its
// own epoch and settled or not by its own checks, end the list: what
// lane-by-lane checks would have left and reported, in the same order.
// Anything else (granules holding different states, a warp state, a lane
// with a clock of its own or rereading) is checked lane by lane.

// broadcast checks and records the lanes of wa when it is a broadcast
// load, and reports whether it did; it changes nothing when it did not.
func (d *Detector) broadcast(wa *sim.WarpAccess) bool {
	n := len(wa.Lanes)
	if n < 2 || wa.Kind != sim.Load || wa.Write || wa.NC || wa.Shared {
		return false
	}
	l0 := &wa.Lanes[0]
	if l0.Size == 0 {
		return false
	}
	for i := 1; i < n; i++ {
		l := &wa.Lanes[i]
		if l.Phys != l0.Phys || l.PhysOffset != l0.PhysOffset || l.Size != l0.Size || l.Owner != l0.Owner || l.Addr != l0.Addr {
			return false
		}
	}
	ts := d.laneThreads(wa)
	if !d.broadcastNow(wa, ts) {
		d.lanesBy(wa, ts)
	}
	return true
}

// broadcastNow checks and records wa, a broadcast load whose lanes'
// threads ts made it, at once, and reports whether it did: not when the
// lanes must be checked one by one (it then changed nothing).
func (d *Detector) broadcastNow(wa *sim.WarpAccess, ts []*thread) bool {
	vc := ts[0].vc
	slots := d.bcastSlots[:0]
	for _, t := range ts {
		if !t.shared || vc == nil || !same(t.vc, vc) || t.own <= vc.get(t.slot) {
			return false
		}
		slots = append(slots, laneSlot{t.slot, t.quiet})
	}
	slices.SortFunc(slots, func(a, b laneSlot) int { return a.slot - b.slot })
	d.bcastSlots = slots
	for i := 1; i < len(slots); i++ {
		if slots[i].slot == slots[i-1].slot {
			return false // a thread's lanes twice
		}
	}
	lo, hi := granulesOf(&wa.Lanes[0])
	sh := d.shadowOf(wa.Lanes[0].Phys)
	sh.grow(hi)
	s := sh.at(lo)
	if end, _, _ := sh.run(lo, hi, s); end != hi || s != nil && s.w != nil {
		return false
	}
	var accs []acc
	if s != nil {
		accs = s.accs
	}
	// Past the last write of a long list, every read is unordered with a
	// snapshot that is one of its read cache's snaps, and kept; when the
	// cache says none is of a lane's slot, they need no look.
	end := len(accs)
	if rc := s.cache(); rc != nil && rc.holds(vc) {
		end = rc.wend
		for _, l := range slots {
			if rc.may(l.slot) {
				end = len(accs)
				break
			}
		}
	}
	// One pass over the list: a read ordered before the snapshot is
	// dropped (by the first lane); a write not ordered before it may race
	// with each lane, unless the lane observed it (a strong write). An
	// access of a lane's slot made before the lane's thread started (by a
	// thread it took the slot over from) is ordered before that lane (a
	// read: dropped) and before the others as before the snapshot; one
	// made since is a reread, which the lane checks alone.
	drop, racing := d.bcastDrop[:0], d.bcastWrites[:0]
	lowest, highest := slots[0].slot, slots[len(slots)-1].slot
	for k, y := range accs[:end] {
		sl, own := y.slot(), -1
		if sl >= lowest && sl <= highest {
			if i, found := slices.BinarySearchFunc(slots, sl, func(l laneSlot, sl int) int { return l.slot - sl }); found {
				if y.clock >= slots[i].quiet {
					return false
				}
				own = sl
			}
		}
		ordered := y.clock <= vc.get(sl)
		drop = append(drop, (ordered || own >= 0) && !y.write())
		if !ordered && y.write() {
			racing = append(racing, bcastWrite{k, own})
		}
	}
	d.bcastDrop, d.bcastWrites = drop, racing
	var at *place
	xs := d.bcastRecs[:0]
	for j, t := range ts {
		d.warpLane = wa.Lane(j)
		a := &d.warpLane
		if j == 0 {
			at = sh.places.of(a)
		}
		x := d.slab.rec()
		*x = d.recOf(a, t, at, nil)
		settled := true
		d.pairs.reset()
		for _, w := range racing {
			y := accs[w.k]
			if w.own == t.slot || y.tag&accStrong != 0 && y.r.observedBy(t.slot) {
				continue
			}
			settled = false
			if conflict(y.r, x) {
				d.report(y.r, x, t)
			}
		}
		xs = append(xs, accOf(x, settled))
	}
	d.bcastRecs = xs
	sh.update(lo, hi, func(s *state, whole bool) *state {
		return d.broadcastState(s, whole, drop, xs, vc)
	})
	clear(xs)
	d.broadcasts++
	return true
}

// laneSlot is the slot of a lane of a broadcast load and the first event
// of its thread since it last learned anything.
type laneSlot struct {
	slot  int
	quiet uint32
}

// bcastWrite is a write of the list a broadcast load checks, at k, not
// ordered before the lanes' snapshot: made by the lane of slot own (-1:
// none of them), before which it is ordered.
type bcastWrite struct {
	k, own int
}

// granulesOf is the run of granules [lo, hi) that l's bytes touch.
func granulesOf(l *sim.LaneAccess) (lo, hi uint64) {
	return l.PhysOffset / granule, (l.PhysOffset + l.Size + granule - 1) / granule
}

// broadcastState is the state that follows s (nil: none) once the reads
// xs of a broadcast load dropped the accesses of s that drop marks (drop
// may be shorter than the list: the accesses past it stay): s itself
// when whole, else a new one. Its read cache, when its list is long,
// holds the snaps of s's that every read of xs is unordered with, and
// vc, the lanes' snapshot.
func (d *Detector) broadcastState(s *state, whole bool, drop []bool, xs []acc, vc vclock) *state {
	n := s
	if !whole || s == nil {
		n = d.slab.state()
	}
	var old *readCache
	dropped := slices.Contains(drop, true)
	switch {
	case s == nil:
	case n == s && !dropped:
		old = s.rc
	default:
		old = s.rc
		keep := n.accs[:0]
		if n != s && len(s.accs)+len(xs) > cap(keep) {
			keep = make([]acc, 0, len(s.accs)+len(xs))
		}
		for k, y := range s.accs {
			if k >= len(drop) || !drop[k] {
				keep = append(keep, y)
			}
		}
		if n == s {
			clear(s.accs[len(keep):])
		}
		n.accs, n.writes, n.h = keep, s.writes, s.h
	}
	n.accs = append(n.accs, xs...)
	n.rc = nil
	if len(n.accs) < minCache {
		return n
	}
	var rc *readCache
	switch {
	case old != nil && n == s && !dropped && len(n.accs) <= 2*old.built:
		// The same list with the reads xs after its last write.
		rc = old
		for _, x := range xs {
			rc.mark(x.slot())
		}
	case old != nil && n == s:
		rc = old
	default:
		rc = &readCache{}
		if old != nil {
			rc.snaps = old.snaps
		}
	}
	if rc != old || dropped || len(n.accs) > 2*old.built {
		rc.wend = 0
		for i := len(n.accs) - 1; i >= 0; i-- {
			if n.accs[i].write() {
				rc.wend = i + 1
				break
			}
		}
		rc.index(n.accs)
	}
	for _, x := range xs {
		for k, p := range rc.snaps {
			if p != nil && x.clock <= p.get(x.slot()) {
				rc.snaps[k] = nil
			}
		}
	}
	if !rc.holds(vc) {
		copy(rc.snaps[:], rc.snaps[1:])
		rc.snaps[maxSnaps-1] = vc
	}
	n.rc = rc
	return n
}

// cache is the read cache of s, nil when s is nil or has none.
func (s *state) cache() *readCache {
	if s == nil {
		return nil
	}
	return s.rc
}

// Broadcasts is the number of broadcast loads (every lane of a warp
// loading the same bytes) the detector checked at once, rather than lane
// by lane.
func (d *Detector) Broadcasts() int { return d.broadcasts }
