package race

import (
	"slices"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/internal/slab"
	"github.com/symmem/symmem/signal"
)

// granule is the unit of shadow memory in bytes: two accesses conflict when
// they touch a common 4-byte word, the device's atomic granularity.
const granule = 4

// commRing is how many signal communications are kept to explain races.
const commRing = 1024

// maxRaces bounds the distinct races (pairs of code sites) a detector
// keeps, each explained; past it, new pairs are only counted
// ([Error].Cut). A program has few code sites, so a run reaches it only
// when nearly every access races.
const maxRaces = 4096

// Detector is a happens-before race detector fed by a [sim.World]'s
// observer. It is not safe for concurrent use; in a simulation only one task
// runs at a time, which is all it needs.
type Detector struct {
	sched   *actor.Scheduler
	threads map[int]*thread // live threads by scheduler task
	// lazy holds the lanes that started and did nothing yet, by
	// scheduler task: a lane's thread starts with its first event.
	// Most are in lazyTab, by task mod lazySlots (a warp's lanes start
	// and end in one step), the others in lazy.
	lazy    map[int]lazyLane
	lazyTab *[lazySlots]lazyEntry
	// lastTask and lastThread cache the latest lookup in threads.
	lastTask   int
	lastThread *thread
	// recent caches threads by task (task mod recentThreads).
	recent [recentThreads]recentThread
	slots  []slotState       // vector clock components
	slotOf map[threadKey]int // the slots of streams and blocks
	// laneSlots holds the slots of the lanes of each block (key with
	// lane 0), by lane, and lastLanes the last block's (see laneSlot).
	laneSlots map[threadKey]*[]int32
	lastLanes struct {
		key   threadKey
		slots *[]int32
	}
	ops     map[opKey]vclock // clock of each enqueued op not yet started
	streams map[streamKey]*streamClock
	keys    map[string]vclock // host synchronisation objects
	// mem is the shadow memory of the allocations numbered below
	// denseIDs, by number (the device's allocations, numbered in
	// order); far holds the others (shared memory and barriers).
	mem []*shadow
	far map[uint64]*shadow
	// fresh is the state that granules no access touched before take in
	// access freshGen.
	fresh    *state
	freshGen *rec
	// lastHist is the history an atomic write last gave its span: the
	// next one shares it when it makes the same (a thread's packets).
	lastHist *history
	// moved maps each state that the current access replaced in some of
	// its holders only to its replacement, which its other holders in the
	// access's range take too; empty between accesses. Most accesses
	// move none or one; past maxMovedList, movedIdx indexes them too.
	moved    []move
	movedIdx map[*state]*state
	// slab is where the detector's records and states are carved from.
	slab slabs
	// spare holds lanes' threads that ended, for new threads to reuse: a
	// kernel starts and ends a thread per lane, and a thread is the
	// detector's largest record (nothing refers to a lane's after its
	// end: see join).
	spare []*thread
	comms []*comm   // ring of recent signal communications
	sc    []release // what sc fences released, per scope and place
	races []Race
	sites map[siteKey]int // index in races, -1 for a pair cut
	// lastSites are the pairs of sites last found in sites, the latest
	// at lastSite: a racing access of a whole grid repeats a few pairs
	// (a write over the loads of a few instructions) lane after lane.
	lastSites [recentSites]struct {
		k   siteKey
		i   int
		set bool
	}
	lastSite int
	// xSite is the site of the plain accesses of origin org, kind and
	// line: the last access reported as racing (see siteOfX).
	xSite struct {
		org  *origin
		kind kind8
		line int32
		site site
	}
	total int
	cut   int      // distinct pairs of sites past maxRaces
	pairs reported // first accesses already reported for the current access
	// warpThreads, warpLane, warpStates, warpAccs and warpRecs are
	// scratch space of the checks of warp accesses (warp.go).
	warpThreads []*thread
	warpLane    sim.Access
	warpStates  []*state
	warpAccs    []acc
	warpRecs    []*warpRec
	coalesced   int // warp accesses kept as one record
	// bcastSlots, bcastDrop, bcastWrites and bcastRecs are scratch space
	// of the checks of broadcast loads (warp.go).
	bcastSlots  []laneSlot
	bcastDrop   []bool
	bcastWrites []bcastWrite
	bcastRecs   []acc
	broadcasts  int // broadcast loads checked at once
	// ncOps is the kernel launches (stream ops) whose threads loaded by
	// ld.global.nc, with their end once they completed (ncafter.go).
	ncOps map[opKey]*ncOp
}

type threadKind int

const (
	hostThread threadKind = iota
	streamThread
	kernelThread
)

// threadKey names a logical thread whose successive tasks may share one
// vector clock component: a stream's worker (Block and Lane -2), or block
// Block (Lane -1) or lane Lane of the kernels of one stream.
type threadKey struct {
	dev         int
	stream      device.Stream
	block, lane int
}

type slotState struct {
	owner *thread // the thread holding the component, nil when free
	last  uint32  // the component's value when its last owner ended
}

// thread is the happens-before state of one scheduler task.
type thread struct {
	task int
	slot int
	kind threadKind
	// vc is the thread's clock. A forked block or lane starts sharing its
	// parent's snapshot (shared): its own component is then own, not
	// vc's, and vc is copied the first time the thread needs a clock of
	// its own (it learns something, or publishes its clock). Most lanes
	// never do: forking and joining them costs no copy of a clock.
	vc     vclock
	shared bool
	own    uint32
	fence  vclock  // kernel threads: the clock released at the kernel's start
	parent *thread // blocks: the stream worker; lanes: the block
	// relFence[s] is the clock the thread's latest fence of scope s or
	// wider released (at first the kernel's start): a later strong write
	// of scope s or wider publishes it (a release pattern).
	relFence [signal.System + 1]vclock
	// pend is what the thread's strong reads observed from releases, for
	// its later fences to acquire; nil until one observed any.
	pend *pending
	// ended is, in a block or a stream worker, what the strong reads of
	// its ended children (lanes, blocks) observed from releases: the
	// kernel's end acquires it (see joinParent); nil when none.
	ended *pending
	snap  vclock       // the clock the current batch of children forks from
	label *actor.Label // the task's label, once an access needed it
	// wsnap is the clock shared by the records of the thread's relaxed
	// atomic writes since it last learned anything (nil: none taken yet).
	wsnap vclock
	// quiet is the first event of the thread since which its clock
	// changed in its own component only: an access it made since was
	// checked against what it knows now.
	quiet uint32
	org   *origin // who made the thread's last access
	// fresh is the release list the thread's last relaxed strong write
	// started on a word that had none (see [Detector.release]).
	fresh freshRelease
}

// freshRelease is a release list made from none by a relaxed strong
// write, with what made it: the writer's fences and the write's place
// and scope. A write that finds them the same makes the same list, and
// takes this one (lists are copied on write): the words of a buffer of
// packets that one thread writes share a list instead of holding one
// each.
type freshRelease struct {
	fences [signal.System + 1]vclock
	dev    int
	launch uint64
	block  int
	scope  signal.Scope
	list   []release
}

// of returns the list when a, made after the fences fences, would make it.
func (f *freshRelease) of(a *sim.Access, fences *[signal.System + 1]vclock) ([]release, bool) {
	if f.list == nil || f.scope != a.Scope || f.dev != a.Device || f.launch != a.Launch || f.block != a.Block {
		return nil, false
	}
	for s := range fences {
		if !same(f.fences[s], fences[s]) {
			return nil, false
		}
	}
	return f.list, true
}

// pending is what a thread's strong reads observed from releases.
//
// The clocks observed are kept by reference until something needs their
// join (a fence, the kernel's end): released clocks never change, and a
// kernel's many waiting lanes each observe the same few clocks, which
// joining at every lane's first poll would copy and compare component by
// component (a clock of a large launch has a component per lane).
type pending struct {
	// vc[s] joins clocks observed from releases that need scope s, and
	// refs[s] holds the others, not yet joined: a later fence of scope
	// s or wider acquires both (an acquire pattern).
	vc   [signal.System + 1]vclock
	refs [signal.System + 1][]vclock
	// last[s] is the clock last observed at s, and seen[s] (ids) and
	// seenIdx[s] (past maxPendingIDs) every clock observed at s:
	// observing one again, as a thread polling a word whose release
	// sequence holds many clocks does at every poll, changes nothing.
	last    [signal.System + 1]vclock
	seen    [signal.System + 1][]clockID
	seenIdx [signal.System + 1]map[clockID]bool
}

// maxPendingRefs bounds the clocks a pending keeps unjoined at a scope;
// past it they are joined.
const maxPendingRefs = 8

// maxPendingIDs is how many observed clocks' ids a pending searches in a
// list before it indexes them.
const maxPendingIDs = 16

// clockID identifies a released clock (they never change): the first
// element of its slice and its length.
type clockID struct {
	first **chunk
	n     int
}

// observe notes c, a released clock, at scope s unless it was observed
// before.
func (p *pending) observe(s signal.Scope, c vclock) {
	if len(c) == 0 || same(c, p.last[s]) {
		return
	}
	p.last[s] = c
	id := clockID{&c[0], len(c)}
	switch {
	case p.seenIdx[s] != nil:
		if p.seenIdx[s][id] {
			return
		}
		p.seenIdx[s][id] = true
	case slices.Contains(p.seen[s], id):
		return
	case len(p.seen[s]) == maxPendingIDs:
		p.seenIdx[s] = make(map[clockID]bool, 2*maxPendingIDs)
		for _, i := range p.seen[s] {
			p.seenIdx[s][i] = true
		}
		p.seenIdx[s][id] = true
		p.seen[s] = nil
	default:
		p.seen[s] = append(p.seen[s], id)
	}
	p.refs[s] = append(p.refs[s], c)
	if len(p.refs[s]) > maxPendingRefs {
		p.flush(s)
	}
}

// flush joins the clocks observed at scope s into vc[s].
func (p *pending) flush(s signal.Scope) {
	for _, c := range p.refs[s] {
		p.vc[s].join(c)
	}
	clear(p.refs[s])
	p.refs[s] = p.refs[s][:0]
}

// merge returns p with what o observed added (p is nil when both are:
// nothing observed). p's clocks are its own: o's joined ones are
// copied, the released clocks it observed shared.
func (p *pending) merge(o *pending) *pending {
	if o == nil {
		return p
	}
	if p == nil {
		p = &pending{}
	}
	for s := range o.vc {
		if o.vc[s] != nil {
			p.vc[s].join(o.vc[s])
		}
		for _, c := range o.refs[s] {
			p.observe(signal.Scope(s), c)
		}
	}
	return p
}

// at is what the strong reads observed from releases that need scope s;
// none for nil.
func (p *pending) at(s signal.Scope) vclock {
	if p == nil {
		return nil
	}
	p.flush(s)
	return p.vc[s]
}

type opKey struct {
	dev    int
	stream device.Stream
	seq    uint64
}

type streamKey struct {
	dev    int
	stream device.Stream
}

// streamClock is what completed ops of one stream publish: the clock of the
// last op's end (the next op starts after it) and of each op a host has not
// yet learned is complete.
type streamClock struct {
	last vclock
	done []seqClock
}

type seqClock struct {
	seq uint64
	vc  vclock
}

// rec is one memory access as the shadow memory keeps it: the fields of
// its [sim.Access] (see [rec.access]), who made it shared with the other
// accesses of its thread's op and where it went with the other accesses
// of its allocation through the same mapping, so that a record takes 64
// bytes. Records are told apart by address: each access has its own,
// except that a repeated read takes over the record of the read it
// repeats once no state holds that one as it was (see [Detector.reread]).
type rec struct {
	ep      epoch
	*strong // atomics only, but for reads with no Stamp, Old or New
	org     *origin
	at      *place
	size    uint64
	off     uint64 // sim.Access.PhysOffset
	unit    uint32 // sim.Access.Unit
	line    int32
	kind    kind8
	order   uint8 // signal.Order
	scope   uint8 // signal.Scope
	write   bool
	shared  bool
	rmw     bool
	sc      bool
	nc      bool // a load by ld.global.nc
}

// kind8 is a [sim.AccessKind] in a byte.
type kind8 uint8

// atomic reports whether the access is an atomic (strong) one.
func (k kind8) atomic() bool { return sim.AccessKind(k) == sim.Atomic }

// origin is who made an access: what the accesses of one thread during
// one stream op share.
type origin struct {
	task, parent int
	device       int
	stream       device.Stream
	seq          uint64
	op, kernel   string
	launch       uint64
	block, lane  int
	label        *actor.Label // the label of the task, shared by its thread; nil outside tasks
}

func originOf(a *sim.Access, label *actor.Label) origin {
	return origin{task: a.Task, parent: a.Parent, device: a.Device, stream: a.Stream, seq: a.Seq, op: a.Op,
		kernel: a.Kernel, launch: a.Launch, block: a.Block, lane: a.Lane, label: label}
}

// made reports whether o is who made a, in a task labelled label: a
// field by field comparison, cheaper than building a's origin to compare
// it with o (the fields that differ between a thread's ops come first).
func (o *origin) made(a *sim.Access, label *actor.Label) bool {
	return o.seq == a.Seq && o.launch == a.Launch && o.task == a.Task && o.lane == a.Lane && o.block == a.Block &&
		o.parent == a.Parent && o.device == a.Device && o.stream == a.Stream && o.label == label &&
		o.op == a.Op && o.kernel == a.Kernel
}

// place is where accesses of one physical allocation went: the
// allocation, its owner, and the virtual address of its offset 0 in the
// mapping they used.
type place struct {
	phys  uint64
	owner int
	base  device.Ptr
}

// places are the places the accesses of one allocation reached: few,
// one per mapping.
type places []*place

// of is a's place, added when new.
func (ps *places) of(a *sim.Access) *place {
	base := a.Addr - device.Ptr(a.PhysOffset)
	for _, p := range *ps {
		if p.base == base && p.owner == a.Owner && p.phys == a.Phys {
			return p
		}
	}
	p := &place{phys: a.Phys, owner: a.Owner, base: base}
	*ps = append(*ps, p)
	return p
}

// newRec is the record of a, made by thread t at its current event at
// place at (its origin shared with t's previous access when they have
// the same).
func (d *Detector) newRec(a *sim.Access, t *thread, at *place) *rec {
	if a.Kind == sim.Atomic && (a.Write || a.Stamp != 0 || a.Old != 0 || a.New != 0) {
		ar := d.slab.atomic()
		ar.rec = d.recOf(a, t, at, &ar.st)
		ar.st.stamp, ar.st.old, ar.st.new = a.Stamp, a.Old, a.New
		return &ar.rec
	}
	x := d.slab.rec()
	*x = d.recOf(a, t, at, nil)
	return x
}

// recOf is the record of a, made by thread t at its current event at
// place at, with strong part st; t's origin becomes a's.
func (d *Detector) recOf(a *sim.Access, t *thread, at *place, st *strong) rec {
	if o := t.org; o == nil || !o.made(a, d.label(t, a)) {
		t.org = &origin{}
		*t.org = originOf(a, d.label(t, a))
	}
	return rec{ep: t.now(), strong: st, org: t.org, at: at, size: a.Size, off: a.PhysOffset,
		unit: uint32(a.Unit), line: int32(a.Line), kind: kind8(a.Kind), order: uint8(a.Order), scope: uint8(a.Scope),
		write: a.Write, shared: a.Shared, rmw: a.RMW, sc: a.SC}
}

// access is the access r records (its From aside: it mattered only when
// it was made).
func (r *rec) access() sim.Access {
	o := r.org
	a := sim.Access{Kind: sim.AccessKind(r.kind), Task: o.task, Parent: o.parent, Device: o.device, Stream: o.stream, Seq: o.seq,
		Op: o.op, Kernel: o.kernel, Launch: o.launch, Block: o.block, Lane: o.lane,
		Addr: r.at.base + device.Ptr(r.off), Size: r.size, Unit: uint64(r.unit), Phys: r.at.phys, PhysOffset: r.off, Owner: r.at.owner,
		Write: r.write, Shared: r.shared, RMW: r.rmw, SC: r.sc, Order: signal.Order(r.order), Scope: signal.Scope(r.scope), Line: int(r.line)}
	if r.strong != nil {
		a.Stamp, a.Old, a.New = r.stamp, r.old, r.new
	}
	return a
}

// strong is what the detector keeps of an atomic access besides its rec:
// of a strong write, and of a read that reports operands. A read that
// does not needs none of it (nothing observes a read, only writes).
type strong struct {
	vc    vclock // atomic writes: the writer's clock, to explain races
	fence vclock // atomic writes: the fence clock the write published
	// from is the strong write a read-modify-write read, when morally
	// strong: observing this write observes that one too.
	from *rec
	// Strong writes: the slots of the threads whose strong reads observed
	// this write (read it, morally strong, directly or through a chain of
	// read-modify-writes): it precedes, in causality order, what those
	// threads do to the word afterwards. The first one's slot plus one is
	// seen (0: none), the others are bits of seenMore (bit s of word
	// s/64): most writes are observed by one thread, whose slot may be
	// in the thousands.
	seenMore *[]uint64
	// stamp, old and new are the access's Stamp, Old and New.
	stamp    uint64
	old, new uint32
	seen     int32
}

// atomicRec allocates a rec and its strong part at once.
type atomicRec struct {
	rec
	st strong
}

// knows reports whether e happens before the atomic write r, by r's
// clock: the clock of a relaxed write is shared by its thread's writes
// until the thread learns something new, so for r's own component the
// epoch decides.
func (r *rec) knows(e epoch) bool {
	if e.slot == r.ep.slot {
		return e.clock <= r.ep.clock
	}
	return e.before(r.vc)
}

// maxObserveChain bounds how far back a read-modify-write chain is
// followed when a read observes its last write.
const maxObserveChain = 64

// observedBy reports whether the thread of slot observed r, a strong
// write.
func (r *rec) observedBy(slot int) bool {
	if int(r.seen) == slot+1 {
		return true
	}
	if r.seenMore == nil {
		return false
	}
	w := slot / 64
	return w < len(*r.seenMore) && (*r.seenMore)[w]&(1<<(slot%64)) != 0
}

// observe records that the thread of slot observed r, an atomic access.
func (r *rec) observe(slot int) {
	switch int(r.seen) {
	case 0:
		r.seen = int32(slot + 1)
		return
	case slot + 1:
		return
	}
	if r.seenMore == nil {
		r.seenMore = new([]uint64)
	}
	more := r.seenMore
	w := slot / 64
	if w >= len(*more) {
		*more = append(*more, make([]uint64, w+1-len(*more))...)
	}
	(*more)[w] |= 1 << (slot % 64)
}

// release is what atomic writes to a word have released at one scope, for
// acquires that read it (the word's release sequence).
type release struct {
	scope  signal.Scope
	dev    int
	launch uint64 // block scope only
	block  int    // block scope only, else -1
	// vcs are the clocks released, shared and never modified: an acquire
	// learns them all. Writes of different threads to a word continue its
	// sequence with their own clocks; keeping references rather than a
	// joined copy per word keeps a buffer of packets from holding a
	// clock per word. A clock another one holds is dropped.
	vcs []vclock
}

// maxReleaseClocks bounds the clocks of one release entry; past it they
// are joined into one.
const maxReleaseClocks = 8

// holds reports whether r already releases everything v does.
func (r release) holds(v vclock) bool {
	for _, c := range r.vcs {
		if same(c, v) {
			return true
		}
	}
	for _, c := range r.vcs {
		if v.leq(c) {
			return true
		}
	}
	return false
}

// learnInto joins r's clocks into v.
func (r release) learnInto(v *vclock) {
	for _, c := range r.vcs {
		v.join(c)
	}
}

// with returns r's clocks with v added: a new slice (entries are shared),
// without the clocks v holds, joined into one when there are too many.
func (r release) with(v vclock) []vclock {
	out := make([]vclock, 0, len(r.vcs)+1)
	for _, c := range r.vcs {
		if !c.leq(v) {
			out = append(out, c)
		}
	}
	out = append(out, v)
	if len(out) > maxReleaseClocks {
		j := out[0].clone()
		for _, c := range out[1:] {
			j.join(c)
		}
		out = []vclock{j}
	}
	return out
}

// stampAt is the number ([sim.Access].Stamp) of the store that r, a
// strong write, made at byte b; 0 when none.
func (r *rec) stampAt(b uint64) uint64 {
	if r.strong == nil || r.stamp == 0 || b < r.off || b >= r.off+r.size {
		return 0
	}
	return r.stamp + (b-r.off)/r.unitSize()
}

func same(x, y vclock) bool {
	return len(x) == len(y) && (len(x) == 0 || &x[0] == &y[0])
}

// comm is one signal communication: reader's compare-and-swap read the
// value writer's compare-and-swap wrote.
type comm struct {
	writer, reader *rec
}

// New attaches a detector to w: it becomes w's observer, passing every
// event on to the observer installed before it, if any, and sees every
// access and synchronisation event from now on. Attach it before any task
// runs.
func New(w *sim.World) *Detector {
	d := &Detector{
		sched:     w.Scheduler(),
		threads:   map[int]*thread{},
		lazy:      map[int]lazyLane{},
		lazyTab:   new([lazySlots]lazyEntry),
		slotOf:    map[threadKey]int{},
		laneSlots: map[threadKey]*[]int32{},
		ops:       map[opKey]vclock{},
		streams:   map[streamKey]*streamClock{},
		keys:      map[string]vclock{},
		far:       map[uint64]*shadow{},
		sites:     map[siteKey]int{},
	}
	if prev := w.Observer(); prev != nil {
		w.Observe(func(a *sim.Access) {
			d.observe(a)
			prev(a)
		})
		// The previous observer takes a warp's accesses lane by lane.
		var lane sim.Access
		w.ObserveWarp(func(wa *sim.WarpAccess) {
			d.observeWarp(wa)
			for i := range wa.Lanes {
				lane = wa.Lane(i)
				prev(&lane)
			}
		})
	} else {
		w.Observe(d.observe)
		w.ObserveWarp(d.observeWarp)
	}
	return d
}

// Release records that the running task releases the host-side
// synchronisation object key (a Store key it sets, a message it sends):
// whatever it did so far happens before anything a later [Detector.Acquire]
// of key does.
func (d *Detector) Release(key string) {
	t := d.current()
	t.step()
	v := d.keys[key]
	v.join(t.clock())
	d.keys[key] = v
}

// Acquire records that the running task acquires the host-side
// synchronisation objects keys (Store keys it read or waited for).
func (d *Detector) Acquire(keys ...string) {
	t := d.current()
	t.step()
	for _, k := range keys {
		t.learn(d.keys[k])
	}
}

// Races returns the distinct races found so far, in the order found.
func (d *Detector) Races() []Race { return append([]Race(nil), d.races...) }

// Err returns a [*Error] listing the races found, or nil when there were
// none.
func (d *Detector) Err() error {
	if len(d.races) == 0 {
		return nil
	}
	return &Error{Races: d.Races(), Total: d.total, Cut: d.cut}
}

func (d *Detector) current() *thread {
	task := -1
	if cur := d.sched.Current(); cur != nil {
		task = cur.ID()
	}
	return d.self(task)
}

// self is the thread of task for one of its own events: a fork batch of
// its children is over once it runs again.
func (d *Detector) self(task int) *thread {
	t := d.thread(task)
	if t == nil {
		t = d.newThread(task, hostThread, nil, threadKey{}, false)
	}
	t.snap = nil
	return t
}

// thread is the live thread of task, nil when none.
func (d *Detector) thread(task int) *thread {
	if d.lastThread != nil && d.lastTask == task {
		return d.lastThread
	}
	c := &d.recent[task&(recentThreads-1)]
	if c.t != nil && c.task == task {
		d.lastTask, d.lastThread = task, c.t
		return c.t
	}
	t := d.threads[task]
	if t == nil {
		if l, ok := d.takeLazy(task); ok {
			t = d.start(task, l.parent, l.snap, l.key, l.parent.fence)
		}
	}
	if t != nil {
		d.lastTask, d.lastThread = task, t
		*c = recentThread{task, t}
	}
	return t
}

// recentThreads is how many threads, by task, Detector.recent holds: a
// warp's lanes, whose accesses come in turn.
const recentThreads = 64

// recentThread is a task and its live thread.
type recentThread struct {
	task int
	t    *thread
}

// endThread forgets the thread of task.
func (d *Detector) endThread(task int) {
	delete(d.threads, task)
	if d.lastTask == task {
		d.lastThread = nil
	}
	if c := &d.recent[task&(recentThreads-1)]; c.task == task {
		*c = recentThread{}
	}
}

// step starts a new event of t.
func (t *thread) step() {
	if t.shared {
		t.own++
		return
	}
	t.vc.set(t.slot, t.vc.get(t.slot)+1)
}

// get is component i of t's clock.
func (t *thread) get(i int) uint32 {
	if t.shared && i == t.slot {
		return t.own
	}
	return t.vc.get(i)
}

// clock is t's clock, its own from now on: the caller may change it (and
// keep it only as long as t does not).
func (t *thread) clock() vclock {
	if t.shared {
		v := t.vc.clone()
		v.set(t.slot, t.own)
		t.vc, t.shared = v, false
	}
	return t.vc
}

// share makes t start from the clock v of its parent, which nobody
// changes, without copying it.
func (t *thread) share(v vclock) {
	t.vc, t.shared, t.own = v, true, v.get(t.slot)
}

// sight is a thread's clock at one event, copied out of the thread so
// that a loop over many accesses keeps it at hand: component slot is own,
// the others vc's.
type sight struct {
	vc   vclock
	slot int
	own  uint32
}

// sight is t's clock at its current event, valid until t changes.
func (t *thread) sight() sight { return sight{t.vc, t.slot, t.get(t.slot)} }

// get is component i.
func (s *sight) get(i int) uint32 {
	if i == s.slot {
		return s.own
	}
	return s.vc.get(i)
}

// knows reports whether e happens before t's current event.
func (t *thread) knows(e epoch) bool { return e.clock <= t.get(int(e.slot)) }

// now is t's current event.
func (t *thread) now() epoch { return epoch{int32(t.slot), t.get(t.slot)} }

// newThread starts task's thread with clock init. A keyed thread takes over
// the component of the previous thread of the same key when init already
// knows every event of that thread (it ended, and its end happens before
// this start), so components stay few across many kernels.
func (d *Detector) newThread(task int, kind threadKind, init vclock, key threadKey, keyed bool) *thread {
	slot := -1
	var ref *int32 // a lane's entry in laneSlots
	if keyed {
		s, ok := -1, false
		if key.lane >= 0 {
			ref = d.laneSlot(key)
			s, ok = int(*ref), *ref >= 0
		} else {
			s, ok = d.slotOf[key]
		}
		if ok {
			st := &d.slots[s]
			switch {
			case st.owner == nil && init.get(s) >= st.last:
				slot = s
			case st.owner != nil && st.owner.kind == streamThread && init.get(s) >= st.owner.get(s):
				// A stream's worker ends silently once its queue is empty;
				// a new one starts only after that, from a clock that
				// knows the old one's last op.
				if d.thread(st.owner.task) == st.owner {
					d.endThread(st.owner.task)
				}
				slot = s
			}
		}
	}
	if slot < 0 {
		slot = len(d.slots)
		d.slots = append(d.slots, slotState{})
		switch {
		case ref != nil:
			*ref = int32(slot)
		case keyed:
			d.slotOf[key] = slot
		}
	}
	var t *thread
	if n := len(d.spare); n > 0 {
		t, d.spare = d.spare[n-1], d.spare[:n-1]
	} else {
		t = new(thread)
	}
	*t = thread{task: task, slot: slot, kind: kind, vc: init, quiet: init.get(slot) + 1}
	d.slots[slot].owner = t
	d.threads[task] = t
	d.lastTask, d.lastThread = task, t
	d.recent[task&(recentThreads-1)] = recentThread{task, t}
	return t
}

// laneSlot returns where the slot of the lane of key is kept (-1: none
// yet): the slots of a block's lanes are a slice indexed by lane, the
// last block's at hand.
func (d *Detector) laneSlot(key threadKey) *int32 {
	lane := key.lane
	key.lane = 0
	l := &d.lastLanes
	if l.slots == nil || l.key != key {
		sl := d.laneSlots[key]
		if sl == nil {
			sl = new([]int32)
			d.laneSlots[key] = sl
		}
		l.key, l.slots = key, sl
	}
	sl := l.slots
	for len(*sl) <= lane {
		*sl = append(*sl, -1)
	}
	return &(*sl)[lane]
}

// learn joins o into t's clock.
func (t *thread) learn(o vclock) {
	t.clock()
	t.vc.join(o)
	t.learned()
}

// learnRelease joins what r released into t's clock.
func (t *thread) learnRelease(r release) {
	t.clock()
	r.learnInto(&t.vc)
	t.learned()
}

// learned notes that t's clock may have changed beyond its own
// component during its current event.
func (t *thread) learned() {
	t.wsnap = nil
	t.quiet = t.get(t.slot) + 1
}

// writeClock is t's clock for the record of a relaxed atomic write: a
// snapshot shared by the thread's writes until it learns something new,
// so its own component may be older than the write (see [rec.knows]).
// A release write needs its exact clock: it publishes it.
func (t *thread) writeClock() vclock {
	if t.wsnap == nil {
		t.wsnap = t.clock().clone()
	}
	return t.wsnap
}

func (d *Detector) observe(a *sim.Access) {
	switch a.Kind {
	case sim.Enqueue:
		t := d.self(a.Task)
		t.step()
		d.ops[opKey{a.Device, a.Stream, a.Seq}] = t.clock().clone()
	case sim.OpStart:
		d.opStart(a)
	case sim.OpEnd:
		t := d.self(a.Task)
		if t.ended != nil {
			// The kernel's end is a system-scope fence after every
			// access of its threads: it acquires what their strong reads
			// observed (the stream's next op, and a host that learns the
			// kernel completed, know it).
			for s := signal.Block; s <= signal.System; s++ {
				t.learn(t.ended.at(s))
			}
			t.ended = nil
		}
		t.step()
		d.endNC(a, t)
		sc := d.stream(a.Device, a.Stream)
		sc.last = t.clock().clone()
		sc.done = append(sc.done, seqClock{a.Seq, sc.last})
	case sim.Complete:
		d.complete(a)
	case sim.BlockStart, sim.LaneStart:
		d.fork(a)
	case sim.BlockEnd, sim.LaneEnd:
		d.join(a)
	case sim.BlockSync:
		// The block joined its lanes (join did) and runs again: its next
		// lanes fork from its clock now.
		d.self(a.Task).step()
	case sim.Load, sim.Store, sim.Atomic:
		d.access(a)
	case sim.Fence:
		d.fenceOp(a)
	}
}

func (d *Detector) stream(dev int, s device.Stream) *streamClock {
	k := streamKey{dev, s}
	sc := d.streams[k]
	if sc == nil {
		sc = &streamClock{}
		d.streams[k] = sc
	}
	return sc
}

// opStart: an op starts after it was enqueued and after the stream's
// previous op ended.
func (d *Detector) opStart(a *sim.Access) {
	k := opKey{a.Device, a.Stream, a.Seq}
	enq := d.ops[k]
	delete(d.ops, k)
	sc := d.stream(a.Device, a.Stream)
	t := d.thread(a.Task)
	if t == nil {
		init := enq.clone()
		init.join(sc.last)
		t = d.newThread(a.Task, streamThread, init, threadKey{a.Device, a.Stream, -2, -2}, true)
	} else {
		t.snap = nil
		t.learn(enq)
		t.learn(sc.last)
	}
	t.step()
}

// complete: a host task learned that the stream finished every op up to
// a.Seq.
func (d *Detector) complete(a *sim.Access) {
	t := d.self(a.Task)
	t.step()
	sc := d.streams[streamKey{a.Device, a.Stream}]
	if sc == nil || a.Seq == 0 {
		return
	}
	for i, e := range sc.done {
		if e.seq >= a.Seq {
			t.learn(e.vc)
			sc.done = sc.done[i:]
			return
		}
	}
}

// fork starts a block (child of the stream worker) or a lane (child of its
// block). All children of one batch start from the parent's clock at the
// fork, however their starts interleave with other children's ends.
func (d *Detector) fork(a *sim.Access) {
	p := d.thread(a.Parent)
	if p == nil {
		p = d.self(a.Parent)
	}
	if p.snap == nil {
		p.snap = p.clock().clone()
	}
	key := threadKey{a.Device, a.Stream, a.Block, a.Lane}
	if a.Kind == sim.LaneStart {
		// Started when the lane first does something (see thread): most
		// lanes of a large launch do nothing in most phases.
		d.putLazy(a.Task, lazyLane{parent: p, snap: p.snap, key: key})
		return
	}
	// The kernel boundary releases what preceded the launch.
	d.start(a.Task, p, p.snap, key, p.snap)
}

// lazyLane is a lane that started and did nothing yet: its parent, the
// clock it forked from and its key.
type lazyLane struct {
	parent *thread
	snap   vclock
	key    threadKey
}

// lazySlots is the size of Detector.lazyTab.
const lazySlots = 1024

// lazyEntry is a lane in Detector.lazyTab: ok when the entry holds one.
type lazyEntry struct {
	task int
	ok   bool
	lazyLane
}

// putLazy notes that the lane of task started and did nothing yet: in
// lazyTab, at task mod lazySlots, whose lane moves to the map lazy.
func (d *Detector) putLazy(task int, l lazyLane) {
	e := &d.lazyTab[task&(lazySlots-1)]
	if e.ok {
		d.lazy[e.task] = e.lazyLane
	}
	*e = lazyEntry{task: task, ok: true, lazyLane: l}
}

// takeLazy removes the lane of task from those that did nothing yet,
// and reports whether it was one.
func (d *Detector) takeLazy(task int) (lazyLane, bool) {
	if e := &d.lazyTab[task&(lazySlots-1)]; e.ok && e.task == task {
		l := e.lazyLane
		*e = lazyEntry{}
		return l, true
	}
	if len(d.lazy) == 0 {
		return lazyLane{}, false
	}
	l, ok := d.lazy[task]
	if ok {
		delete(d.lazy, task)
	}
	return l, ok
}

// start starts task's kernel thread, a child of p that forked from snap
// (its parent's snapshot, which nobody changes), with key key and fence
// clock fence.
func (d *Detector) start(task int, p *thread, snap vclock, key threadKey, fence vclock) *thread {
	t := d.newThread(task, kernelThread, snap, key, true)
	t.share(snap)
	t.parent = p
	t.fence = fence
	for s := range t.relFence {
		t.relFence[s] = t.fence
	}
	t.step()
	return t
}

// join ends a block or lane: its parent, blocked until every child ends,
// continues with what the child knew (kernel end, __syncthreads).
//
// A lane that did nothing between its start and its end (see fork) never
// had a thread: its parent learns nothing from it.
func (d *Detector) join(a *sim.Access) {
	if _, ok := d.takeLazy(a.Task); ok {
		return
	}
	t := d.thread(a.Task)
	if t == nil {
		return
	}
	t.step()
	t.joinParent()
	d.slots[t.slot] = slotState{last: t.get(t.slot)}
	d.endThread(a.Task)
	// Nothing refers to a lane now (its slot and the map let go of it; a
	// lane has no children, whose parent it would be). Emptied, a spare
	// keeps none of its clocks alive.
	if a.Kind == sim.LaneEnd && len(d.spare) < maxSpareThreads {
		*t = thread{}
		d.spare = append(d.spare, t)
	}
}

// maxSpareThreads bounds the ended threads a detector keeps for reuse.
const maxSpareThreads = 4096

// joinParent makes t's parent, which waited for t to end, know what t
// knew, and keeps what t's strong reads observed for the kernel's end.
func (t *thread) joinParent() {
	p := t.parent
	if p != nil {
		p.ended = p.ended.merge(t.pend).merge(t.ended)
	}
	switch {
	case p == nil:
	case t.shared:
		// t learned nothing its parent did not know when it forked (and
		// the parent's clock only grows): only t's own events are new.
		if p.get(t.slot) < t.own {
			p.clock()
			p.vc.set(t.slot, t.own)
			p.learned()
		}
	default:
		p.learn(t.vc)
	}
}

// access checks one load, store or atomic against the shadow memory and
// records it.
func (d *Detector) access(a *sim.Access) {
	if a.Size == 0 {
		return
	}
	t := d.self(a.Task)
	t.step()
	d.accessBy(a, t)
}

// accessBy is access of a, made by thread t at its current event.
func (d *Detector) accessBy(a *sim.Access, t *thread) {
	if a.Size == 0 {
		return
	}
	sh := d.shadowOf(a.Phys)
	at := sh.places.of(a)
	lo, hi := a.PhysOffset/granule, (a.PhysOffset+a.Size+granule-1)/granule
	sh.grow(hi)
	if sh.warped {
		d.unwarp(sh, a, t, lo, hi)
	}
	if a.NC {
		v := d.recOf(a, t, at, nil)
		d.checkNC(sh, &v, t, lo, hi)
		d.noteNC(&v)
	}
	var x *rec
	if a.Kind == sim.Load {
		v := d.recOf(a, t, at, nil)
		v.nc = a.NC
		if d.reread(sh, &v, t, lo, hi) {
			return
		}
		x = d.slab.rec()
		*x = v
	} else {
		x = d.newRec(a, t, at)
	}
	if a.Write && d.ncOps != nil {
		d.checkNCAfter(sh, x, t, lo, hi)
	}
	first := sh.at(lo)
	atomic := a.Kind == sim.Atomic
	// readFrom says which store each unit of a strong read returned,
	// when one returned an older store than the newest (nil: all the
	// newest). It matters only now: the record does not keep it.
	readFrom := a.From
	if atomic {
		switch {
		case a.Write && !a.RMW:
			// A strong store reads nothing, so it observes no release.
		case readFrom == nil:
			d.learnFrom(t, first.releases(), a)
		default:
			// Each unit synchronises with (or observes) the release
			// sequence as it stood after the store it returned.
			var last []release
			for i := range readFrom {
				if _, rel := sh.stored(a, readFrom, i); !sameRel(rel, last) {
					d.learnFrom(t, rel, a)
					last = rel
				}
			}
		}
		d.communicate(first.lastWrite(), x, a)
		if a.Write {
			if a.Order.Releases() {
				x.vc = t.clock().clone()
			} else {
				x.vc = t.writeClock()
			}
			x.fence = t.relFence[a.Scope]
		}
	}
	if atomic && (!a.Write || a.RMW) {
		// A strong read observes the write that made the store each unit
		// read (the word's last write, unless readFrom names an older
		// one) when the two are morally strong, and with it the writes
		// that write's read-modify-write chain observed. A
		// read-modify-write reads the newest store.
		if w := first.lastWrite(); a.RMW && a.Write && w != nil && w.kind.atomic() && !conflict(w, x) {
			x.from = w
		}
		if readFrom == nil {
			sh.each(lo, hi, func(s *state) { observeWrite(s.lastWrite(), x, t.slot) })
		} else {
			for i := range readFrom {
				w, _ := sh.stored(a, readFrom, i)
				observeWrite(w, x, t.slot)
			}
		}
	}
	d.pairs.reset()
	store := a.Write && !atomic // a plain store ends the word's release sequence
	from := lo
	if atomic && a.Write {
		// The write continues the release sequence of the span it starts
		// in: that span's granules take one new state.
		end := sh.spanEnd(lo, hi)
		var n *state
		sh.update(lo, end, func(s *state, whole bool) *state {
			if n == nil {
				// The span's history: its release sequence continued by
				// the write, its prior writes pushed.
				h := historyOf(d.lastHist, d.release(t, s.releases(), a, x.vc), s.priorAfter(x))
				n, d.lastHist = d.replace(s, whole, x, t, h), h
			}
			return n
		})
		from = end
	}
	sh.update(from, hi, func(s *state, whole bool) *state {
		switch {
		case s == nil && d.freshGen == x:
			return d.fresh
		case s == nil:
			d.fresh, d.freshGen = d.replace(nil, false, x, t, nil), x
			return d.fresh
		case s.w != nil:
			return d.warpStep(s, whole, x, t) // unwarp kept it
		}
		if n := d.movedTo(s); n != nil {
			return n // another run of s was already replaced
		}
		n := d.replace(s, whole, x, t, s.historyAfter(x, store))
		if !whole {
			d.addMove(s, n)
		}
		return n
	})
	if len(d.moved) > 0 {
		clear(d.moved)
		d.moved = d.moved[:0]
		clear(d.movedIdx)
	}
}

// communicate records a communication, for reports to explain races by:
// a strong write, or a strong load (a flag's poll), x of a that follows
// another thread's strong write w (nil: none). A thread polling one
// write keeps one communication, its latest read.
func (d *Detector) communicate(w, x *rec, a *sim.Access) {
	if !(a.Write || !a.RMW) || w == nil || !w.kind.atomic() || w.ep.slot == x.ep.slot {
		return
	}
	if n := len(d.comms); n > 0 && !a.Write && d.comms[n-1].writer == w && d.comms[n-1].reader.ep.slot == x.ep.slot && !d.comms[n-1].reader.write {
		d.comms[n-1].reader = x
		return
	}
	d.comms = append(d.comms, &comm{writer: w, reader: x})
	if len(d.comms) > 2*commRing {
		d.comms = append(d.comms[:0], d.comms[len(d.comms)-commRing:]...)
	}
}

// checkNC reports the writes of the bytes that the ld.global.nc x reads
// which x's kernel's start does not follow: bytes written while the kernel
// ran, by any thread, op or peer, ordered with x or not.
func (d *Detector) checkNC(sh *shadow, x *rec, t *thread, lo, hi uint64) {
	d.pairs.reset()
	sh.each(lo, hi, func(s *state) {
		if s == nil {
			return
		}
		for _, y := range s.accs {
			if !y.write() || y.clock <= t.fence.get(y.slot()) {
				continue
			}
			if w := y.r; w.shared == x.shared && w.off < x.off+x.size && x.off < w.off+w.size {
				d.reportNC(w, x)
			}
		}
	})
}

// move is a state that the current access replaced in some of its
// holders, and its replacement.
type move struct{ from, to *state }

// maxMovedList is how many moves the current access looks up in its
// list before it indexes them.
const maxMovedList = 16

// movedTo is the replacement of s in the current access, nil when none
// yet.
func (d *Detector) movedTo(s *state) *state {
	if len(d.moved) > maxMovedList {
		return d.movedIdx[s]
	}
	for _, m := range d.moved {
		if m.from == s {
			return m.to
		}
	}
	return nil
}

// addMove records that the current access replaced s by n.
func (d *Detector) addMove(s, n *state) {
	d.moved = append(d.moved, move{s, n})
	switch {
	case len(d.moved) == maxMovedList+1:
		if d.movedIdx == nil {
			d.movedIdx = map[*state]*state{}
		}
		for _, m := range d.moved {
			d.movedIdx[m.from] = m.to
		}
	case len(d.moved) > maxMovedList+1:
		d.movedIdx[s] = n
	}
}

// reread records a plain load by t, reading granules [lo, hi) and
// recorded as v, when it repeats the read r of the same bytes that t made
// the same way (same origin, place and site), settled, since t last
// learned anything, and every granule it reads holds r followed by reads
// of other threads only: each granule would then only drop r and append
// the load, reporting nothing (see [Detector.check]: r is ordered before
// the load; the reads after r were made after t last learned anything, so
// they stay unordered with t, and the writes before r stay ordered). As r
// covers exactly those granules, no other state holds r: rather than take
// a new record, r becomes the load's, its event moving to v's in the
// record, and in the granules' accesses r moves to the end. It reports
// whether the load was such a read.
//
// Lanes polling one word (a pointer every lane reloads) leave a read of
// each lane in the word's list; this finds the lane's own without
// checking every other one.
func (d *Detector) reread(sh *shadow, v *rec, t *thread, lo, hi uint64) bool {
	s := sh.at(lo)
	if s == nil {
		return false
	}
	i := s.ownRead(t)
	if i < 0 {
		return false
	}
	y := s.accs[i]
	r := y.r
	w := *v
	if w.ep = r.ep; *r != w {
		return false
	}
	first, held := s, true
	sh.each(lo, hi, func(s *state) {
		held = held && s != nil && (s == first || holdsRead(s, t, y))
	})
	if !held {
		return false
	}
	r.ep = v.ep
	at := i // where the first state holds r
	sh.each(lo, hi, func(s *state) {
		// A state the granules hold in several runs is visited again:
		// r is then its last access already.
		i := at
		if at < 0 {
			i = s.ownRead(t)
		}
		at = -1
		y := s.accs[i]
		copy(s.accs[i:], s.accs[i+1:])
		y.clock = r.ep.clock
		s.accs[len(s.accs)-1] = y
		if s.rc != nil {
			s.rc.mark(t.slot) // r may move past wend
		}
	})
	return true
}

// holdsRead reports whether y is the read ownRead finds in s for t.
func holdsRead(s *state, t *thread, y acc) bool {
	i := s.ownRead(t)
	return i >= 0 && s.accs[i] == y
}

// ownRead returns the index in s's accesses of t's latest access of the
// granules that hold s when it is a settled plain read made since t last
// learned anything and only reads of other threads follow it; -1 when
// there is none such.
//
// A state holds at most two accesses of a thread, a write and then a read
// (a thread's access supersedes its earlier reads, and a write its
// earlier writes too), so t's latest access is its read when it has one.
// The search looks at the last access, where a thread that reads again
// before anyone else finds its read, then from the first on, where lanes
// that reread a word in turn find theirs (each reread moves the read to
// the end, see [Detector.reread]), counting the writes it passes: a write
// follows the read when it did not pass them all.
func (s *state) ownRead(t *thread) int {
	n := len(s.accs)
	if n == 0 || s.w != nil {
		return -1
	}
	switch y := s.accs[n-1]; {
	case y.slot() == t.slot:
		if y.settledReadOf(t) {
			return n - 1
		}
		return -1
	case y.write():
		return -1
	}
	scan := s.accs[:n-1]
	if s.rc != nil && !s.rc.may(t.slot) && s.rc.wend < len(scan) {
		scan = scan[:s.rc.wend] // t has no read past the last write
	}
	passed := int32(0)
	for i, y := range scan {
		switch {
		case y.write():
			passed++
		case y.slot() == t.slot:
			if passed == s.writes && y.settledReadOf(t) {
				return i
			}
			return -1
		}
	}
	return -1
}

// observeWrite records that the thread of slot observed w, the write
// whose store x read (nil: none the detector knows), with the writes
// w's read-modify-write chain observed, when w and x are morally strong.
func observeWrite(w, x *rec, slot int) {
	if w == nil || !w.kind.atomic() || conflict(w, x) {
		return
	}
	for z, n := w, 0; z != nil && n < maxObserveChain; z, n = z.from, n+1 {
		z.observe(slot)
	}
}

// label is the label of t's task, which made a: the running task, or,
// for a lane whose warp runs in lockstep in another lane's task, the
// label its own task has or would have (its name left to labelOf, which
// only a report needs); nil when no task runs.
func (d *Detector) label(t *thread, a *sim.Access) *actor.Label {
	if t.label == nil {
		switch cur := d.sched.Current(); {
		case cur == nil:
		case cur.ID() == a.Task || a.Lane < 0:
			l := cur.Label()
			t.label = &l
		default:
			t.label = &actor.Label{Kind: actor.LaneTask, Device: a.Device, Kernel: a.Kernel, Launch: a.Launch, Block: a.Block, Lane: a.Lane}
		}
	}
	return t.label
}

// denseIDs bounds the physical allocation numbers whose shadows a
// Detector keeps in a slice.
const denseIDs = 1 << 16

// shadowOf is the shadow memory of physical allocation phys.
func (d *Detector) shadowOf(phys uint64) *shadow {
	if phys < uint64(len(d.mem)) {
		if sh := d.mem[phys]; sh != nil {
			return sh
		}
	}
	if phys >= denseIDs {
		sh := d.far[phys]
		if sh == nil {
			sh = &shadow{}
			d.far[phys] = sh
		}
		return sh
	}
	if phys >= uint64(len(d.mem)) {
		d.mem = append(d.mem, make([]*shadow, phys+1-uint64(len(d.mem)))...)
	}
	sh := &shadow{}
	d.mem[phys] = sh
	return sh
}

// replace checks access x against the accesses of state s (nil: none)
// and returns the state that follows it: s itself, changed in place, when
// whole (the granules being replaced hold every reference to s). A write
// supersedes every access ordered before it; a read supersedes the reads
// ordered before it. The state that follows holds history h, which the
// caller takes from s before x changes its accesses (see
// [state.historyAfter]).
func (d *Detector) replace(s *state, whole bool, x *rec, t *thread, h *history) *state {
	if s == nil {
		n := d.slab.state()
		n.accs = append(n.accs, accOf(x, !x.write))
		if x.write {
			n.writes = 1
		}
		n.h = h
		return n
	}
	if whole {
		old := s.accs
		s.accs, s.writes, s.rc = d.check(old[:0], old, s.writes, s.rc, x, t)
		if len(s.accs) < len(old) {
			clear(old[len(s.accs):])
		}
		s.h = h
		return s
	}
	n := d.slab.state()
	if len(s.accs) >= len(n.inl) {
		n.accs = make([]acc, 0, len(s.accs)+1)
	}
	var rc *readCache
	if s.rc != nil {
		c := *s.rc
		c.slots = slices.Clone(c.slots)
		rc = &c
	}
	n.accs, n.writes, n.rc = d.check(n.accs, s.accs, s.writes, rc, x, t)
	n.h = h
	return n
}

// check reports the races of x with the accesses accs of a granule, of
// which writes are writes, and appends to dst those x does not
// supersede, then x; it returns dst, how many of its accesses are
// writes, and its read cache: rc, the cache of accs (nil: none), which
// check may change, or a new one, or nil when dst is short. dst may be
// accs[:0]: the kept accesses then move down in place.
//
// A read that follows a settled read of its thread at the end of accs,
// made since the thread last learned anything, only takes that read's
// place: every other read stays as unordered with the thread as it was,
// every write as ordered, and nothing races.
//
// A read by a thread whose clock is one of rc's snaps checks only
// accs[:rc.wend] as any access does: past it, every access is a read,
// unordered with the thread when of another slot (see [readCache]), and
// ordered before it when of its own (the slot's events so far are the
// thread's and its predecessors', which it knows); when rc's slots say
// that none is of its own, they are kept without a look. Reads of a word
// that every lane of a block loads would otherwise look up, for each
// lane, the clock of every other lane's read.
func (d *Detector) check(dst, accs []acc, writes int32, rc *readCache, x *rec, t *thread) ([]acc, int32, *readCache) {
	write := x.write
	inPlace := cap(dst) > 0 && len(accs) > 0 && &dst[:1][0] == &accs[0]
	if n := len(accs); !write && n > 0 {
		if accs[n-1].settledReadOf(t) {
			if inPlace {
				dst = dst[:n-1]
			} else {
				dst = append(dst, accs[:n-1]...)
			}
			dst = append(dst, accOf(x, true)) // a read for a read
			if rc != nil {
				rc.mark(int(x.ep.slot))
			}
			return dst, writes, rc.afterRead(dst, x)
		}
	}
	now := t.sight()
	end := len(accs)
	fast := !write && rc != nil && t.shared && rc.holds(t.vc)
	if fast {
		end = rc.wend
	}
	settled := !write
	kept := int32(0) // the writes kept
	wend := 0        // the length of dst at its last write
	for i, y := range accs[:end] {
		// y happens before the access, or its thread observed y, a
		// strong write (written out: too large to be inlined as a call).
		ordered := y.clock <= now.get(y.slot()) || y.tag&accStrong != 0 && y.r.observedBy(now.slot)
		if !ordered && (y.write() || write) && conflict(y.r, x) {
			d.report(y.r, x, t)
		}
		if !ordered || (!write && y.write()) {
			if y.write() {
				kept++
				wend = len(dst) + 1
				if !ordered {
					settled = false
				}
			}
			if inPlace && len(dst) == i {
				dst = dst[:i+1] // already there
				continue
			}
			dst = append(dst, y)
		}
	}
	switch {
	case fast && !rc.may(now.slot):
		// No read of the thread's slot past wend: all of them stay.
		if inPlace && len(dst) == end {
			dst = dst[:len(accs)]
		} else {
			dst = append(dst, accs[end:]...)
		}
	case fast:
		for i := end; i < len(accs); i++ {
			y := accs[i]
			if y.slot() == now.slot && y.clock <= now.own {
				continue // the thread's own earlier read
			}
			if inPlace && len(dst) == i {
				dst = dst[:i+1] // already there
				continue
			}
			dst = append(dst, y)
		}
	}
	if write {
		kept++
	}
	dst = append(dst, accOf(x, settled))
	if write {
		wend = len(dst)
	}
	if len(dst) < minCache {
		return dst, kept, nil
	}
	if rc == nil {
		rc = &readCache{}
	}
	if !fast || len(dst) > 2*rc.built {
		rc.wend = wend
		rc.index(dst)
	} else {
		// A read keeps every write, so the last one of accs[:end] (its
		// last access) is dst's last, and x is past it.
		rc.wend = wend
		rc.mark(int(x.ep.slot))
	}
	if !write {
		rc = rc.afterRead(dst, x)
	}
	if !fast && t.shared && t.vc != nil && !rc.holds(t.vc) && x.ep.clock > t.vc.get(t.slot) {
		// Every read kept is unordered with the thread, of another slot
		// (its own ones are ordered before it), or x, above the snapshot.
		copy(rc.snaps[:], rc.snaps[1:])
		rc.snaps[maxSnaps-1] = t.vc
	}
	return dst, kept, rc
}

// afterRead is c once dst, which ends with read x, replaced its list:
// without the snaps that x's clock is not above, or nil when c is nil or
// dst is short.
func (c *readCache) afterRead(dst []acc, x *rec) *readCache {
	if c == nil {
		return nil
	}
	if len(dst) < minCache {
		return nil
	}
	for k, p := range c.snaps {
		if p != nil && x.ep.clock <= p.get(int(x.ep.slot)) {
			c.snaps[k] = nil
		}
	}
	return c
}

// conflict reports whether two accesses to a common word race when
// unordered: they share a byte, at least one writes, and they are not
// morally strong: both
// strong, of the same bytes (mixed-size or partially overlapping strong
// accesses are not morally strong), with scopes that include each other's
// thread.
func conflict(x, y *rec) bool {
	if !x.write && !y.write {
		return false
	}
	if x.shared != y.shared || x.off+x.size <= y.off || y.off+y.size <= x.off {
		return false // different bytes of a common word
	}
	if x.kind.atomic() && y.kind.atomic() {
		if !sameBytes(x, y) {
			return true
		}
		need := neededBy(x.org, y.org)
		return signal.Scope(x.scope) < need || signal.Scope(y.scope) < need
	}
	return true
}

// sameBytes reports whether two overlapping strong accesses access the
// same bytes on their overlap: their units (the access itself, or each
// access of a run) are of one size and line up.
func sameBytes(x, y *rec) bool {
	ux, uy := x.unitSize(), y.unitSize()
	if ux != uy {
		return false
	}
	d := max(x.off, y.off) - min(x.off, y.off)
	return d%ux == 0
}

// unitSize is the size of each strong access r stands for.
func (r *rec) unitSize() uint64 {
	if r.unit > 0 {
		return uint64(r.unit)
	}
	return r.size
}

// unit is the size of each strong access a reported access stands for.
func unit(a *sim.Access) uint64 {
	if a.Unit > 0 {
		return a.Unit
	}
	return a.Size
}

// neededBy is the narrowest scope covering the threads of two accesses.
func neededBy(x, y *origin) signal.Scope {
	sameDev := x.device == y.device
	sameBlock := sameDev && x.kernel != "" && x.launch == y.launch && x.block == y.block
	return signal.Needed(sameDev, sameBlock)
}

// learnFrom is what atomic access a learns from a release sequence rel
// of the word it reads: acquire for an acquiring read, observeRelease for
// any other.
func (d *Detector) learnFrom(t *thread, rel []release, a *sim.Access) {
	if a.Order.Acquires() {
		d.acquire(t, rel, a)
	} else {
		d.observeRelease(t, rel, a)
	}
}

// acquire: an acquiring atomic read synchronises with what releasing
// writes of the word released at a scope that covers both threads.
func (d *Detector) acquire(t *thread, rel []release, a *sim.Access) {
	for _, r := range rel {
		sameDev := r.dev == a.Device
		sameBlock := sameDev && r.block >= 0 && r.launch == a.Launch && r.block == a.Block
		if signal.Synchronizes(signal.Release, r.scope, a.Order, a.Scope, signal.Needed(sameDev, sameBlock)) {
			t.learnRelease(r)
		}
	}
}

// observeRelease: a strong read without acquire order observes what
// releasing writes of the word released; a later fence of a wide enough
// scope acquires it (a strong read followed by a fence is an acquire
// pattern). The read and the release must both reach the other thread.
func (d *Detector) observeRelease(t *thread, rel []release, a *sim.Access) {
	for _, r := range rel {
		sameDev := r.dev == a.Device
		sameBlock := sameDev && r.block >= 0 && r.launch == a.Launch && r.block == a.Block
		need := signal.Needed(sameDev, sameBlock)
		if r.scope >= need && a.Scope >= need {
			if t.pend == nil {
				t.pend = &pending{}
			}
			for _, c := range r.vcs {
				t.pend.observe(need, c)
			}
		}
	}
}

// fenceOp: a fence of scope s releases the thread's clock to the strong
// writes after it, and acquires what the strong reads before it observed,
// both at the scopes it covers. A fence.sc is also ordered after every
// earlier fence.sc it is morally strong with (both scopes include the
// other's thread), so it acquires what those released.
func (d *Detector) fenceOp(a *sim.Access) {
	t := d.self(a.Task)
	t.step()
	for s := signal.Block; s <= a.Scope; s++ {
		t.learn(t.pend.at(s))
	}
	if a.SC {
		for _, r := range d.sc {
			sameDev := r.dev == a.Device
			sameBlock := sameDev && r.block >= 0 && r.launch == a.Launch && r.block == a.Block
			need := signal.Needed(sameDev, sameBlock)
			if r.scope >= need && a.Scope >= need {
				t.learnRelease(r)
			}
		}
	}
	v := t.clock().clone()
	if a.SC {
		d.sc = addRelease(d.sc, a, v)
	}
	for s := signal.Block; s <= a.Scope; s++ {
		t.relFence[s] = v
	}
}

// addRelease returns rel with v released at a's scope and place (merged
// into the entry of the same scope and place). v is shared, not copied:
// the caller never changes it.
func addRelease(rel []release, a *sim.Access, v vclock) []release {
	var vs [signal.System + 1]vclock
	vs[a.Scope] = v
	return addReleases(rel, a, &vs)
}

// addReleases returns rel with vs[s] released at scope s and a's place
// for each scope s up to a's whose clock is not nil, as releasing them
// one scope after the other would: each merged into the entry of its
// scope and place, or added after the others in scope order. The result
// is rel when every entry already holds its clock, else a new list
// (release lists are shared between states: copy on write). The clocks
// are shared, not copied.
func addReleases(rel []release, a *sim.Access, vs *[signal.System + 1]vclock) []release {
	var out []release // the new list, once something changed
	var one []vclock  // the clocks of the last entry added, shared by the next when alike
	for s := signal.Block; s <= a.Scope; s++ {
		v := vs[s]
		if v == nil {
			continue
		}
		launch, block := uint64(0), -1
		if s == signal.Block {
			launch, block = a.Launch, a.Block
		}
		i := slices.IndexFunc(rel, func(r release) bool {
			return r.scope == s && r.dev == a.Device && r.launch == launch && r.block == block
		})
		if i >= 0 && rel[i].holds(v) {
			continue // the entry already holds v
		}
		if out == nil {
			out = make([]release, len(rel), len(rel)+int(a.Scope-s)+1)
			copy(out, rel)
		}
		if i >= 0 {
			out[i].vcs = rel[i].with(v)
			continue
		}
		if len(one) == 0 || !same(one[0], v) {
			one = []vclock{v}
		}
		out = append(out, release{scope: s, dev: a.Device, launch: launch, block: block, vcs: one})
	}
	if out == nil {
		return rel
	}
	return out
}

// release returns the word's release sequence rel continued by a, an
// atomic write of t made at clock vc (a copy of t's, which stays shared).
// A write with release order releases its thread's clock at its scope; a relaxed one releases, at each scope up to its own, what
// the thread's latest fence of that scope released (a fence followed by a
// strong write is a release pattern; the kernel's start counts as a
// system-scope fence). Either way the write continues the word's release
// sequence.
func (d *Detector) release(t *thread, rel []release, a *sim.Access, vc vclock) []release {
	if a.Order.Releases() {
		return addRelease(rel, a, vc)
	}
	if len(rel) > 0 {
		return addReleases(rel, a, &t.relFence)
	}
	if l, ok := t.fresh.of(a, &t.relFence); ok {
		return l
	}
	l := addReleases(nil, a, &t.relFence)
	t.fresh = freshRelease{fences: t.relFence, dev: a.Device, launch: a.Launch, block: a.Block, scope: a.Scope, list: l}
	return l
}

// slabs hands out records (plain and atomic) and states carved from
// arrays (package slab). Most records and states live as long as the
// detector (a granule keeps its accesses until a later one supersedes
// them), so an array seldom outlives its last user by long (the heap's
// peaks before and after are in the git history of BENCHMARKS.md).
type slabs struct {
	recs    slab.Slab[rec]
	atomics slab.Slab[atomicRec]
	states  slab.Slab[state]
}

// rec returns a zero record.
func (sl *slabs) rec() *rec { return sl.recs.New() }

// atomic returns a zero record with a strong part.
func (sl *slabs) atomic() *atomicRec { return sl.atomics.New() }

// state returns a state holding no access, held nowhere yet.
func (sl *slabs) state() *state {
	s := sl.states.New()
	s.accs = s.inl[:0]
	return s
}
