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
		recs = append(recs, &rec{ep: epoch{th.slot, th.vc.get(th.slot)}, strong: &strong{vc: th.writeClock()}})
	}
	if &recs[0].vc[0] != &recs[2].vc[0] {
		t.Fatal("writes of a thread that learned nothing do not share their clock")
	}
	if !recs[2].knows(epoch{1, 8}) || recs[1].knows(epoch{1, 8}) || !recs[1].knows(epoch{0, 3}) || recs[1].knows(epoch{0, 4}) {
		t.Fatalf("knows is wrong: records %v %v", recs[1], recs[2])
	}
	th.learn(vclock{4})
	th.step()
	r := &rec{ep: epoch{th.slot, th.vc.get(th.slot)}, strong: &strong{vc: th.writeClock()}}
	if &r.vc[0] == &recs[0].vc[0] || !r.knows(epoch{0, 4}) {
		t.Fatalf("a thread that learned an event keeps writing the old clock %v", r.vc)
	}
}

// TestAddReleaseSharesClocks: a released clock is kept without a copy; a
// release that adds nothing returns the list itself; one that adds
// something returns a new list and leaves the old one (which other
// granules may share) as it was; two granules whose sequences merge the
// same two clocks share the merged one.
func TestAddReleaseSharesClocks(t *testing.T) {
	d := &Detector{}
	a := sim.Access{Device: 0, Scope: signal.System}
	fence := vclock{2, 2}
	rel := d.addRelease(nil, a, fence)
	if len(rel) != 1 || &rel[0].vc[0] != &fence[0] {
		t.Fatalf("a released clock was copied: %v", rel)
	}
	if got := d.addRelease(rel, a, vclock{1, 2}); &got[0] != &rel[0] {
		t.Fatal("a release that adds nothing made a new list")
	}
	next := vclock{1, 3}
	got := d.addRelease(rel, a, next)
	if want := (vclock{2, 3}); !got[0].vc.leq(want) || !want.leq(got[0].vc) {
		t.Fatalf("merged release = %v, want %v", got[0].vc, want)
	}
	if rel[0].vc[1] != 2 || fence[1] != 2 || next[0] != 1 {
		t.Fatalf("merging modified the shared list or a released clock: %v %v %v", rel[0].vc, fence, next)
	}
	again := d.addRelease(append([]release(nil), rel...), a, next)
	if &again[0].vc[0] != &got[0].vc[0] {
		t.Fatal("a second granule merging the same two clocks made its own copy")
	}
	b := a
	b.Device = 1
	got = d.addRelease(rel, b, next)
	if len(got) != 2 || len(rel) != 1 || &got[1].vc[0] != &next[0] {
		t.Fatalf("a new place: got %v from %v", got, rel)
	}
}
