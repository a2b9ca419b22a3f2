package race

import "github.com/symmem/symmem/device/sim"

// pageShift sets the granules of a shadow page: 128 granules, 512 bytes,
// the run a block of 32 threads moves with 16-byte vectors.
const pageShift = 7

// pageGranules is the number of granules a shadow page covers.
const pageGranules = 1 << pageShift

// shadow is the shadow memory of one physical allocation: a page table
// from granule index to pages of per-granule states. A page whose granules
// all hold the same state keeps it once, so an access of a whole tensor
// costs a step per page, not per granule; accesses narrower than a page
// split it into one state pointer per granule.
type shadow struct {
	pages  []page
	places places // where its accesses went, shared by their records
	// warped says that a warp state (warp.go) was made in it.
	warped bool
}

// page is the shadow of pageGranules granules: when cells is nil every
// granule holds all (nil: no access touched them), else granule k holds
// cells[k].
type page struct {
	all   *state
	cells *[pageGranules]*state
}

// state is what the detector knows about the granules that hold it: the
// accesses that a later access must be checked against (every write not
// ordered before a later write, every read not ordered before a later
// access of the granule), in the order they happened, and what atomic
// writes released.
//
// States are shared between granules until one of them is accessed (copy
// on write): refs counts the holders (cells and whole pages), and an
// access changes a state in place only when the granules it covers hold
// every reference to it. The accs array is never shared between states;
// histories are, and are never modified in place.
//
// A span is a maximal run of granules that hold one state, or states with
// equal accesses and no releases (see [sameSpan]). An atomic write
// continues the release sequence of the span it starts in, not of every
// word it covers (a run of strong accesses reported as one), so spans are
// part of what the detector decides: they are kept as they always were,
// granules that one access filled staying one span until another access
// splits them.
type state struct {
	accs []acc
	inl  [3]acc // backs accs while it is short
	// h is the granules' release sequence and prior writes; nil when
	// they have neither (most granules: only strong writes make them).
	// Shared between states, never modified in place.
	h    *history
	refs int32
	// writes is how many of accs are writes.
	writes int32
	// rc speeds up the checks of reads against accs when it is long;
	// nil when it is short. Never shared between states.
	rc *readCache
	// w makes the state a warp state (warp.go); nil for others.
	w *warpSet
}

// readCache is what the detector knows of a long list of accesses that
// lets a read skip the clock look-ups of the other threads' reads (see
// [Detector.check]).
type readCache struct {
	// wend is one past the last write of accs (0: none): accs[wend:]
	// holds reads only.
	wend int
	// snaps are clocks that every read of accs is unordered with: each
	// read's clock is above the snap's component of the read's slot. A
	// thread whose clock is one of them (a lane still sharing its
	// block's snapshot, which nobody changes) is thereby unordered with
	// every read of another slot.
	snaps [maxSnaps]vclock
	// slots has the bit slot%(64*len(slots)) set for the slot of every
	// read of accs[wend:] (and maybe others): a thread whose bit is clear
	// has no read there. built is the length of accs it was sized for;
	// it is rebuilt, larger, once accs is twice as long.
	slots []uint64
	built int
}

// may reports whether accs[wend:] may hold a read of slot.
func (c *readCache) may(slot int) bool {
	n := uint(len(c.slots)) * 64
	b := uint(slot) % n
	return c.slots[b/64]&(1<<(b%64)) != 0
}

// mark notes that accs[wend:] may hold a read of slot.
func (c *readCache) mark(slot int) {
	n := uint(len(c.slots)) * 64
	b := uint(slot) % n
	c.slots[b/64] |= 1 << (b % 64)
}

// index rebuilds c.slots from accs, sized for 16 bits an access.
func (c *readCache) index(accs []acc) {
	words := 1
	for words*64 < 16*len(accs) {
		words *= 2
	}
	if cap(c.slots) >= words {
		c.slots = c.slots[:words]
		clear(c.slots)
	} else {
		c.slots = make([]uint64, words)
	}
	for _, y := range accs[c.wend:] {
		c.mark(y.slot())
	}
	c.built = len(accs)
}

// maxSnaps bounds the clocks a readCache keeps: the blocks whose lanes
// read a word at once.
const maxSnaps = 8

// minCache is the length of a list of accesses from which its state
// keeps a readCache.
const minCache = 32

// holds reports whether v is one of c's snaps.
func (c *readCache) holds(v vclock) bool {
	for _, p := range c.snaps {
		if p != nil && same(p, v) {
			return true
		}
	}
	return false
}

// history is what a state keeps besides its accesses, apart so that the
// many states of plain accesses do not carry it.
type history struct {
	rel []release
	// prior is the strong writes the granules held before their latest
	// one, oldest first, each with the release sequence as it stood
	// after it: a strong read may return one of them (the simulator's
	// weak reads). Shared between histories like rel, never modified in
	// place.
	prior []wrote
}

// prior is s's prior writes (see [history]); none for nil.
func (s *state) prior() []wrote {
	if s == nil || s.h == nil {
		return nil
	}
	return s.h.prior
}

// historyAfter is the history of the state that follows s once access x
// is checked, store telling whether x is a plain store: a read keeps s's;
// a plain store ends the release sequence and the prior writes; a strong
// write keeps the sequence (the caller continues it) and pushes its prior
// writes (see [state.priorAfter]).
func (s *state) historyAfter(x *rec, store bool) *history {
	if !x.write {
		return s.h
	}
	var rel []release
	if !store {
		rel = s.releases()
	}
	return historyOf(s.h, rel, s.priorAfter(x))
}

// historyOf is the history holding rel and prior: nil for neither, else
// last when it holds them already, else a new one.
func historyOf(last *history, rel []release, prior []wrote) *history {
	switch {
	case len(rel) == 0 && len(prior) == 0:
		return nil
	case last != nil && sameRel(last.rel, rel) && samePrior(last.prior, prior):
		return last
	}
	return &history{rel: rel, prior: prior}
}

// wrote is a strong write that a granule held before its latest one, and
// the granule's release sequence as it stood after that write.
type wrote struct {
	r   *rec
	rel []release
}

// maxPrior bounds a state's prior writes: a strong read returns one of
// the sim.WeakHistory newest stores of its location, the latest write and
// maxPrior before it. A read of an older store, which the detector no
// longer knows, learns nothing (see [Detector.access]).
const maxPrior = sim.WeakHistory - 1

// priorAfter is the prior writes of the state that follows s once x, a
// write, is checked: a strong write that the simulator numbered pushes
// s's latest write, when that one is numbered too (a read can return an
// older store only through an unbroken history of numbered stores); any
// other write ends them. (A read keeps them.)
func (s *state) priorAfter(x *rec) []wrote {
	if x.strong == nil || x.stamp == 0 {
		return nil
	}
	w := s.lastWrite()
	if w == nil || w.strong == nil || w.stamp == 0 {
		return nil
	}
	prior := s.prior()
	keep := prior[max(0, len(prior)-(maxPrior-1)):]
	out := make([]wrote, len(keep), len(keep)+1)
	copy(out, keep)
	return append(out, wrote{w, s.releases()})
}

// samePrior reports whether two states keep the same prior writes.
func samePrior(x, y []wrote) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if x[i].r != y[i].r || !sameRel(x[i].rel, y[i].rel) {
			return false
		}
	}
	return true
}

// sameRel reports whether x and y are the same release list.
func sameRel(x, y []release) bool {
	return len(x) == len(y) && (len(x) == 0 || &x[0] == &y[0])
}

// stored returns the strong write that unit i of a, a strong read that
// reports which stores its units read (from, see [sim.Access].From),
// returned, and the release sequence of the unit's granule as it stood
// after that write: its latest write and release sequence when the unit
// read the newest store, else the write, latest or prior, that made the
// store read. It returns nil, nil when the detector no longer knows that
// store (it is older than the prior writes kept, or no numbered store
// made it): the read then learns nothing, which cannot hide a race.
func (sh *shadow) stored(a *sim.Access, from []uint64, i int) (*rec, []release) {
	b := a.PhysOffset + uint64(i)*unit(a)
	if b >= a.PhysOffset+a.Size {
		return nil, nil // more entries in from than units
	}
	s := sh.at(b / granule)
	if s == nil {
		return nil, nil
	}
	w := s.lastWrite()
	if from[i] == 0 || (w != nil && w.stampAt(b) == from[i]) {
		return w, s.releases()
	}
	prior := s.prior()
	for k := len(prior) - 1; k >= 0; k-- {
		if p := prior[k]; p.r.stampAt(b) == from[i] {
			return p.r, p.rel
		}
	}
	return nil, nil
}

// acc is an access a state keeps: its record, with what checking it
// against a later access needs most often, so that long lists are read
// without visiting every record.
type acc struct {
	r     *rec
	tag   uint32 // r.ep.slot<<accSlotShift, plus the acc bits that hold
	clock uint32 // r.ep.clock
}

// The bits of an acc's tag under its slot.
const (
	// accStrong marks a strong write, which reads may observe (see
	// rec.seen).
	accStrong = 1 << iota
	// accWrite marks a write.
	accWrite
	// accSettled marks a read that left every write of the list it
	// joined ordered before it (see [Detector.check]).
	accSettled
	// accSlotShift is where the slot starts.
	accSlotShift = iota
)

// accOf is the acc of r, settled or not.
func accOf(r *rec, settled bool) acc {
	y := acc{r: r, tag: uint32(r.ep.slot) << accSlotShift, clock: r.ep.clock}
	if r.write {
		y.tag |= accWrite
		if r.strong != nil {
			y.tag |= accStrong
		}
	}
	if settled {
		y.tag |= accSettled
	}
	return y
}

// slot is the clock component of y's thread.
func (y acc) slot() int { return int(y.tag >> accSlotShift) }

// settledReadOf reports whether y is a settled read of t made since t last
// learned anything (settled: only reads carry the bit).
func (y acc) settledReadOf(t *thread) bool {
	return y.tag == uint32(t.slot)<<accSlotShift|accSettled && y.clock >= t.quiet
}

// write reports whether y writes.
func (y acc) write() bool { return y.tag&accWrite != 0 }

// unref drops a holder of s.
func (s *state) unref() { s.drop(1) }

// drop drops k holders of s.
func (s *state) drop(k int32) {
	if s != nil {
		s.refs -= k
	}
}

// sameSpan reports whether adjacent granules holding s and o are one span:
// the same state, or two states with no releases and the same accesses
// and prior writes.
func sameSpan(s, o *state) bool {
	if s == o {
		return true
	}
	if s == nil || o == nil || len(s.releases()) != 0 || len(o.releases()) != 0 || len(s.accs) != len(o.accs) || !samePrior(s.prior(), o.prior()) {
		return false
	}
	for i, a := range s.accs {
		if o.accs[i].r != a.r {
			return false
		}
	}
	return true
}

// lastWrite is the latest write of the granule, nil when none.
func (s *state) lastWrite() *rec {
	if s == nil {
		return nil
	}
	for i := len(s.accs) - 1; i >= 0; i-- {
		if s.accs[i].write() {
			return s.accs[i].r
		}
	}
	return nil
}

// releases is s's release sequence; none for nil.
func (s *state) releases() []release {
	if s == nil || s.h == nil {
		return nil
	}
	return s.h.rel
}

// grow makes the page table cover granules [0, hi).
func (sh *shadow) grow(hi uint64) {
	if n := (hi + pageGranules - 1) >> pageShift; n > uint64(len(sh.pages)) {
		sh.pages = append(sh.pages, make([]page, n-uint64(len(sh.pages)))...)
	}
}

// at is the state granule g holds; g must be covered.
func (sh *shadow) at(g uint64) *state {
	p := &sh.pages[g>>pageShift]
	if p.cells == nil {
		return p.all
	}
	return p.cells[g&(pageGranules-1)]
}

// spanEnd returns the end of the span that granule lo starts, bounded by
// hi: the first granule in (lo, hi) that is not one span with its left
// neighbour, else hi.
func (sh *shadow) spanEnd(lo, hi uint64) uint64 {
	prev := sh.at(lo)
	for g := lo + 1; g < hi; {
		p := &sh.pages[g>>pageShift]
		if p.cells == nil {
			if !sameSpan(prev, p.all) {
				return g
			}
			prev = p.all
			g = (g>>pageShift + 1) << pageShift
			continue
		}
		s := p.cells[g&(pageGranules-1)]
		if !sameSpan(prev, s) {
			return g
		}
		prev = s
		g++
	}
	return hi
}

// each calls fn with every distinct state held in granules [lo, hi), in
// address order (a state held by neighbouring granules once; one held
// apart, or nil, may come more than once).
func (sh *shadow) each(lo, hi uint64, fn func(*state)) {
	var prev *state
	for g := lo; g < hi; {
		p := &sh.pages[g>>pageShift]
		end := min(hi, (g>>pageShift+1)<<pageShift)
		if p.cells == nil {
			if g == lo || p.all != prev {
				fn(p.all)
			}
			prev = p.all
			g = end
			continue
		}
		for ; g < end; g++ {
			s := p.cells[g&(pageGranules-1)]
			if g == lo || s != prev {
				fn(s)
			}
			prev = s
		}
	}
}

// update replaces the states held in granules [lo, hi), in address
// order: each run of neighbouring holders of one state s (nil: untouched
// granules) takes the state repl(s, whole) returns, where whole says that
// the run holds every reference to s, so that s may change in place. The
// pages of the run are split or rejoined as needed; reference counts
// follow.
func (sh *shadow) update(lo, hi uint64, repl func(s *state, whole bool) *state) {
	for g := lo; g < hi; {
		s := sh.at(g)
		end, k, partial := sh.run(g, hi, s)
		n := repl(s, s != nil && !partial && s.refs == k)
		sh.assign(g, end, s, n)
		g = end
	}
}

// run returns the end of the run of granules in [g, hi) that hold s,
// starting at g; the holders (cells and whole pages) inside it; and
// whether a page holding s lies partly outside it.
func (sh *shadow) run(g, hi uint64, s *state) (end uint64, k int32, partial bool) {
	for g < hi {
		p := &sh.pages[g>>pageShift]
		base := g >> pageShift << pageShift
		pend := min(hi, base+pageGranules)
		if p.cells == nil {
			if p.all != s {
				return g, k, partial
			}
			if g == base && pend == base+pageGranules {
				k++
			} else {
				partial = true
			}
			g = pend
			continue
		}
		for ; g < pend; g++ {
			if p.cells[g&(pageGranules-1)] != s {
				return g, k, partial
			}
			k++
		}
	}
	return g, k, partial
}

// assign makes granules [lo, hi), which hold s, hold n.
func (sh *shadow) assign(lo, hi uint64, s, n *state) {
	for g := lo; g < hi; {
		p := &sh.pages[g>>pageShift]
		base := g >> pageShift << pageShift
		end := min(hi, base+pageGranules)
		whole := g == base && end == base+pageGranules
		switch {
		case whole && p.cells == nil:
			s.unref()
			p.all = n
			n.refs++
		case whole:
			// Every cell held s: keep n once.
			s.drop(pageGranules)
			p.all, p.cells = n, nil
			n.refs++
		default:
			if p.cells == nil {
				p.split()
			}
			for k := g; k < end; k++ {
				p.cells[k&(pageGranules-1)] = n
			}
			s.drop(int32(end - g))
			n.refs += int32(end - g)
		}
		g = end
	}
}

// split gives every granule of a uniform page its own reference to the
// page's state.
func (p *page) split() {
	p.cells = new([pageGranules]*state)
	for k := range p.cells {
		p.cells[k] = p.all
	}
	if p.all != nil {
		p.all.refs += pageGranules - 1
	}
	p.all = nil
}
