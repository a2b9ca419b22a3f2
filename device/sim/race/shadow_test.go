package race

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/internal/longtest"
	"github.com/symmem/symmem/signal"
)

// TestShadowMatchesSpans feeds random event streams to two detectors, one
// with the paged shadow and one with the reference spans of spans_test.go,
// and checks after every access that both found the same races and hold,
// granule by granule, the same accesses and releases in the same spans,
// and that the paged shadow's reference counts match its holders.
func TestShadowMatchesSpans(t *testing.T) { matchSpans(t, 0, 16) }

// TestShadowMatchesSpansLong is TestShadowMatchesSpans over many more
// streams.
func TestShadowMatchesSpansLong(t *testing.T) {
	longtest.Require(t, "the paged shadow against the spans over 1,000 streams")
	matchSpans(t, 16, 1000)
}

// TestShadowMatchesSpansWide is TestShadowMatchesSpans with blocks of up
// to 96 lanes, whose reads of one word make lists long enough for states
// to keep a read cache (see [readCache]), which the reference has not.
func TestShadowMatchesSpansWide(t *testing.T) { matchWide(t, 0, 4) }

// TestShadowMatchesSpansWideLong is TestShadowMatchesSpansWide over 60
// more streams (about 5 s a stream under -race on two cores, so that the
// package's long sweep stays within its CI timeout).
func TestShadowMatchesSpansWideLong(t *testing.T) {
	longtest.Require(t, "the paged shadow against the spans over 60 streams of wide blocks")
	matchWide(t, 4, 64)
}

// matchWide runs the streams of seeds [from, to) with wide blocks.
func matchWide(t *testing.T, from, to uint64) {
	cached := 0
	matchSpansOf(t, from, to, func(g *gen) { g.lanes, g.events = 96, 400 }, func(d *Detector) {
		d.shadows(func(_ uint64, sh *shadow) {
			sh.each(0, uint64(len(sh.pages))<<pageShift, func(s *state) {
				if s != nil && s.rc != nil {
					cached++
				}
			})
		})
	})
	if cached == 0 {
		t.Fatal("no state kept a read cache: the streams do not exercise it")
	}
}

// matchSpans runs the streams of seeds [from, to).
func matchSpans(t *testing.T, from, to uint64) { matchSpansOf(t, from, to, nil, nil) }

// matchSpansOf runs the streams of seeds [from, to), of generators that
// shape sets up (nil: the default ones), handing each paged detector to
// done (when not nil) at the end of its stream.
func matchSpansOf(t *testing.T, from, to uint64, shape func(*gen), done func(*Detector)) {
	for seed := from; seed < to; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			g := newGen(seed)
			if shape != nil {
				shape(g)
			}
			paged, ref := newBare(t), newBare(t)
			spans := map[uint64]*spanShadow{}
			n := 0
			for _, a := range g.stream() {
				paged.observe(&a)
				if a.Kind == sim.Load || a.Kind == sim.Store || a.Kind == sim.Atomic {
					ref.spanAccess(spans, a)
					n++
				} else {
					ref.observe(&a)
				}
				if paged.total != ref.total {
					t.Fatalf("after access %d (%+v): %d races, reference %d", n, a, paged.total, ref.total)
				}
				if a.Size > 0 && (a.Kind == sim.Load || a.Kind == sim.Store || a.Kind == sim.Atomic) {
					// The granules of the access and a page either side.
					lo := max(a.PhysOffset/granule, pageGranules) - pageGranules
					hi := (a.PhysOffset+a.Size+granule-1)/granule + pageGranules
					compareShadow(t, a, paged.shadowOf(a.Phys), spans[a.Phys], lo, hi)
				}
			}
			if !reflect.DeepEqual(paged.races, ref.races) {
				t.Fatalf("races differ:\n%v\nreference:\n%v", paged.Err(), ref.Err())
			}
			if ref.total == 0 {
				t.Fatal("the stream made no race: it checks too little")
			}
			paged.shadows(func(phys uint64, sh *shadow) {
				compareShadow(t, sim.Access{Phys: phys}, sh, spans[phys], 0, uint64(len(sh.pages))<<pageShift)
				checkRefs(t, sh)
			})
			if done != nil {
				done(paged)
			}
		})
	}
}

func newBare(t *testing.T) *Detector {
	w, err := sim.NewWorld(actor.NewScheduler(actor.Config{Seed: 1}), sim.Config{World: 1})
	if err != nil {
		t.Fatal(err)
	}
	return New(w)
}

// compareShadow checks that every granule in [lo, hi) holds the same
// accesses (by epoch: both detectors see the same events) and releases
// in both shadows, and that a span ends after the same granules.
func compareShadow(t *testing.T, a sim.Access, sh *shadow, ref *spanShadow, lo, hi uint64) {
	t.Helper()
	// checkOwnRead looks at the states of the access's granules (of every
	// granule without one), each once in a run of neighbours sharing it.
	var checked *state
	alo, ahi := a.PhysOffset/granule, (a.PhysOffset+a.Size+granule-1)/granule
	for g := lo; g < min(hi, uint64(len(sh.pages))<<pageShift); g++ {
		w, start := ref.at(g)
		got := sh.at(g)
		if w == nil {
			if got != nil {
				t.Fatalf("after %v: granule %d of phys %d holds %s, reference nothing", a.Kind, g, a.Phys, epochs(got.accs))
			}
			continue
		}
		if got == nil || !sameEpochs(got.accs, w.accs) || !reflect.DeepEqual(got.releases(), w.rel) {
			t.Fatalf("after %v at +%#x: granule %d of phys %d holds %s, reference %s", a.Kind, a.PhysOffset, g, a.Phys, describeState(got), describeRef(w))
		}
		if got != checked && (a.Size == 0 || alo <= g && g < ahi) {
			checkOwnRead(t, got)
			checked = got
		}
		if g > 0 && start == sameSpan(sh.at(g-1), got) {
			t.Fatalf("after %v at +%#x: granule %d starts a span: %v, reference %v", a.Kind, a.PhysOffset, g, !start, start)
		}
	}
}

// checkOwnRead checks that s counts its writes and that ownRead finds, for
// each thread with an access in s and every quiet event around it, what
// a scan from the last access back does.
func checkOwnRead(t *testing.T, s *state) {
	t.Helper()
	writes := int32(0)
	for _, y := range s.accs {
		if y.write() {
			writes++
		}
	}
	if s.writes != writes {
		t.Fatalf("state %s counts %d writes, holds %d", describeState(s), s.writes, writes)
	}
	for _, y := range s.accs {
		for _, quiet := range []uint32{y.clock, y.clock + 1} {
			th := &thread{slot: y.slot(), quiet: quiet}
			if got, want := s.ownRead(th), scanOwnRead(s, th); got != want {
				t.Fatalf("state %s: ownRead of slot %d quiet %d is %d, the scan finds %d", describeState(s), th.slot, quiet, got, want)
			}
		}
	}
}

// scanOwnRead is what ownRead returns, found by looking at every access
// from the last back.
func scanOwnRead(s *state, t *thread) int {
	for i := len(s.accs) - 1; i >= 0; i-- {
		y := s.accs[i]
		if y.slot() == t.slot {
			if y.settledReadOf(t) {
				return i
			}
			return -1
		}
		if y.write() {
			return -1
		}
	}
	return -1
}

// at is the state of granule g in sh (nil: none) and whether a span
// starts at g.
func (sh *spanShadow) at(g uint64) (*spanState, bool) {
	k := sort.Search(len(sh.spans), func(k int) bool { return sh.spans[k].hi > g })
	if k == len(sh.spans) || sh.spans[k].lo > g {
		return nil, true
	}
	return &sh.spans[k].st, sh.spans[k].lo == g
}

func sameEpochs(a []acc, b []*rec) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != accOf(a[i].r, a[i].tag&accSettled != 0) || a[i].r.ep != b[i].ep {
			return false
		}
	}
	return true
}

func epochs(accs []acc) string {
	s := ""
	for _, a := range accs {
		s += fmt.Sprintf(" %d:%d", a.r.ep.slot, a.r.ep.clock)
	}
	return s
}

// TestShadowManyMoves checks an access that replaces more states in part
// than maxMovedList, each held in two runs of its range: every run of a
// state takes the one replacement its first run got, as the reference
// spans have it.
func TestShadowManyMoves(t *testing.T) {
	const k = 4 * maxMovedList
	paged, ref := newBare(t), newBare(t)
	spans := map[uint64]*spanShadow{}
	store := func(off, size uint64) sim.Access {
		a := sim.Access{Kind: sim.Store, Task: 0, Parent: -1, Block: -1, Lane: -1, Phys: 1, PhysOffset: off, Size: size,
			Addr: device.Ptr(1<<32 + off), Write: true, Scope: signal.System}
		paged.observe(&a)
		ref.spanAccess(spans, a)
		return a
	}
	for i := range uint64(k) {
		store(16*i, 16) // granules 4i..4i+3 hold a state of their own
	}
	for i := range uint64(k) {
		store(16*i+4, 4) // which keeps granules 4i and 4i+2..4i+3
	}
	a := store(0, 16*k)
	sh := paged.shadowOf(1)
	compareShadow(t, a, sh, spans[1], 0, 4*k)
	checkRefs(t, sh)
	for i := range uint64(k) {
		if sh.at(4*i) != sh.at(4*i+2) {
			t.Fatalf("granules %d and %d held one state before the access and two after it", 4*i, 4*i+2)
		}
		if sh.at(4*i) == sh.at(4*i+1) || i > 0 && sh.at(4*i) == sh.at(4*i-1) {
			t.Fatalf("granule %d shares a state with a neighbour that held another before the access", 4*i)
		}
	}
	if len(paged.moved) != 0 || len(paged.movedIdx) != 0 {
		t.Fatalf("%d moves (%d indexed) left after the access", len(paged.moved), len(paged.movedIdx))
	}
}

// checkRefs checks that every state's reference count is its number of
// holders.
func checkRefs(t *testing.T, sh *shadow) {
	t.Helper()
	holders := map[*state]int32{}
	for _, p := range sh.pages {
		if p.cells == nil {
			if p.all != nil {
				holders[p.all]++
			}
			continue
		}
		for _, s := range p.cells {
			if s != nil {
				holders[s]++
			}
		}
	}
	for s, n := range holders {
		if s.refs != n {
			t.Fatalf("a state with %d holders counts %d", n, s.refs)
		}
	}
}

// gen draws event streams: rounds in which every device runs a kernel
// of a few blocks (some with lanes) whose threads make random accesses,
// interleaved, to a few small allocations and their shared memory, with
// host accesses of whole allocations between rounds.
type gen struct {
	rng  *rand.Rand
	out  []sim.Access
	task int
	seq  [devs]uint64
	lnch uint64
	last map[int]sim.Access // each thread's latest access
	// lanes bounds the lanes of a block, events the thread events of a
	// round (plus up to as many again).
	lanes, events int
}

const (
	devs      = 3
	smallPhys = 3     // phys 1..3: 1 KiB each
	bigPhys   = 4     // 40 KiB, to cross many pages
	bigBytes  = 40960 // not a whole number of pages
)

func newGen(seed uint64) *gen {
	return &gen{rng: rand.New(rand.NewPCG(seed, 7)), task: 100, last: map[int]sim.Access{}, lanes: 3, events: 60}
}

func (g *gen) emit(a sim.Access) { g.out = append(g.out, a) }

func (g *gen) stream() []sim.Access {
	for range 6 {
		g.round()
	}
	return g.out
}

type live struct {
	a    sim.Access // template: the thread's coordinates
	task int
}

func (g *gen) round() {
	for dev := range devs {
		if g.rng.IntN(2) == 0 {
			g.host(dev, g.rng.IntN(2) == 0)
		}
	}
	var threads []live
	type launch struct {
		op     sim.Access
		worker int
		blocks []live
		lanes  [][]live
	}
	var ls []launch
	for dev := range devs {
		g.seq[dev]++
		g.lnch++
		op := sim.Access{Parent: -1, Device: dev, Stream: device.Stream(1), Seq: g.seq[dev], Op: "kernel", Kernel: "k", Block: -1, Lane: -1}
		op.Kind, op.Task = sim.Enqueue, dev
		g.emit(op)
		l := launch{op: op, worker: 10 + dev}
		op.Kind, op.Task = sim.OpStart, l.worker
		g.emit(op)
		op.Launch = g.lnch
		for blk := range 1 + g.rng.IntN(2) {
			g.task++
			b := op
			b.Kind, b.Task, b.Block, b.Parent = sim.BlockStart, g.task, blk, l.worker
			g.emit(b)
			b.Parent = -1
			bl := live{a: b, task: g.task}
			l.blocks = append(l.blocks, bl)
			var lanes []live
			if g.rng.IntN(3) > 0 {
				for ln := range 1 + g.rng.IntN(g.lanes) {
					g.task++
					la := b
					la.Kind, la.Task, la.Lane, la.Parent = sim.LaneStart, g.task, ln, bl.task
					g.emit(la)
					la.Parent = -1
					lanes = append(lanes, live{a: la, task: g.task})
				}
				threads = append(threads, lanes...)
			} else {
				threads = append(threads, bl)
			}
			l.lanes = append(l.lanes, lanes)
		}
		ls = append(ls, l)
	}
	for range g.events + g.rng.IntN(g.events) {
		g.threadEvent(threads[g.rng.IntN(len(threads))])
	}
	for _, l := range ls {
		for i, b := range l.blocks {
			for _, ln := range l.lanes[i] {
				e := ln.a
				e.Kind, e.Task = sim.LaneEnd, ln.task
				g.emit(e)
			}
			e := b.a
			if len(l.lanes[i]) > 0 {
				e.Kind, e.Task = sim.BlockSync, b.task
				g.emit(e)
			}
			e.Kind = sim.BlockEnd
			g.emit(e)
		}
		op := l.op
		op.Kind, op.Task = sim.OpEnd, l.worker
		g.emit(op)
		if g.rng.IntN(3) > 0 {
			op.Kind, op.Task = sim.Complete, op.Device
			g.emit(op)
		}
	}
}

// host is a host task's access of the big allocation, whole or a random
// range of it, or of a small one.
func (g *gen) host(dev int, write bool) {
	kind := sim.Load
	if write {
		kind = sim.Store
	}
	a := sim.Access{Kind: kind, Task: dev, Parent: -1, Device: dev, Block: -1, Lane: -1, Write: write, Scope: signal.System}
	switch g.rng.IntN(3) {
	case 0:
		a.Phys, a.Size = bigPhys, bigBytes
	case 1:
		a.Phys = bigPhys
		a.PhysOffset = g.rng.Uint64N(bigBytes)
		a.Size = 1 + g.rng.Uint64N(bigBytes-a.PhysOffset)
	default:
		a.Phys, a.Size = 1+g.rng.Uint64N(smallPhys), 1024
	}
	a.Owner = int(a.Phys % devs)
	a.Addr = device.Ptr(a.Phys<<32 + a.PhysOffset)
	g.emit(a)
}

// threadEvent is one random access or fence of a kernel thread, at
// times a repeat of the thread's latest access (a loop reading a table
// again, or polling a word), at times a plain load of the word that every
// thread reloads (a table of pointers each lane reads in its loop).
func (g *gen) threadEvent(th live) {
	if a, ok := g.last[th.task]; ok && g.rng.IntN(4) == 0 {
		g.emit(a)
		return
	}
	a := th.a
	a.Task, a.Parent = th.task, -1
	if g.rng.IntN(6) == 0 {
		a.Kind, a.Phys, a.PhysOffset, a.Size, a.Line = sim.Load, 1, 0, 8, 5
		a.Owner = int(a.Phys % devs)
		a.Addr = device.Ptr(a.Phys<<32 + a.PhysOffset)
		g.emit(a)
		g.last[th.task] = a
		return
	}
	a.Line = 1 + g.rng.IntN(4)
	r := g.rng.IntN(20)
	switch {
	case r == 0:
		a.Kind = sim.Fence
		a.Order, a.Scope, a.SC = signal.AcqRel, signal.Scope(g.rng.IntN(3)), g.rng.IntN(2) == 0
		g.emit(a)
		return
	case r < 3:
		a.Phys = bigPhys
		a.PhysOffset = g.rng.Uint64N(bigBytes - 2048)
		a.Size = 1 + g.rng.Uint64N(2048)
	case r < 5:
		a.Shared = true
		a.Phys = sim.SharedPhys(a.Launch, a.Block)
		a.PhysOffset = g.rng.Uint64N(64)
		a.Size = uint64(1) << g.rng.IntN(4)
	default:
		a.Phys = 1 + g.rng.Uint64N(smallPhys)
		a.PhysOffset = g.rng.Uint64N(96)
		a.Size = []uint64{1, 2, 4, 4, 8, 16, 32, 600}[g.rng.IntN(8)]
	}
	a.Owner = int(a.Phys % devs)
	a.Write = g.rng.IntN(2) == 0
	a.Kind = sim.Load
	if a.Write {
		a.Kind = sim.Store
	}
	if !a.Shared && g.rng.IntN(2) == 0 {
		a.Kind = sim.Atomic
		a.Order, a.Scope = signal.Order(g.rng.IntN(4)), signal.Scope(g.rng.IntN(3))
		a.PhysOffset &^= 3
		switch g.rng.IntN(4) {
		case 0:
			a.PhysOffset &^= 7
			a.Size, a.Unit = 8*(1+g.rng.Uint64N(8)), 8
		case 1:
			a.Size = 8
		default:
			a.Size = 4
		}
		if g.rng.IntN(2) == 0 {
			a.RMW = true
			a.Old, a.New = uint32(g.rng.IntN(2)), uint32(g.rng.IntN(2))
		}
	}
	a.Addr = device.Ptr(a.Phys<<32 + a.PhysOffset)
	g.emit(a)
	g.last[th.task] = a
}

func describeRef(s *spanState) string {
	eps := ""
	for _, r := range s.accs {
		eps += fmt.Sprintf(" %d:%d", r.ep.slot, r.ep.clock)
	}
	return fmt.Sprintf("accesses%s, %d releases", eps, len(s.rel))
}

func describeState(s *state) string {
	if s == nil {
		return "nothing"
	}
	return fmt.Sprintf("accesses%s, %d releases", epochs(s.accs), len(s.releases()))
}

// TestShadowUpdate drives the page table alone with random updates
// against a flat array of per-granule states: every granule holds what the
// flat array says, runs are cut where the state changes, whole says true
// exactly when the run holds every reference, and reference counts match
// the holders, through splits of uniform pages and whole pages rejoined.
func TestShadowUpdate(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const size = 5*pageGranules + 17
	var sh shadow
	sh.grow(size)
	flat := make([]*state, size)
	var sl slabs
	shared := sl.state() // handed to many runs, so whole pages rejoin
	rejoined := 0
	for step := range 3000 {
		lo := rng.Uint64N(size)
		hi := lo + 1 + rng.Uint64N(size-lo)
		if rng.IntN(2) == 0 {
			hi = min(size, lo+1+rng.Uint64N(8))
		}
		pagesBefore := append([]page(nil), sh.pages...)
		holders := map[*state]int32{}
		for g := range uint64(size) {
			if g < lo || g >= hi {
				holders[flat[g]]++ // granules outside: at least as many holders as cells
			}
		}
		sh.update(lo, hi, func(s *state, whole bool) *state {
			if whole && s != nil && holders[s] > 0 {
				t.Fatalf("step %d: whole for a state held outside [%d, %d)", step, lo, hi)
			}
			switch r := rng.IntN(4); {
			case r == 0 && whole:
				return s
			case r == 1 || r == 2:
				return shared
			}
			return sl.state()
		})
		for g := lo; g < hi; g++ {
			flat[g] = sh.at(g)
			if flat[g] == nil {
				t.Fatalf("step %d: granule %d updated to nothing", step, g)
			}
		}
		for g := range uint64(size) {
			if sh.at(g) != flat[g] {
				t.Fatalf("step %d: granule %d changed outside [%d, %d)", step, g, lo, hi)
			}
		}
		checkRefs(t, &sh)
		for k, p := range sh.pages {
			if p.cells == nil && p.all == shared && pagesBefore[k].cells != nil {
				rejoined++
			}
		}
	}
	if rejoined == 0 {
		t.Fatal("no page was ever held whole by one state: the rejoin is untested")
	}
}

// shadows calls fn with every shadow memory d keeps and its allocation.
func (d *Detector) shadows(fn func(phys uint64, sh *shadow)) {
	for phys, sh := range d.mem {
		if sh != nil {
			fn(uint64(phys), sh)
		}
	}
	for phys, sh := range d.far {
		fn(phys, sh)
	}
}
