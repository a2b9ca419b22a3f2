package race

import (
	"slices"
	"testing"

	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/signal"
)

// TestWriteClockIsSharedUntilTheThreadLearns: the records of a thread's
// relaxed atomic writes share one clock until the thread learns something, and
// knows still answers exactly for the thread's own events (which the
// shared clock lags behind).
func TestWriteClockIsSharedUntilTheThreadLearns(t *testing.T) {
	th := &thread{slot: 1, vc: clockOf(3, 5)}
	var recs []*rec
	for range 3 {
		th.step()
		recs = append(recs, &rec{ep: th.now(), strong: &strong{vc: th.writeClock()}})
	}
	if &recs[0].vc[0] != &recs[2].vc[0] {
		t.Fatal("writes of a thread that learned nothing do not share their clock")
	}
	if !recs[2].knows(epoch{1, 8}) || recs[1].knows(epoch{1, 8}) || !recs[1].knows(epoch{0, 3}) || recs[1].knows(epoch{0, 4}) {
		t.Fatalf("knows is wrong: records %v %v", recs[1], recs[2])
	}
	th.learn(clockOf(4))
	th.step()
	r := &rec{ep: th.now(), strong: &strong{vc: th.writeClock()}}
	if &r.vc[0] == &recs[0].vc[0] || !r.knows(epoch{0, 4}) {
		t.Fatalf("a thread that learned an event keeps writing the old clock %v", r.vc)
	}
}

// TestAddReleaseSharesClocks: a released clock is kept by reference,
// never copied; a release that adds nothing returns the list itself; one
// that adds something returns a new list and leaves the old one (which
// other granules may share) as it was; a clock the new one holds is
// dropped; past maxReleaseClocks the clocks are joined into one; an
// acquire learns the join of them all.
func TestAddReleaseSharesClocks(t *testing.T) {
	a := sim.Access{Device: 0, Scope: signal.System}
	fence := clockOf(2, 2)
	rel := addRelease(nil, &a, fence)
	if len(rel) != 1 || len(rel[0].vcs) != 1 || !same(rel[0].vcs[0], fence) {
		t.Fatalf("a released clock was copied: %v", rel)
	}
	if got := addRelease(rel, &a, clockOf(1, 2)); &got[0] != &rel[0] {
		t.Fatal("a release that adds nothing made a new list")
	}
	other := clockOf(1, 3)
	got := addRelease(rel, &a, other)
	if len(rel[0].vcs) != 1 || len(got[0].vcs) != 2 || !same(got[0].vcs[0], fence) || !same(got[0].vcs[1], other) {
		t.Fatalf("adding a second writer's clock: %v from %v", got, rel)
	}
	var learned vclock
	got[0].learnInto(&learned)
	if want := (clockOf(2, 3)); !learned.leq(want) || !want.leq(learned) {
		t.Fatalf("an acquire learns %v, want %v", learned, want)
	}
	later := clockOf(3, 3)
	if got = addRelease(got, &a, later); len(got[0].vcs) != 1 || !same(got[0].vcs[0], later) {
		t.Fatalf("a clock holding the others did not replace them: %v", got[0].vcs)
	}
	b := a
	b.Device = 1
	if got = addRelease(rel, &b, other); len(got) != 2 || len(rel) != 1 || !same(got[1].vcs[0], other) {
		t.Fatalf("a new place: got %v from %v", got, rel)
	}
	rel = nil
	want := clockOf()
	for i := range maxReleaseClocks + 1 {
		v := clockOf()
		v.set(i, 1)
		want.join(v)
		rel = addRelease(rel, &a, v)
	}
	if len(rel[0].vcs) != 1 || !rel[0].vcs[0].leq(want) || !want.leq(rel[0].vcs[0]) {
		t.Fatalf("past %d clocks: %v, want one clock %v", maxReleaseClocks, rel[0].vcs, want)
	}
}

// TestForkedThreadsShareTheirParentsClock: lanes forked from a block share
// its snapshot until one needs a clock of its own; stepping counts in the
// lane's own component without touching the snapshot; a lane that learns
// something copies it first (its siblings and the snapshot stay as they
// were); joining a lane that learned nothing gives the parent the lane's
// own events only, and one that learned gives it everything.
func TestForkedThreadsShareTheirParentsClock(t *testing.T) {
	parent := &thread{slot: 0, vc: clockOf(7, 0, 0, 4)}
	snap := parent.clock().clone()
	a, b := &thread{slot: 1, parent: parent}, &thread{slot: 2, parent: parent}
	a.share(snap)
	b.share(snap)
	a.step()
	a.step()
	b.step()
	if &a.vc[0] != &snap[0] || a.get(1) != 2 || b.get(2) != 1 || snap.get(1) != 0 || snap.get(2) != 0 {
		t.Fatalf("stepping a lane copied or changed the snapshot: a %v (own %d), b %v (own %d), snapshot %v", a.vc, a.own, b.vc, b.own, snap)
	}
	if !a.knows(epoch{0, 7}) || a.knows(epoch{0, 8}) || !a.knows(epoch{1, 2}) || a.knows(epoch{1, 3}) {
		t.Fatal("a sharing lane knows the wrong events")
	}
	b.learn(clockOf(0, 0, 0, 9))
	if &b.vc[0] == &snap[0] || b.get(3) != 9 || b.get(2) != 1 || snap.get(3) != 4 || a.get(3) != 4 {
		t.Fatalf("a lane that learned: %v; its sibling %v; the snapshot %v", b.vc, a.vc, snap)
	}
	join := func(c *thread) { // as Detector.join does
		c.step()
		c.joinParent()
	}
	join(a)
	if parent.get(1) != 3 || parent.get(3) != 4 {
		t.Fatalf("joining a lane that learned nothing: parent %v", parent.vc)
	}
	join(b)
	if parent.get(2) != 2 || parent.get(3) != 9 || parent.get(1) != 3 {
		t.Fatalf("joining a lane that learned: parent %v", parent.vc)
	}
}

// TestRecObservers: a strong write tells every thread that observed it,
// the first one kept apart from the others, from those that did not.
func TestRecObservers(t *testing.T) {
	r := &atomicRec{}
	r.rec.strong = &r.st
	observed := []int{1500, 3, 1500, 64, 0, 3}
	for _, s := range observed {
		r.rec.observe(s)
	}
	for s := range 1600 {
		want := slices.Contains(observed, s)
		if got := r.rec.observedBy(s); got != want {
			t.Errorf("observedBy(%d) = %v, want %v", s, got, want)
		}
	}
	if r.st.seen != 1501 || r.st.seenMore == nil {
		t.Errorf("first observer %d and the others %v, want slot 1500 first", r.st.seen-1, r.st.seenMore)
	}
}
