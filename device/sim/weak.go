package sim

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"

	"github.com/symmem/symmem/device/sim/ptx"
	"github.com/symmem/symmem/internal/slab"
	"github.com/symmem/symmem/signal"
)

// Weak reads. A strong load of a kernel thread returns, as a seeded
// decision, one of the stores the PTX memory model lets it read, not
// always the newest: the view-based operational semantics of package
// memmodel (C11Tester's, with scopes), with views made cheap by
// over-approximating them.
//
// Every location that strong stores wrote keeps a short history of them
// in coherence order (the order they ran), oldest first, the first entry
// possibly the value the location held before them (its base). Entries
// carry a stamp: strong stores are numbered in the order they run. A
// thread's view is a stamp, known, standing for "every strong store up to
// here happens before me", plus per location the newest entry it read
// (read-read coherence); its own stores are found in the history. An
// entry is hidden from a thread when a later entry of the location is one
// it knows, read or wrote. Where the exact model would know less than
// "everything up to a stamp" (what a releasing thread saw, what a
// barrier's threads saw), the view knows more: that only hides stores,
// so a kernel run never shows an outcome the model forbids, and may miss
// some it allows.
//
// Views grow as the model says: a thread starts knowing everything stored
// before its kernel started (the launch is a system-scope release, as the
// race detector has it); at a block-wide bar.sync a PTX thread learns
// what its block's threads knew, observed, read and stored (blockSync; a
// Go twin's block, everything stored so far), and at a named barrier
// every strong store up to its phase's last arrival; a release
// store (or a strong store after a fence) carries the stamp of its
// release; a strong read of it with a scope that covers both threads
// observes it (pend), and an acquire read, or a later fence of a wide
// enough scope, makes the thread know it; fence.sc also knows what every
// earlier morally strong fence.sc knew. Read-modify-writes read the newest
// store and continue its release sequence.
//
// A plain store ends a location's history (the stores before it are no
// longer readable); a location whose bytes changed behind its history
// (a host write, a store of another size) starts again from its current
// bytes. Plain loads read the newest value: a plain load that could read
// another is racing, which the race detector reports.
//
// The race detector learns which store each strong read returned: a
// strong write is reported with its stamp ([Access].Stamp; a vector's
// elements are consecutive stamps), and a strong load some element of
// which returned an older store than its location's newest with the stamp
// of the store each element read ([Access].From; 0 for the newest,
// StoreUnknown for a history's base, which no numbered store wrote). The
// detector synchronises the read with that store's release sequence and
// marks that write observed (package race). Read-modify-writes read the
// newest store, as they report. The loads of the Go twins' WaitU32 are not
// reported: a wait learns nothing from them but when to retry its
// compare-and-swap, which reads the newest store.

// WeakHistory is the most strong stores of one location a strong read
// chooses from: its newest and up to WeakHistory-1 older ones (the race
// detector keeps as many per location, to know which one a read
// returned). It bounds a location's history: older entries are dropped,
// which only hides stores.
const WeakHistory = 6

// weakMem is the world's state of weak reads.
type weakMem struct {
	stamp uint64     // strong stores so far
	rng   *rand.Rand // the seeded decisions, drawn from the scheduler's seed
	sc    []scFence  // what fence.sc released, merged per place and scope
	// scEvicted is the newest stamp of the sc records evicted to keep at
	// most maxSC: every later fence.sc knows it, as if all were morally
	// strong with it (which only hides stores).
	scEvicted uint64
	// hists is where new histories are carved from: a low-latency
	// all-reduce makes one for every word of its packets, and most live
	// as long as the run.
	hists slab.Slab[history]
	// mems are the allocations with histories, in the order they got
	// their first (freed ones until the next settle, or the next
	// allocation's first history, drops them).
	mems []*weakMemOf
	// walk is what the next settle visits (the pages and histories the
	// last one found, plus the histories made since), and since counts
	// the strong accesses since the last settle, which pay for it (see
	// settle).
	walk  int
	since int
	// launches counts the launches whose blocks run (runResident).
	launches int
	// views are the live views by slot, liveIDs their ids (0 for a free
	// slot: a dense table that a history's read asks which readers
	// ended), and freeViews the slots that ended views left (reused last
	// freed first). A history's reader names its view by id rather than
	// by pointer, so that a location read once by a lane of every launch
	// does not keep those lanes' records alive; an eviction finds the
	// reader's view here.
	views     []*weakView
	liveIDs   []uint64
	viewGen   []uint32 // per slot, how many views it held
	freeViews []int32
}

// enlist gives v an id and a slot among the live views.
func (wm *weakMem) enlist(v *weakView) {
	var slot int
	if n := len(wm.freeViews); n > 0 {
		slot, wm.freeViews = int(wm.freeViews[n-1]), wm.freeViews[:n-1]
	} else {
		slot = len(wm.views)
		wm.views, wm.liveIDs, wm.viewGen = append(wm.views, nil), append(wm.liveIDs, 0), append(wm.viewGen, 0)
	}
	wm.viewGen[slot]++
	wm.views[slot] = v
	v.id = uint64(wm.viewGen[slot])<<32 | uint64(slot+1)
	wm.liveIDs[slot] = v.id
}

// forget ends v: its thread reads no more, so the histories it read no
// longer find it (its id stays unique: the slot's next view has another).
func (wm *weakMem) forget(v *weakView) {
	if slot := int(uint32(v.id)) - 1; slot >= 0 && slot < len(wm.views) && wm.views[slot] == v {
		wm.views[slot], wm.liveIDs[slot] = nil, 0
		wm.freeViews = append(wm.freeViews, int32(slot))
	}
}

// ended reports whether the view of id ended (forget).
func (wm *weakMem) ended(id uint64) bool {
	slot := int(uint32(id)) - 1
	return slot < 0 || slot >= len(wm.liveIDs) || wm.liveIDs[slot] != id
}

// view returns the live view of id, nil when it ended.
func (wm *weakMem) view(id uint64) *weakView {
	if wm.ended(id) {
		return nil
	}
	return wm.views[int(uint32(id))-1]
}

// maxSC bounds the fence.sc records (every thread of every launch that
// runs one has its own).
const maxSC = 64

// scFence is the stamp fence.sc of threads of one place released at scope.
type scFence struct {
	who   place
	scope signal.Scope
	stamp uint64
}

// place names a kernel thread: its device, launch, block and lane (-1 for
// a Go twin's block).
type place struct {
	launch uint64
	dev    int32
	block  int32
	lane   int32
}

// needed is the narrowest scope that includes two threads.
func needed(a, b place) signal.Scope {
	sameDev := a.dev == b.dev
	return signal.Needed(sameDev, sameDev && a.launch == b.launch && a.block == b.block)
}

// history is the strong stores of one location, oldest first. Its first
// 64 bytes are what finding it and checking that it is current read (a
// strong access of a lane chosen at random is a cache miss here).
type history struct {
	off  uint64 // the location's offset in its allocation
	size int
	// next is the next location of the same word (see weakPage).
	next *history
	// nval is the newest entry's value, which histOf compares with the
	// location's bytes.
	nval uint64
	ents []wstore
	// last is the stamp of the store that ran last, the race detector's
	// latest write: the newest entry but where a later store was placed
	// before it (see weakStore).
	last uint64
	// readers holds, per live thread that read the location, the stamp
	// of the newest entry it read (read-read coherence), at most
	// maxReaders: those of ended threads go when another joins.
	readers []reader
	// inlReader backs readers while two threads at most read it (the
	// packet's poller and its block), and inl backs ents while it holds
	// the base and one store, as most do (a packet of the low-latency
	// protocol is written once a launch): neither takes an allocation of
	// its own. A strong read reads the lines in this order.
	inlReader [2]reader
	inl       [2]wstore
}

// maxReaders bounds a history's live readers: a location read by many
// threads at once would otherwise keep them all.
const maxReaders = 8

// reader is one thread's floor in a history: its view's id (see
// weakMem.views) and the stamp of the newest entry it read. older counts
// the thread's last strong reads of the location that returned an older
// store than the newest, in a row (at most maxOlder): its next read
// there returns an older one with half the chance of the last.
type reader struct {
	view  uint64
	stamp uint64
	older uint8
}

// maxOlder bounds reader.older: past it, the chance that a thread reads
// an older store of a location again stays 2^-(maxOlder+1).
const maxOlder = 16

// readerOf returns v's entry among h's readers, nil if none.
func (h *history) readerOf(v *weakView) *reader {
	for i := range h.readers {
		if r := &h.readers[i]; r.view == v.id {
			return r
		}
	}
	return nil
}

// floor returns the stamp of the newest entry v read, 0 if none.
func (h *history) floor(v *weakView) uint64 {
	if r := h.readerOf(v); r != nil {
		return r.stamp
	}
	return 0
}

// read raises v's floor to stamp and returns v's entry. A new reader
// first drops those whose threads ended; a list still full makes room by
// evicting the reader of the oldest floor, whose thread then knows every
// store up to it: that hides at least what the floor hid. A PTX thread
// keeps the read for its block's next bar.sync.
func (h *history) read(wm *weakMem, v *weakView, stamp uint64) *reader {
	if v.block != nil {
		v.keepRead(wm, h, stamp)
	}
	if r := h.readerOf(v); r != nil {
		r.stamp = max(r.stamp, stamp)
		return r
	}
	h.dropEnded(wm)
	if len(h.readers) == maxReaders {
		old := 0
		for i, r := range h.readers {
			if r.stamp < h.readers[old].stamp {
				old = i
			}
		}
		if ov := wm.view(h.readers[old].view); ov != nil {
			ov.known = max(ov.known, h.readers[old].stamp)
		}
		h.readers[old] = reader{view: v.id, stamp: stamp}
		return &h.readers[old]
	}
	h.readers = append(h.readers, reader{view: v.id, stamp: stamp})
	return &h.readers[len(h.readers)-1]
}

// dropEnded drops the readers whose threads ended (they read no more),
// keeping the others in their order, inline when they fit.
func (h *history) dropEnded(wm *weakMem) {
	keep := h.readers[:0]
	for _, r := range h.readers {
		if !wm.ended(r.view) {
			keep = append(keep, r)
		}
	}
	inline := cap(keep) > 0 && &keep[:1][0] == &h.inlReader[0]
	if len(keep) <= len(h.inlReader) && !inline {
		keep = h.inlReader[:copy(h.inlReader[:], keep)]
	}
	h.readers = keep
}

// wstore is one store of a history (80 bytes: a location's history is
// read at every strong access, and most locations keep two).
type wstore struct {
	stamp uint64 // 0 for the base
	val   uint64
	// rel[s] is the stamp released to readers that need scope s (0:
	// nothing).
	rel [signal.System + 1]uint64
	who place
	// line is the PTX line of the store (0: a Go twin's), for reports of
	// a store placed before another (LostStore).
	line int32
	base bool
	// rmw marks a read-modify-write's store: nothing may be placed
	// between it and the store it read.
	rmw bool
}

// newest is the last entry.
func (h *history) newest() *wstore { return &h.ents[len(h.ents)-1] }

// weakMemOf is an allocation's histories: pages of words, by page index
// (a slot for every page of the allocation: a map's lookup was a cache
// miss of its own at every strong access of a lane chosen at random),
// with the last page used at hand (accesses run through consecutive
// words).
type weakMemOf struct {
	pages    []*weakPage
	lastIdx  uint64
	lastPage *weakPage
	freed    bool // its allocation was freed (see physical.free)
}

// weakPage is the histories of the locations in each 8-byte word of one
// page: the first location of the word, which links the next (a word holds
// several when strong accesses are narrower: a vector's elements), in the
// order they were made.
type weakPage [pageSize / 8]*history

// wordAt returns the slot of the word at off in its page, nil when its
// page has none and !create.
func (m *weakMemOf) wordAt(off uint64, create bool) **history {
	idx := off / pageSize
	pg := m.lastPage
	if pg == nil || m.lastIdx != idx {
		pg = m.pages[idx]
		if pg == nil {
			if !create {
				return nil
			}
			pg = &weakPage{}
			m.pages[idx] = pg
		}
		m.lastIdx, m.lastPage = idx, pg
	}
	return &pg[off%pageSize/8]
}

// dropIf unlinks the locations of the word at slot that drop reports,
// keeping the others in their order.
func dropIf(slot **history, drop func(h *history) bool) {
	for link := slot; *link != nil; {
		h := *link
		if drop(h) {
			*link, h.next = h.next, nil
			continue
		}
		link = &h.next
	}
}

// locRef names a location: an allocation and an offset.
type locRef struct {
	phys *physical
	off  uint64
}

// weakView is a kernel thread's view (see above; its floors per location
// live in the histories); the zero value is a thread that has not
// started yet.
type weakView struct {
	started bool
	// id names the view in the histories it read (weakMem.views).
	id    uint64
	who   place
	known uint64
	// pend[s]: what strong reads observed from releases that need scope
	// s, for a later fence or acquire read (the model's acquire read
	// takes what reads of its own location observed; taking all of it
	// knows more, which only hides stores).
	pend [signal.System + 1]uint64
	// relFence[s]: what the latest fence of scope s or wider released;
	// relLoc: what the latest release store to a location released.
	relFence [signal.System + 1]uint64
	relLoc   map[locRef]*[signal.System + 1]uint64
	// blockBar is the stamp of the thread's last block-wide bar.sync
	// (syncBlock): it knows every strong store of its block's threads up
	// to it.
	blockBar uint64
	// reads is what the thread read since its last block-wide bar.sync
	// (PTX threads only): the next one passes its floors to the block.
	reads []readRef
	// block, shared by the threads of a PTX block, holds as its floors
	// what they read before their last bar.sync (read-read coherence
	// across the barrier).
	block *weakView
}

// readRef is a floor a thread raised: a history and the stamp it read.
type readRef struct {
	h     *history
	stamp uint64
}

// maxReads bounds the reads a thread keeps for its block's next bar.sync.
const maxReads = 64

// keepRead keeps, for the block's next bar.sync, that v read stamp in h.
// Past maxReads locations the floor goes to the block at once: the
// block's other threads then read no older store there before the
// barrier either, which only hides stores.
func (v *weakView) keepRead(wm *weakMem, h *history, stamp uint64) {
	for i := range v.reads {
		if r := &v.reads[i]; r.h == h {
			r.stamp = max(r.stamp, stamp)
			return
		}
	}
	if len(v.reads) == maxReads {
		h.read(wm, v.block, stamp)
		return
	}
	v.reads = append(v.reads, readRef{h, stamp})
}

// start makes v a thread of a launch that began at stamp begun, live
// among wm's views: it knows every strong store up to it, with the start
// itself a system-scope release fence (the kernel boundary).
func (v *weakView) start(wm *weakMem, begun uint64, who place) {
	*v = weakView{started: true, who: who, known: begun}
	wm.enlist(v)
	for s := range v.relFence {
		v.relFence[s] = begun
	}
}

// sync is bar.sync: the thread knows what every thread of its block knew,
// which the view over-approximates as everything stored so far.
func (v *weakView) sync(wm *weakMem) { v.known = max(v.known, wm.stamp) }

// blockSync is what a block-wide bar.sync of PTX threads teaches each of
// them: what any of them knew or observed, what any of them read (as
// floors of the block's shared view), and every strong store of the
// block's threads up to the barrier (stamp). That is less than
// "everything stored so far" (sync): a store of another block or device
// that no thread of the block knew stays unknown, so a later store of the
// block may still land before it (storeorder.go).
type blockSync struct {
	known uint64
	pend  [signal.System + 1]uint64
	stamp uint64
	block *weakView
}

// add joins what v knows, observed and read into b.
func (b *blockSync) add(wm *weakMem, v *weakView) {
	b.known = max(b.known, v.known)
	for s := range b.pend {
		b.pend[s] = max(b.pend[s], v.pend[s])
	}
	for _, r := range v.reads {
		r.h.read(wm, b.block, r.stamp)
	}
	clear(v.reads)
	v.reads = v.reads[:0]
}

// syncBlock is bar.sync of every thread of v's PTX block (b joins them):
// v knows what any of them knew, with what their strong reads observed
// acquired, as a fence of the barrier's scope would.
func (v *weakView) syncBlock(b *blockSync) {
	v.known = max(v.known, b.known)
	for s := range b.pend {
		v.known = max(v.known, b.pend[s])
	}
	v.blockBar = max(v.blockBar, b.stamp)
	v.block = b.block
}

// learn makes v know every strong store up to stamp (a barrier's phase).
func (v *weakView) learn(stamp uint64) { v.known = max(v.known, stamp) }

// fence is a fence of scope sc (fence.sc or membar when isSC).
func (v *weakView) fence(wm *weakMem, sc signal.Scope, isSC bool) {
	for s := signal.Block; s <= sc; s++ {
		v.known = max(v.known, v.pend[s])
	}
	if isSC {
		v.known = max(v.known, wm.scEvicted)
		merged := false
		for i := range wm.sc {
			f := &wm.sc[i]
			if need := needed(f.who, v.who); f.scope >= need && sc >= need {
				v.known = max(v.known, f.stamp)
			}
			if f.who == v.who && f.scope == sc {
				f.stamp, merged = max(f.stamp, wm.stamp), true
			}
		}
		if !merged {
			f := scFence{who: v.who, scope: sc, stamp: wm.stamp}
			if len(wm.sc) < maxSC {
				wm.sc = append(wm.sc, f)
			} else {
				old := 0
				for i := range wm.sc {
					if wm.sc[i].stamp < wm.sc[old].stamp {
						old = i
					}
				}
				wm.scEvicted = max(wm.scEvicted, wm.sc[old].stamp)
				wm.sc[old] = f
			}
		}
	}
	for s := signal.Block; s <= sc; s++ {
		v.relFence[s] = wm.stamp
	}
}

// weakRand returns the world's generator of weak decisions.
func (w *World) weakRand() *rand.Rand {
	if w.weak.rng == nil {
		seed := w.sched.Seed()
		w.weak.rng = rand.New(rand.NewPCG(seed^0x77ea4c0ffee, seed+0x5eed))
	}
	return w.weak.rng
}

// histOf returns the history of the size-byte location at sg, nil when
// it has none that is current: one whose newest entry is what the bytes
// hold (a stale one is dropped, and so are those of other locations that
// overlap it: mixed sizes).
func histOf(sg segment, size int) *history {
	p := sg.phys
	if p.weak == nil || len(sg.b) != size {
		return nil
	}
	link := p.weak.wordAt(sg.off, false)
	if link == nil {
		return nil
	}
	var found *history
	dropIf(link, func(h *history) bool {
		if h.off == sg.off && h.size == size {
			if h.nval != loadN(sg.b) {
				return true // stale: a write the history did not see
			}
			found = h
			return false
		}
		return h.overlaps(sg)
	})
	return found
}

// visible returns the index of the oldest entry of h that v may read.
func (v *weakView) visible(h *history) int {
	lo := max(v.known, h.floor(v))
	if v.block != nil {
		// The block's known only grows where read evicted its floor.
		lo = max(lo, h.floor(v.block), v.block.known)
	}
	for i := len(h.ents) - 1; i > 0; i-- {
		if e := &h.ents[i]; e.stamp <= lo || (!e.base && v.knowsOwn(e)) {
			return i
		}
	}
	return 0
}

// knowsOwn reports whether e, a store, is the thread's own or one of its
// block's threads made before the block's last bar.sync of v.
func (v *weakView) knowsOwn(e *wstore) bool {
	if e.who == v.who {
		return true
	}
	return e.stamp <= v.blockBar && e.who.dev == v.who.dev && e.who.launch == v.who.launch && e.who.block == v.who.block
}

// weakLoad performs a strong load of size bytes (at most 8) at sg by the
// thread of v with order o and scope sc, and returns the value it reads
// and, for the race detector, the store that wrote it (see
// [Access].From): 0 when it is the location's newest, else its stamp, or
// StoreUnknown for the history's base.
func (w *World) weakLoad(v *weakView, sg segment, size int, o signal.Order, sc signal.Scope) (val, from uint64) {
	h := histOf(sg, size)
	if h == nil {
		return loadN(sg.b[:size]), 0
	}
	w.weak.since++
	first := v.visible(h)
	pick := len(h.ents) - 1
	var older uint8 // the thread's reads of the location in a row that returned older stores
	if n := pick - first; n > 0 {
		if r := h.readerOf(v); r != nil {
			older = r.older
		}
		// An older store half the time at a thread's first read, and
		// half as often at each read after one that returned an older
		// store, so that a spin soon sees the newest.
		if r := w.weakRand().IntN(2 * n << older); r < n {
			pick = first + r
		}
	}
	e := &h.ents[pick]
	v.observe(e, o, sc)
	r := h.read(&w.weak, v, e.stamp)
	r.older = 0
	if pick < len(h.ents)-1 {
		r.older = min(older+1, maxOlder)
	}
	return e.val, h.from(e)
}

// from names store e of h for the race detector ([Access].From): 0 when
// it is the store that ran last (the detector's latest write), else its
// stamp, or StoreUnknown for the base.
func (h *history) from(e *wstore) uint64 {
	switch {
	case e.base:
		return StoreUnknown
	case e.stamp == h.last:
		return 0
	}
	return e.stamp
}

// observe applies what a strong read of e with order o and scope sc
// learns: the release e carries, if the two are morally strong, and, for
// an acquire, what the thread's strong reads observed.
func (v *weakView) observe(e *wstore, o signal.Order, sc signal.Scope) {
	if !e.base {
		if need := needed(e.who, v.who); sc >= need && e.rel[need] != 0 {
			v.pend[need] = max(v.pend[need], e.rel[need])
		}
	}
	if o.Acquires() {
		for s := signal.Block; s <= sc; s++ {
			v.known = max(v.known, v.pend[s])
		}
	}
}

// weakStore records a strong store of val (size bytes, at most 8) at sg by
// the thread of v with order o and scope sc at PTX line line (0 for a Go
// twin). carried is the release sequence a read-modify-write continues
// (nil for a store). It returns
// the store's stamp, its number for the race detector ([Access].Stamp),
// and whether it is the location's newest store, whose bytes the caller
// then writes; a store placed before newer ones (storeOrder.go) leaves
// the bytes as they are.
func (w *World) weakStore(v *weakView, sg segment, size int, val uint64, o signal.Order, sc signal.Scope, carried *[signal.System + 1]uint64, line int) (stamp uint64, newest bool) {
	p := sg.phys
	h := histOf(sg, size)
	if h == nil {
		// Room for the base and this store: most locations get no other
		// (a packet of the low-latency protocol is written once a launch).
		h = w.weak.hists.New()
		w.weak.walk++
		h.off, h.size = sg.off, size
		h.ents, h.readers = h.inl[:1], h.inlReader[:0]
		h.ents[0] = wstore{val: loadN(sg.b[:size]), base: true}
		if p.weak == nil {
			p.weak = &weakMemOf{pages: make([]*weakPage, (p.size()+pageSize-1)/pageSize)}
			// Freed allocations go here too, not only at a settle:
			// launches that overlap on every device leave none.
			w.weak.mems = append(dropFreed(w.weak.mems), p.weak)
		}
		link := p.weak.wordAt(sg.off, true)
		for *link != nil {
			link = &(*link).next
		}
		*link = h
	}
	w.weak.stamp++
	w.weak.since++
	e := wstore{stamp: w.weak.stamp, val: val, who: v.who, rmw: carried != nil, line: int32(line)}
	ref := locRef{p, sg.off}
	var rl *[signal.System + 1]uint64
	if o.Releases() {
		if v.relLoc == nil {
			v.relLoc = map[locRef]*[signal.System + 1]uint64{}
		}
		if rl = v.relLoc[ref]; rl == nil {
			rl = &[signal.System + 1]uint64{}
			v.relLoc[ref] = rl
		}
		for s := signal.Block; s <= sc; s++ {
			rl[s] = e.stamp
		}
	} else {
		rl = v.relLoc[ref]
	}
	for s := signal.Block; s <= sc; s++ {
		r := v.relFence[s]
		if rl != nil {
			r = max(r, rl[s])
		}
		if carried != nil {
			r = max(r, carried[s])
		}
		e.rel[s] = r
	}
	at := len(h.ents)
	if carried == nil {
		at = w.placeStore(v, h)
	}
	if len(h.ents) == WeakHistory {
		copy(h.ents, h.ents[1:])
		h.ents = h.ents[:WeakHistory-1]
		at--
	}
	h.ents = slices.Insert(h.ents, at, e)
	h.nval = h.newest().val
	h.last = e.stamp
	return e.stamp, at == len(h.ents)-1
}

// weakRMW is a read-modify-write's read: the newest store, observed as a
// read of order o. It returns what that store's release sequence carries
// on to the write (nothing without a history) and, for the race detector,
// the store it read ([Access].From: 0 unless a store that ran later was
// placed before it).
func (w *World) weakRMW(v *weakView, sg segment, size int, o signal.Order, sc signal.Scope) (carried *[signal.System + 1]uint64, from uint64) {
	h := histOf(sg, size)
	if h == nil {
		return &[signal.System + 1]uint64{}, 0
	}
	e := h.newest()
	v.observe(e, o, sc)
	rel := e.rel
	return &rel, h.from(e)
}

// eachWord calls fn with the slot of every word of sg that has histories
// (see weakPage), skipping pages without any: a plain access of a whole
// tensor costs a lookup per page, not per word.
func eachWord(sg segment, fn func(slot **history)) {
	p := sg.phys
	if p.weak == nil || len(sg.b) == 0 {
		return
	}
	end := sg.off + uint64(len(sg.b))
	for w := sg.off &^ 7; w < end; {
		pg := p.weak.pages[w/pageSize]
		next := min((w/pageSize+1)*pageSize, end)
		if pg == nil {
			w = (next + 7) &^ 7
			continue
		}
		for ; w < next; w += 8 {
			if slot := &pg[w%pageSize/8]; *slot != nil {
				fn(slot)
			}
		}
	}
}

// overlaps reports whether location h shares a byte with sg.
func (h *history) overlaps(sg segment) bool {
	return h.off < sg.off+uint64(len(sg.b)) && sg.off < h.off+uint64(h.size)
}

// plainStore ends the histories of the locations a plain store of sg
// overwrites.
func plainStore(sg segment) {
	eachWord(sg, func(slot **history) {
		dropIf(slot, func(h *history) bool { return h.overlaps(sg) })
	})
}

// plainLoad: a plain load reads the newest store, so the thread may not
// read an older one of those locations later (read-read coherence).
func (v *weakView) plainLoad(wm *weakMem, sg segment) {
	eachWord(sg, func(slot **history) {
		for h := *slot; h != nil; h = h.next {
			if h.overlaps(sg) {
				h.read(wm, v, h.newest().stamp)
			}
		}
	})
}

// loadN reads a little-endian value of len(b) bytes (at most 8).
func loadN(b []byte) uint64 {
	var w [8]byte
	copy(w[:], b)
	return binary.LittleEndian.Uint64(w[:])
}

// storeN writes the low len(b) bytes of v to b.
func storeN(b []byte, v uint64) {
	var w [8]byte
	binary.LittleEndian.PutUint64(w[:], v)
	copy(b, w[:])
}

// sub is the n bytes of sg from its byte off.
func (sg segment) sub(off, n int) segment {
	return segment{addr: sg.addr.Add(uint64(off)), phys: sg.phys, off: sg.off + uint64(off), b: sg.b[off : off+n]}
}

// view returns the weak view of the Go twin's block or lane, started at
// its first strong access as of its launch's start.
func (c *blockCtx) view() *weakView {
	if !c.wv.started {
		c.wv.start(&c.l.dev.w.weak, c.l.begun, place{dev: int32(c.l.dev.index), launch: c.l.id, block: int32(c.index), lane: int32(c.lane)})
	}
	return &c.wv
}

var _ ptx.Reorderer = (*ptxLane)(nil)

// Hoist is [ptx.Reorderer]: half the time, as a seeded decision, a store
// the model does not order after an earlier load or relaxed atom is
// performed first (load buffering). A load or compare-and-swap that
// repeats the thread's last poll (a spin) keeps its store after it, and
// the launch's error record is never involved. A load whose store went
// first is no poll: its round writes (ptxLane.polled).
func (l *ptxLane) Hoist(loadAddr uint64, loadSize int, storeAddr uint64, storeSize int) bool {
	if l.prevLive && l.prev.addr == loadAddr {
		return false
	}
	if _, in, _ := l.inRecord(loadAddr, loadSize); in {
		return false
	}
	if _, in, _ := l.inRecord(storeAddr, storeSize); in {
		return false
	}
	l.hoisted = l.l.dev.w.weakRand().IntN(2) == 0
	return l.hoisted
}

// settle is called when no launch has a block running on any device.
// Every kernel thread that reads a history from now on starts knowing
// every strong store made so far (its launch begins later), so of each
// location only the newest entry stays readable, and every thread whose
// view is among the readers has ended. Settle drops every entry but the
// newest, unless an older one ran after it (a lost store, which
// lostStores reports). A history whose newest is
// the only one readable reads and places stores as before, and reports
// the same stores to the race detector.
//
// It walks every history, so it runs only once the strong accesses since
// the last walk are a quarter of what it visits: a run of many short
// kernels pays for it in proportion to its accesses.
func (wm *weakMem) settle() {
	if 4*wm.since < wm.walk {
		return
	}
	wm.since, wm.walk = 0, 0
	wm.mems = dropFreed(wm.mems)
	for _, m := range wm.mems {
		for _, pg := range m.pages {
			if pg == nil {
				continue
			}
			wm.walk += len(pg) / 8 // a page's slots cost an eighth of a history each
			for _, first := range pg {
				for h := first; h != nil; h = h.next {
					wm.walk++
					h.settle()
				}
			}
		}
	}
}

// dropFreed returns mems without the freed allocations, whose histories
// no thread reads any more.
func dropFreed(mems []*weakMemOf) []*weakMemOf {
	keep := mems[:0]
	for _, m := range mems {
		if !m.freed {
			keep = append(keep, m)
		}
	}
	clear(mems[len(keep):])
	return keep
}

// settle drops what no thread can read any more from h (see
// weakMem.settle).
func (h *history) settle() {
	if len(h.ents) == 1 {
		return
	}
	top := *h.newest()
	for _, e := range h.ents[:len(h.ents)-1] {
		if !e.base && e.stamp > top.stamp {
			return
		}
	}
	h.inl[0] = top
	h.inl[1] = wstore{}
	h.ents = h.inl[:1]
}
