package race

import (
	"testing"

	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/signal"
)

// TestWriteClockIsSharedUntilTheThreadLearns: the records of a thread's
// relaxed atomic writes share one clock until the thread learns something, and
// knows still answers exactly for the thread's own events (which the
// shared clock lags behind).
func TestWriteClockIsSharedUntilTheThreadLearns(t *testing.T) {
	th := &thread{slot: 1, vc: vclock{3, 5}}
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
	th.learn(vclock{4})
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
	fence := vclock{2, 2}
	rel := addRelease(nil, a, fence)
	if len(rel) != 1 || len(rel[0].vcs) != 1 || !same(rel[0].vcs[0], fence) {
		t.Fatalf("a released clock was copied: %v", rel)
	}
	if got := addRelease(rel, a, vclock{1, 2}); &got[0] != &rel[0] {
		t.Fatal("a release that adds nothing made a new list")
	}
	other := vclock{1, 3}
	got := addRelease(rel, a, other)
	if len(rel[0].vcs) != 1 || len(got[0].vcs) != 2 || !same(got[0].vcs[0], fence) || !same(got[0].vcs[1], other) {
		t.Fatalf("adding a second writer's clock: %v from %v", got, rel)
	}
	var learned vclock
	got[0].learnInto(&learned)
	if want := (vclock{2, 3}); !learned.leq(want) || !want.leq(learned) {
		t.Fatalf("an acquire learns %v, want %v", learned, want)
	}
	later := vclock{3, 3}
	if got = addRelease(got, a, later); len(got[0].vcs) != 1 || !same(got[0].vcs[0], later) {
		t.Fatalf("a clock holding the others did not replace them: %v", got[0].vcs)
	}
	b := a
	b.Device = 1
	if got = addRelease(rel, b, other); len(got) != 2 || len(rel) != 1 || !same(got[1].vcs[0], other) {
		t.Fatalf("a new place: got %v from %v", got, rel)
	}
	rel = nil
	want := vclock{}
	for i := range maxReleaseClocks + 1 {
		v := make(vclock, maxReleaseClocks+1)
		v[i] = 1
		want.join(v)
		rel = addRelease(rel, a, v)
	}
	if len(rel[0].vcs) != 1 || !rel[0].vcs[0].leq(want) || !want.leq(rel[0].vcs[0]) {
		t.Fatalf("past %d clocks: %v, want one clock %v", maxReleaseClocks, rel[0].vcs, want)
	}
}
