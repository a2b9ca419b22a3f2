package race

import (
	"fmt"
	"strings"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/signal"
)

// Race is one data race: two accesses to common bytes, at least one a
// write, not both morally strong atomics, with no happens-before edge
// between them.
type Race struct {
	First, Second         sim.Access  // the earlier and the later access
	FirstTask, SecondTask actor.Label // their scheduler tasks
	// Phys, Offset and Size are the bytes both touch: physical allocation
	// Phys (created by device Owner), bytes [Offset, Offset+Size). When
	// the accesses share a 4-byte word but no byte, that word.
	Phys         uint64
	Offset, Size uint64
	Owner        int
	// Missing names the edge that would have ordered the accesses.
	Missing string
	// NC marks, instead of a race, a load by ld.global.nc of bytes
	// written during its kernel's lifetime: by First after the load's
	// kernel began and before the load (Second, the load), or by Second
	// after the load (First, the load) before its kernel ended (before
	// the write knows it ended). The access that loads has NC set. The
	// non-coherent path may return what the bytes held before, whatever
	// orders the two. Missing then says so.
	NC bool
	// Repeats counts later races between the same two code sites (same
	// devices, ops or kernels and kinds of access), not listed separately.
	Repeats int
}

// String renders the race over four lines: where, both accesses, and the
// missing edge.
func (r Race) String() string {
	var b strings.Builder
	switch {
	case r.NC:
		fmt.Fprintf(&b, "non-coherent load of %d bytes written during its kernel, of device %d's memory (phys %d + %#x):\n", r.Size, r.Owner, r.Phys, r.Offset)
	case r.First.Shared:
		fmt.Fprintf(&b, "data race on %d bytes of the shared memory of device %d %s#%d block %d (offset %#x):\n",
			r.Size, r.First.Device, r.First.Kernel, r.First.Launch, r.First.Block, r.Offset)
	default:
		fmt.Fprintf(&b, "data race on %d bytes of device %d's memory (phys %d + %#x):\n", r.Size, r.Owner, r.Phys, r.Offset)
	}
	fmt.Fprintf(&b, "  first:  %s\n", Describe(r.First, r.FirstTask.Name))
	fmt.Fprintf(&b, "  second: %s\n", Describe(r.Second, r.SecondTask.Name))
	fmt.Fprintf(&b, "  missing edge: %s", r.Missing)
	if r.Repeats > 0 {
		fmt.Fprintf(&b, "\n  (%d more races between the same sites)", r.Repeats)
	}
	return b.String()
}

// Error reports the races of a run.
type Error struct {
	Races []Race // distinct races in the order found
	Total int    // every race found, repeats included
	// Cut counts the distinct races past the most a detector keeps
	// (pairs of sites that Races lacks).
	Cut int
}

// errorListed is how many races Error's message lists.
const errorListed = 32

// Error lists the distinct races (the first 32, and how many more).
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d data races (%d distinct)", e.Total, len(e.Races)+e.Cut)
	for i, r := range e.Races {
		if i == errorListed {
			fmt.Fprintf(&b, "\n(%d more distinct races not listed here)", len(e.Races)-i)
			break
		}
		b.WriteString("\n")
		b.WriteString(r.String())
	}
	if e.Cut > 0 {
		fmt.Fprintf(&b, "\n(%d more distinct races past the %d a run keeps)", e.Cut, maxRaces)
	}
	return b.String()
}

// Describe renders one access: who (device, kernel launch, block, lane, or
// stream op), what (kind, size, order and scope of atomics, the signal
// operation a compare-and-swap performs) and where (virtual address on the
// device, physical allocation and offset).
func Describe(a sim.Access, task string) string {
	var who string
	if a.Kernel != "" && a.Block >= 0 {
		who = fmt.Sprintf("device %d %s#%d block %d", a.Device, a.Kernel, a.Launch, a.Block)
		if a.Lane >= 0 {
			who += fmt.Sprintf(" lane %d", a.Lane)
		}
	} else {
		who = fmt.Sprintf("device %d stream %d op %d (%s)", a.Device, a.Stream, a.Seq, a.Op)
	}
	what := a.Kind.String()
	if a.Kind == sim.Atomic {
		what = fmt.Sprintf("%s (%s, %s)", signalOp(a), a.Order, a.Scope)
	}
	s := fmt.Sprintf("%s: %s of %d bytes at %v (phys %d + %#x of device %d)", who, what, a.Size, a.Addr, a.Phys, a.PhysOffset, a.Owner)
	if a.Shared {
		s = fmt.Sprintf("%s: %s of %d bytes at shared offset %#x", who, what, a.Size, a.PhysOffset)
	}
	if a.Line > 0 {
		s += fmt.Sprintf(" at PTX line %d", a.Line)
	}
	if task != "" {
		s += " in task " + task
	}
	return s
}

// signalOp names the signal operation a compare-and-swap performs.
func signalOp(a sim.Access) string { return signalOpOf(a.Write, a.RMW, a.Old, a.New) }

// signalOpOf is signalOp of an access that writes or not, is a
// read-modify-write or not, and compares old and swaps in new.
func signalOpOf(write, rmw bool, old, new uint32) string {
	switch {
	case !rmw && write:
		return "strong store"
	case !rmw:
		return "strong load"
	case old == signal.Idle && new == signal.Raised:
		return "put"
	case old == signal.Raised && new == signal.Idle:
		return "wait"
	}
	return fmt.Sprintf("compare-and-swap %d->%d", old, new)
}

// siteKey identifies the code site of an access, so that one bug found on
// many bytes, iterations, blocks and lanes is listed once.
type siteKey struct {
	first, second site
	nc            bool
}

type site struct {
	dev    int
	op     string
	kernel string
	kind   sim.AccessKind
	sig    string
	line   int // PTX line, 0 outside PTX threads
}

// site is the code site of the access r records: for a strong access,
// with its signal operation.
func (r *rec) site() site {
	s := site{dev: r.org.device, op: r.org.op, kernel: r.org.kernel, kind: sim.AccessKind(r.kind), line: int(r.line)}
	if r.kind.atomic() {
		var old, new uint32
		if r.strong != nil {
			old, new = r.old, r.new
		}
		s.sig = signalOpOf(r.write, r.rmw, old, new)
	}
	return s
}

// report records a race between the earlier access w and the access x that
// thread t is making.
func (d *Detector) report(w, x *rec, t *thread) {
	d.add(w, x, false, func() string { return d.explain(w, x, t) })
}

// reportNC records that the ld.global.nc x read bytes that w wrote after
// x's kernel began.
func (d *Detector) reportNC(w, x *rec) {
	d.add(w, x, true, func() string {
		return "ld.global.nc reads bytes written after its kernel began: the non-coherent path may return what they held before, whatever orders the two (load them with ld.global, ld.relaxed or ld.acquire)"
	})
}

// add records a finding between w and x once per pair of sites, missing
// naming what is wrong.
func (d *Detector) add(w, x *rec, nc bool, missing func() string) {
	if !d.pairs.add(w) {
		return // already reported for another word of this access
	}
	d.total++
	k := siteKey{w.site(), d.siteOfX(x), nc}
	i, ok := d.recentSite(&k)
	if !ok {
		if i, ok = d.sites[k]; ok {
			d.lastSite = (d.lastSite + 1) % recentSites
			d.lastSites[d.lastSite].k, d.lastSites[d.lastSite].i, d.lastSites[d.lastSite].set = k, i, true
		}
	}
	if ok {
		if i >= 0 {
			d.races[i].Repeats++
		}
		return
	}
	wa, xa := w.access(), x.access()
	if nc {
		// The load by ld.global.nc: the later access, or the earlier
		// one when a write came after it during its kernel.
		if x.write {
			wa.NC = true
		} else {
			xa.NC = true
		}
	}
	if len(d.races) >= maxRaces {
		d.sites[k] = -1
		d.cut++
		return
	}
	lo := max(w.off, x.off)
	hi := min(w.off+w.size, x.off+x.size)
	if hi <= lo {
		lo = max(w.off, x.off) / granule * granule
		hi = lo + granule
	}
	d.sites[k] = len(d.races)
	d.races = append(d.races, Race{
		First: wa, Second: xa, FirstTask: labelOf(w.org.label), SecondTask: labelOf(x.org.label),
		Phys: x.at.phys, Offset: lo, Size: hi - lo, Owner: x.at.owner,
		Missing: missing(), NC: nc,
	})
}

// siteOfX is x.site(), kept for a plain x: an access races with many.
func (d *Detector) siteOfX(x *rec) site {
	c := &d.xSite
	if x.kind.atomic() {
		return x.site()
	}
	if c.org != x.org || c.kind != x.kind || c.line != x.line {
		c.org, c.kind, c.line, c.site = x.org, x.kind, x.line, x.site()
	}
	return c.site
}

// recentSites is how many pairs of sites a Detector keeps at hand.
const recentSites = 4

// recentSite looks k up among the pairs of sites last found, the latest
// first.
func (d *Detector) recentSite(k *siteKey) (int, bool) {
	for n := range recentSites {
		e := &d.lastSites[(d.lastSite+recentSites-n)%recentSites]
		if e.set && e.k == *k {
			return e.i, true
		}
	}
	return 0, false
}

// reported is the set of earlier accesses reported against the access
// being checked: a list while short, a map once an access races with many
// (a host write over the loads of a whole grid), so that each repeat
// costs a lookup, not a pass over the list.
type reported struct {
	list []*rec
	set  map[*rec]struct{}
}

// reportedList is how long the list of reported grows before a map
// takes over.
const reportedList = 16

// add adds w and reports whether it was not there yet.
func (p *reported) add(w *rec) bool {
	if p.set != nil {
		if _, ok := p.set[w]; ok {
			return false
		}
		p.set[w] = struct{}{}
		return true
	}
	for _, r := range p.list {
		if r == w {
			return false
		}
	}
	p.list = append(p.list, w)
	if len(p.list) > reportedList {
		p.set = make(map[*rec]struct{}, 2*len(p.list))
		for _, r := range p.list {
			p.set[r] = struct{}{}
		}
	}
	return true
}

// reset empties the set for the next access.
func (p *reported) reset() {
	clear(p.list)
	p.list, p.set = p.list[:0], nil
}

// labelOf is *l, or the zero label for nil; a lane's label that
// Detector.label left without its name gets it ([sim.LaneLabel]).
func labelOf(l *actor.Label) actor.Label {
	switch {
	case l == nil:
		return actor.Label{}
	case l.Kind == actor.LaneTask && l.Name == "":
		return sim.LaneLabel(&sim.Access{Device: l.Device, Kernel: l.Kernel, Launch: l.Launch, Block: l.Block, Lane: l.Lane})
	}
	return *l
}

// explain names the missing edge between w and x. It looks for the latest
// signal communication that came after w in w's thread and before x in x's
// thread: one existed but did not synchronise (and says why), or none did
// (a barrier or wait is missing).
func (d *Detector) explain(w, x *rec, t *thread) string {
	why := d.unordered(w, x, t)
	if w.kind.atomic() && x.kind.atomic() {
		if !sameBytes(w, x) {
			return fmt.Sprintf("both accesses are strong, but of different bytes (%d-byte accesses at +%#x and %d-byte at +%#x): mixed-size or partially overlapping strong accesses are not morally strong, so nothing but an order between them keeps them from racing; and %s",
				w.unitSize(), w.off, x.unitSize(), x.off, why)
		}
		return fmt.Sprintf("both accesses are strong, but their scopes (%s and %s) do not both include the other's thread, so they are not morally strong; and %s",
			signal.Scope(w.scope), signal.Scope(x.scope), why)
	}
	return why
}

// unordered names the missing happens-before edge between w and x.
func (d *Detector) unordered(w, x *rec, t *thread) string {
	lo := max(0, len(d.comms)-commRing)
	for i := len(d.comms) - 1; i >= lo; i-- {
		c := d.comms[i]
		if !c.writer.knows(w.ep) || !t.knows(c.reader.ep) {
			continue
		}
		return describeComm(c, w)
	}
	if w.org.device != x.org.device {
		return fmt.Sprintf("no signal from device %d made after the first access was received by device %d before the second: nothing orders them (a barrier or a wait is missing)",
			w.org.device, x.org.device)
	}
	if w.shared {
		return fmt.Sprintf("two threads of block %d, and no bar.sync or other barrier between them orders them", w.org.block)
	}
	return fmt.Sprintf("both on device %d, and no stream order, kernel boundary, __syncthreads or signal orders them", w.org.device)
}

func describeComm(c *comm, w *rec) string {
	wr, rd := c.writer.access(), c.reader.access()
	var why []string
	switch {
	case wr.Order.Releases():
	case c.writer.fence == nil:
		why = append(why, fmt.Sprintf("the %s is %s (no release)", signalOp(wr), wr.Order))
	case !w.ep.before(c.writer.fence):
		why = append(why, fmt.Sprintf("the %s is %s, which publishes only what preceded the writer's last fence (or its kernel's launch), and the first access came later",
			signalOp(wr), wr.Order))
	}
	switch {
	case rd.Order.Acquires():
	case !rd.RMW:
		why = append(why, fmt.Sprintf("the %s is %s (no acquire: a volatile or relaxed load of a flag acquires nothing; load it with ld.acquire, or fence after it)", signalOp(rd), rd.Order))
	default:
		why = append(why, fmt.Sprintf("the %s is %s (no acquire)", signalOp(rd), rd.Order))
	}
	if need := neededBy(c.writer.org, c.reader.org); wr.Scope < need || rd.Scope < need {
		why = append(why, fmt.Sprintf("scopes %s and %s do not both reach %s", wr.Scope, rd.Scope, need))
	}
	if len(why) == 0 {
		why = append(why, "the release did not carry the first access")
	}
	return fmt.Sprintf("no release/acquire at system scope between device %d's %s (%s, %s) and device %d's %s (%s, %s) of %v: %s",
		wr.Device, signalOp(wr), wr.Order, wr.Scope, rd.Device, signalOp(rd), rd.Order, rd.Scope,
		rd.Addr, strings.Join(why, "; "))
}
