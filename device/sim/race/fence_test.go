package race

import (
	"testing"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/signal"
)

// litmus drives a detector with the events of two kernel blocks, one per
// device (or both on device 0 when sameDev), as the PTX interpreter
// reports them: the detector's view of a litmus test.
type litmus struct {
	t      *testing.T
	d      *Detector
	places map[int]sim.Access // each task's device, launch and block
}

const (
	writer = 11 // task of the writer's block
	reader = 21 // task of the reader's block
)

func newLitmus(t *testing.T, sameDev bool) *litmus {
	w, err := sim.NewWorld(actor.NewScheduler(actor.Config{}), sim.Config{World: 2})
	if err != nil {
		t.Fatal(err)
	}
	l := &litmus{t: t, d: New(w), places: map[int]sim.Access{}}
	l.places[writer] = sim.Access{Device: 0, Launch: 1, Block: 0, Lane: -1}
	l.places[reader] = sim.Access{Device: 1, Launch: 2, Block: 0, Lane: -1}
	if sameDev {
		l.places[reader] = sim.Access{Device: 0, Launch: 1, Block: 1, Lane: -1}
	}
	for _, task := range []int{writer, reader} {
		a := l.places[task]
		a.Kind, a.Task, a.Parent = sim.BlockStart, task, task-1
		l.d.observe(&a)
	}
	return l
}

// at is an event of task at its place.
func (l *litmus) at(task int, a sim.Access) *sim.Access {
	p := l.places[task]
	a.Task, a.Device, a.Launch, a.Block, a.Lane, a.Kernel = task, p.Device, p.Launch, p.Block, -1, "litmus"
	return &a
}

// mem is an access of size bytes at offset off of one shared allocation.
func (l *litmus) mem(task int, kind sim.AccessKind, write bool, off, size uint64, o signal.Order, s signal.Scope) {
	l.d.observe(l.at(task, sim.Access{Kind: kind, Phys: 1, PhysOffset: off, Size: size, Write: write, Order: o, Scope: s}))
}

const (
	x = 0  // data
	f = 16 // flag
	g = 32 // another flag
	z = 48 // unrelated
)

func (l *litmus) st(task int, off uint64) {
	l.mem(task, sim.Store, true, off, 4, signal.Relaxed, signal.Block)
}
func (l *litmus) ld(task int, off uint64) {
	l.mem(task, sim.Load, false, off, 4, signal.Relaxed, signal.Block)
}
func (l *litmus) stRelaxed(task int, off uint64) {
	l.mem(task, sim.Atomic, true, off, 4, signal.Relaxed, signal.System)
}
func (l *litmus) ldRelaxed(task int, off uint64) {
	l.mem(task, sim.Atomic, false, off, 4, signal.Relaxed, signal.System)
}

// fence is a fence of scope s: sc for fence.sc and membar, else acq_rel.
func (l *litmus) fence(task int, s signal.Scope, sc bool) {
	l.d.observe(l.at(task, sim.Access{Kind: sim.Fence, Order: signal.AcqRel, Scope: s, SC: sc}))
}

func (l *litmus) wantRace(race bool) {
	l.t.Helper()
	if got := len(l.d.Races()) > 0; got != race {
		l.t.Fatalf("race reported = %v, want %v (%v)", got, race, l.d.Err())
	}
}

// Shortcut A: a fence releases the thread's accesses before it, not the
// ones between it and the next strong store.
func TestFenceReleasesAtTheFence(t *testing.T) {
	t.Run("data after the fence", func(t *testing.T) {
		l := newLitmus(t, false)
		l.fence(writer, signal.System, true)
		l.st(writer, x)
		l.stRelaxed(writer, f)
		l.ldRelaxed(reader, f)
		l.fence(reader, signal.System, true)
		l.ld(reader, x)
		l.wantRace(true)
	})
	t.Run("data before the fence", func(t *testing.T) {
		l := newLitmus(t, false)
		l.st(writer, x)
		l.fence(writer, signal.System, true)
		l.stRelaxed(writer, f)
		l.ldRelaxed(reader, f)
		l.fence(reader, signal.System, true)
		l.ld(reader, x)
		l.wantRace(false)
	})
}

// Shortcut B: a fence before a read-modify-write does not make the RMW
// acquire; a fence after it does.
func TestFenceBeforeRMWDoesNotAcquire(t *testing.T) {
	rmw := func(l *litmus, task int) { l.mem(task, sim.Atomic, true, f, 4, signal.Relaxed, signal.System) }
	// The reader's membar comes first: in this execution the fence-SC
	// order puts it before the writer's, which orders nothing.
	t.Run("fence before the reader's RMW", func(t *testing.T) {
		l := newLitmus(t, false)
		l.fence(reader, signal.System, true)
		l.st(writer, x)
		l.fence(writer, signal.System, true)
		rmw(l, writer)
		rmw(l, reader)
		l.ld(reader, x)
		l.wantRace(true)
	})
	t.Run("fence after the reader's RMW", func(t *testing.T) {
		l := newLitmus(t, false)
		l.st(writer, x)
		l.fence(writer, signal.System, true)
		rmw(l, writer)
		rmw(l, reader)
		l.fence(reader, signal.System, true)
		l.ld(reader, x)
		l.wantRace(false)
	})
}

// Shortcut C: a fence acquires what every earlier strong read observed, at
// the time of the read, not a re-read of the last one at fence time.
func TestFenceAcquiresEveryEarlierRead(t *testing.T) {
	t.Run("flag read before it was set", func(t *testing.T) {
		l := newLitmus(t, false)
		l.ldRelaxed(reader, f) // reads the old value
		l.stRelaxed(reader, z)
		l.fence(reader, signal.System, true)
		l.st(writer, x)
		l.fence(writer, signal.System, true)
		l.stRelaxed(writer, f)
		l.ld(reader, x)
		l.wantRace(true)
	})
	t.Run("flag read, then another read", func(t *testing.T) {
		l := newLitmus(t, false)
		l.st(writer, x)
		l.fence(writer, signal.System, true)
		l.stRelaxed(writer, f)
		l.ldRelaxed(reader, f)
		l.ldRelaxed(reader, g)
		l.fence(reader, signal.System, true)
		l.ld(reader, x)
		l.wantRace(false)
	})
}

// Shortcut D: a fence's scope and semantics count.
func TestFenceScopeAndSemantics(t *testing.T) {
	mp := func(t *testing.T, s signal.Scope) *litmus {
		l := newLitmus(t, false)
		l.st(writer, x)
		l.fence(writer, s, false)
		l.stRelaxed(writer, f)
		l.ldRelaxed(reader, f)
		l.fence(reader, signal.System, false)
		l.ld(reader, x)
		return l
	}
	t.Run("cta fence across devices", func(t *testing.T) { mp(t, signal.Block).wantRace(true) })
	t.Run("gpu fence across devices", func(t *testing.T) { mp(t, signal.GPU).wantRace(true) })
	t.Run("sys fence across devices", func(t *testing.T) { mp(t, signal.System).wantRace(false) })
	t.Run("gpu fence on one device", func(t *testing.T) {
		l := newLitmus(t, true)
		l.st(writer, x)
		l.fence(writer, signal.GPU, false)
		l.mem(writer, sim.Atomic, true, f, 4, signal.Relaxed, signal.GPU)
		l.mem(reader, sim.Atomic, false, f, 4, signal.Relaxed, signal.GPU)
		l.fence(reader, signal.GPU, false)
		l.ld(reader, x)
		l.wantRace(false)
	})
	// Store buffering: with sc fences, the later fence is ordered after the
	// earlier one, so the first thread's store happens before the second
	// thread's load; acq_rel fences order nothing here.
	sb := func(t *testing.T, sc bool) *litmus {
		l := newLitmus(t, false)
		l.st(writer, x)
		l.fence(writer, signal.System, sc)
		l.st(reader, g)
		l.fence(reader, signal.System, sc)
		l.ld(reader, x)
		return l
	}
	t.Run("sc fences order", func(t *testing.T) { sb(t, true).wantRace(false) })
	t.Run("acq_rel fences do not", func(t *testing.T) { sb(t, false).wantRace(true) })
	t.Run("sc fences of narrow scope do not", func(t *testing.T) {
		l := newLitmus(t, false)
		l.st(writer, x)
		l.fence(writer, signal.GPU, true)
		l.fence(reader, signal.System, true)
		l.ld(reader, x)
		l.wantRace(true)
	})
}

// Strong accesses of different sizes, or partially overlapping, are not
// morally strong: unordered, they race.
func TestMixedSizeStrongAccessesRace(t *testing.T) {
	t.Run("8-byte store, 4-byte load", func(t *testing.T) {
		l := newLitmus(t, false)
		l.mem(writer, sim.Atomic, true, f, 8, signal.Relaxed, signal.System)
		l.mem(reader, sim.Atomic, false, f, 4, signal.Relaxed, signal.System)
		l.wantRace(true)
	})
	t.Run("overlapping 8-byte accesses", func(t *testing.T) {
		l := newLitmus(t, false)
		l.mem(writer, sim.Atomic, true, f, 8, signal.Relaxed, signal.System)
		l.mem(reader, sim.Atomic, false, f+4, 8, signal.Relaxed, signal.System)
		l.wantRace(true)
	})
	t.Run("same bytes", func(t *testing.T) {
		l := newLitmus(t, false)
		l.mem(writer, sim.Atomic, true, f, 8, signal.Relaxed, signal.System)
		l.mem(reader, sim.Atomic, false, f, 8, signal.Relaxed, signal.System)
		l.wantRace(false)
	})
	// Accesses to different bytes of a word share no location: no race,
	// strong or not.
	t.Run("different bytes of one word", func(t *testing.T) {
		l := newLitmus(t, false)
		l.mem(writer, sim.Atomic, true, f, 1, signal.Relaxed, signal.System)
		l.mem(reader, sim.Atomic, true, f+1, 1, signal.Relaxed, signal.System)
		l.mem(writer, sim.Store, true, f+2, 1, signal.Relaxed, signal.System)
		l.mem(reader, sim.Load, false, f+3, 1, signal.Relaxed, signal.System)
		l.wantRace(false)
	})
}

// Observation starts causality: a write a strong read observed (morally
// strong, directly or through a chain of read-modify-writes) precedes the
// reader's later accesses of the same word, as in the counter idiom where
// the last block to increment resets the counter with a plain store.
func TestObservedWritesPrecedeTheReader(t *testing.T) {
	rmw := func(l *litmus, task int) {
		l.d.observe(l.at(task, sim.Access{Kind: sim.Atomic, Phys: 1, PhysOffset: f, Size: 4, Write: true, RMW: true,
			Order: signal.Relaxed, Scope: signal.System}))
	}
	t.Run("last taker resets the counter", func(t *testing.T) {
		l := newLitmus(t, false)
		rmw(l, writer)
		rmw(l, reader)
		l.st(reader, f)
		l.wantRace(false)
	})
	t.Run("through a chain of read-modify-writes", func(t *testing.T) {
		l := newLitmus(t, false)
		l.places[31] = sim.Access{Device: 0, Launch: 3, Block: 0, Lane: -1}
		l.d.observe(&sim.Access{Kind: sim.BlockStart, Task: 31, Parent: 30, Device: 0, Launch: 3, Block: 0, Lane: -1})
		rmw(l, writer)
		rmw(l, 31)
		rmw(l, reader)
		l.st(reader, f)
		l.wantRace(false)
	})
	t.Run("not observed", func(t *testing.T) {
		l := newLitmus(t, false)
		rmw(l, writer)
		l.st(reader, f)
		l.wantRace(true)
	})
	t.Run("observed, but another word", func(t *testing.T) {
		l := newLitmus(t, false)
		l.st(writer, x)
		rmw(l, writer)
		rmw(l, reader)
		l.ld(reader, x)
		l.wantRace(true)
	})
	t.Run("a strong store does not continue the chain", func(t *testing.T) {
		l := newLitmus(t, false)
		l.places[31] = sim.Access{Device: 0, Launch: 3, Block: 0, Lane: -1}
		l.d.observe(&sim.Access{Kind: sim.BlockStart, Task: 31, Parent: 30, Device: 0, Launch: 3, Block: 0, Lane: -1})
		rmw(l, writer)
		l.stRelaxed(31, f)
		rmw(l, reader)
		l.st(reader, f)
		l.wantRace(true)
	})
}

// A strong store reads nothing: overwriting a released flag, then a
// fence, acquires nothing of the release (the model's observation needs a
// read). A strong load of the flag in its place does acquire through the
// fence.
func TestStrongStoreObservesNoRelease(t *testing.T) {
	for _, c := range []struct {
		name string
		read bool
	}{{"strong store, fence, load", false}, {"strong load, fence, load", true}} {
		t.Run(c.name, func(t *testing.T) {
			l := newLitmus(t, false)
			l.st(writer, x)
			l.mem(writer, sim.Atomic, true, f, 4, signal.Release, signal.System)
			if c.read {
				l.ldRelaxed(reader, f)
			} else {
				l.stRelaxed(reader, f)
			}
			l.fence(reader, signal.System, false)
			l.ld(reader, x)
			l.wantRace(!c.read)
		})
	}
}

// TestRelaxedWritesAlikeShareARelease: the relaxed strong writes that a
// thread makes after the same fences on words with no release sequence
// start the same one, and share its list; a new fence or a second writer
// gives a word a list of its own, leaving the others as they were.
func TestRelaxedWritesAlikeShareARelease(t *testing.T) {
	l := newLitmus(t, true)
	rel := func(off uint64) []release { return l.d.shadowOf(1).at(off / granule).releases() }
	l.fence(writer, signal.System, false)
	l.stRelaxed(writer, x)
	l.stRelaxed(writer, f)
	if len(rel(x)) == 0 || !sameRel(rel(x), rel(f)) {
		t.Fatalf("words written alike hold lists %v and %v, want one shared list", rel(x), rel(f))
	}
	shared := rel(x)
	l.fence(writer, signal.System, false)
	l.stRelaxed(writer, g)
	if sameRel(rel(g), shared) || !rel(g)[0].holds(l.d.thread(writer).relFence[signal.System]) {
		t.Fatalf("a write after a new fence took the list of the writes before it")
	}
	l.fence(reader, signal.System, false)
	l.stRelaxed(reader, f)
	if sameRel(rel(f), shared) || !sameRel(rel(x), shared) {
		t.Fatalf("a second writer's store changed the shared list or kept it: f %v, x %v, shared %v", rel(f), rel(x), shared)
	}
	if !rel(f)[len(rel(f))-1].holds(l.d.thread(reader).relFence[signal.System]) {
		t.Fatalf("the second writer's release is not in f's list: %v", rel(f))
	}
	l.wantRace(false)
}
