package sim

import (
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"weak"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/signal"
)

// vectorPTX: block 0 stores {1,1} then {2,2} to x as relaxed system-scope
// vectors; block 1 reads x as one vector and stores what it read at
// out[0..1]. Block 2 spins on flag until block 0, last, sets it.
const vectorPTX = `
.version 8.0
.target sm_90
.address_size 64
.visible .entry vec(.param .u64 vec_param_0)
{
	.reg .b32 %r<8>;
	.reg .b64 %rd<4>;
	.reg .pred %p<3>;
	ld.param.u64 %rd1, [vec_param_0];
	mov.u32 %r1, %ctaid.x;
	setp.eq.u32 %p1, %r1, 1;
	@%p1 bra READ;
	setp.eq.u32 %p1, %r1, 2;
	@%p1 bra SPIN;
	mov.u32 %r2, 1;
	st.relaxed.sys.global.v2.u32 [%rd1], {%r2, %r2};
	mov.u32 %r2, 2;
	st.relaxed.sys.global.v2.u32 [%rd1], {%r2, %r2};
	st.relaxed.sys.global.u32 [%rd1+16], %r2;
	ret;
READ:
	ld.relaxed.sys.global.v2.u32 {%r3, %r4}, [%rd1];
	st.global.u32 [%rd1+8], %r3;
	st.global.u32 [%rd1+12], %r4;
	ret;
SPIN:
	ld.relaxed.sys.global.u32 %r5, [%rd1+16];
	setp.ne.u32 %p2, %r5, 2;
	@%p2 bra SPIN;
	ret;
}
`

// runVector runs vectorPTX with seed and returns the two elements block 1
// read, the trace hash, and the strong vector accesses reported.
func runVector(t *testing.T, seed uint64) ([2]uint32, string, []Access) {
	t.Helper()
	var vecs []Access
	var got [2]uint32
	g := granuleLaunch{src: vectorPTX, entry: "vec", grid: 3, block: 1, zeroed: 32, cfg: Config{Kernels: Kernels{PTX: true}},
		setup: func(w *World) {
			w.Observe(func(a *Access) {
				if a.Kind == Atomic && a.Size == 8 {
					vecs = append(vecs, *a)
				}
			})
		},
		after: func(d device.Device, st device.Stream, p device.Ptr) error {
			if err := d.Synchronize(st); err != nil {
				return err
			}
			var b [8]byte
			if err := d.Read(st, b[:], p+8); err != nil {
				return err
			}
			got = [2]uint32{binary.LittleEndian.Uint32(b[:]), binary.LittleEndian.Uint32(b[4:])}
			return nil
		}}
	s, err := g.run(t, seed)
	if err != nil {
		t.Fatal(err)
	}
	return got, s.Trace().Hash(), vecs
}

// TestWeakVectorElements: the elements of a strong vector load are
// accesses of their own, each reading a store the model allows, so a
// vector read may mix two stores' elements; each vector is reported to
// the race detector as a run of 4-byte strong accesses; the spinning
// block sees the flag eventually; the same seed gives the same values.
func TestWeakVectorElements(t *testing.T) {
	mixed := false
	for seed := uint64(0); seed < 200 && !mixed; seed++ {
		got, _, vecs := runVector(t, seed)
		if got[0] > 2 || got[1] > 2 {
			t.Fatalf("seed %d: read %v, not a stored value", seed, got)
		}
		mixed = got[0] != got[1]
		if len(vecs) != 3 {
			t.Fatalf("seed %d: %d strong 8-byte accesses reported, want 3 (two stores, one load)", seed, len(vecs))
		}
		for _, a := range vecs {
			if a.Unit != 4 {
				t.Fatalf("seed %d: vector access reported with unit %d, want 4", seed, a.Unit)
			}
		}
	}
	if !mixed {
		t.Error("no seed of 200 read elements of two different stores in one vector load")
	}
	a, ha, _ := runVector(t, 7)
	b, hb, _ := runVector(t, 7)
	if a != b || ha != hb {
		t.Errorf("seed 7 twice: %v (trace %s) and %v (trace %s)", a, ha, b, hb)
	}
}

// TestWeakHistory: a location keeps at most WeakHistory strong stores; a
// thread never reads before its own store, nor before what it read; a
// plain store ends the history; bytes changed behind the history (a host
// write) start it again.
func TestWeakHistory(t *testing.T) {
	w := weakWorld(t, 3)
	ph := &physical{id: 1, data: make([]byte, 64)}
	sg := segment{phys: ph, off: 8, b: ph.data[8:16]}
	var writer, reader weakView
	writer.start(&w.weak, w.weak.stamp, place{lane: 0})
	reader.start(&w.weak, w.weak.stamp, place{lane: 1})
	for v := uint64(1); v <= 10; v++ {
		w.weakStore(&writer, sg, 8, v, 0, 2, nil, 0)
		storeN(sg.b, v)
	}
	h := histOf(sg, 8)
	if h == nil || len(h.ents) != WeakHistory || h.newest().val != 10 {
		t.Fatalf("history %+v, want the last %d stores", h, WeakHistory)
	}
	for i := 0; i < 50; i++ {
		if v, _ := w.weakLoad(&writer, sg, 8, 0, 2); v != 10 {
			t.Fatalf("the writer read %d, before its own last store", v)
		}
	}
	last := uint64(0)
	older := false
	for i := 0; i < 50; i++ {
		v, from := w.weakLoad(&reader, sg, 8, 0, 2)
		if v < last || v < 10-WeakHistory+1 {
			t.Fatalf("read %d after %d: back in coherence order, or a dropped store", v, last)
		}
		// Store v was the v-th strong store: its stamp is v. The newest
		// is reported as 0.
		if want := map[bool]uint64{true: 0, false: v}[v == 10]; from != want {
			t.Fatalf("read %d from store %d, want %d", v, from, want)
		}
		older = older || v < 10
		last = v
	}
	if !older {
		t.Error("50 reads of a thread that knew none of the stores never read an older one")
	}
	if last != 10 {
		t.Errorf("50 reads never reached the newest store (last %d)", last)
	}
	// More readers than a history keeps: the one evicted knows what it
	// read, so it still never reads older.
	views := make([]weakView, maxReaders+1)
	for i := range views {
		views[i].start(&w.weak, w.weak.stamp, place{lane: int32(2 + i)})
		views[i].known = 0
		for j := 0; j < 20; j++ {
			if v, _ := w.weakLoad(&views[i], sg, 8, 0, 2); v == 10 {
				break
			}
		}
	}
	if n := len(h.readers); n != maxReaders {
		t.Errorf("%d readers kept, want %d", n, maxReaders)
	}
	for i := range views {
		for j := 0; j < 20; j++ {
			if v, _ := w.weakLoad(&views[i], sg, 8, 0, 2); v != 10 {
				t.Fatalf("reader %d read %d after it read 10", i, v)
			}
		}
	}
	storeN(sg.b, 99) // a write the history did not see
	if v, _ := w.weakLoad(&reader, sg, 8, 0, 2); v != 99 || *ph.weak.wordAt(8, false) != nil {
		t.Errorf("after a host write: read %d, history %v; want 99 and none", v, *ph.weak.wordAt(8, false))
	}
	// The new history's base (99) is no numbered store: a read of it is
	// reported as StoreUnknown.
	w.weakStore(&writer, sg, 8, 5, 0, 2, nil, 0)
	storeN(sg.b, 5)
	base := false
	for i := 0; i < 50 && !base; i++ {
		fresh := weakView{}
		fresh.start(&w.weak, w.weak.stamp, place{lane: 20})
		fresh.known = 0
		v, from := w.weakLoad(&fresh, sg, 8, 0, 2)
		switch {
		case v == 99 && from == StoreUnknown:
			base = true
		case v == 99 || (v == 5 && from != 0):
			t.Fatalf("read %d reported as from store %d", v, from)
		}
	}
	if !base {
		t.Error("50 fresh readers never read the history's base")
	}
	plainStore(sg)
	storeN(sg.b, 6)
	if *ph.weak.wordAt(8, false) != nil {
		t.Error("a plain store left the history")
	}
}

// TestWeakSCFencesBounded: fence.sc records are bounded; a later fence.sc
// knows what the evicted ones knew, and what each morally strong one
// released, but not what a cta-scoped fence of another block did.
func TestWeakSCFencesBounded(t *testing.T) {
	var wm weakMem
	first := weakView{}
	first.start(&wm, wm.stamp, place{dev: 0, launch: 1, block: 0})
	wm.stamp = 5
	first.fence(&wm, 0, true) // cta scope, block 0: stamp 5
	other := weakView{}
	other.start(&wm, wm.stamp, place{dev: 0, launch: 1, block: 1, lane: 0})
	other.known = 0
	other.fence(&wm, 0, true)
	if other.known != 0 {
		t.Errorf("a cta-scoped fence.sc of another block gave %d", other.known)
	}
	sameBlock := weakView{}
	sameBlock.start(&wm, wm.stamp, place{dev: 0, launch: 1, block: 0, lane: 1})
	sameBlock.known = 0
	sameBlock.fence(&wm, 0, true)
	if sameBlock.known != 5 {
		t.Errorf("a cta-scoped fence.sc of the same block gave %d, want 5", sameBlock.known)
	}
	for i := 0; i < maxSC+1; i++ {
		wm.stamp = uint64(10 + i)
		v := weakView{}
		v.start(&wm, wm.stamp, place{dev: 1, launch: uint64(2 + i)})
		v.fence(&wm, 2, true)
	}
	if len(wm.sc) != maxSC || wm.scEvicted < 5 {
		t.Fatalf("%d records, evicted up to %d", len(wm.sc), wm.scEvicted)
	}
	late := weakView{}
	late.start(&wm, wm.stamp, place{dev: 3, launch: 99})
	late.known = 0
	late.fence(&wm, 2, true)
	if late.known != wm.stamp {
		t.Errorf("a system-scoped fence.sc knows %d, want %d (every earlier one)", late.known, wm.stamp)
	}
}

// TestWeakSettleKeepsLaterReads runs one workload of strong stores and
// loads on two worlds of the same seed, settles one of them between two
// launches (no thread of the first reads after it), and checks that every
// load and store of the second launch returns the same in both, with
// more readers than a history keeps (evictions), while the settled
// histories kept only their newest entries and no live view.
func TestWeakSettleKeepsLaterReads(t *testing.T) {
	type result struct{ val, from, stamp uint64 }
	run := func(settle bool) ([]result, *World, *physical) {
		w := weakWorld(t, 11)
		ph := &physical{id: 1, data: make([]byte, 64)}
		rng := rand.New(rand.NewPCG(5, 6))
		var out []result
		launch := func(lanes int) {
			views := make([]weakView, lanes)
			for i := range views {
				views[i].start(&w.weak, w.weak.stamp, place{launch: w.weak.stamp, lane: int32(i)})
			}
			for range 400 {
				v := &views[rng.IntN(lanes)]
				off := uint64(8 * rng.IntN(4))
				sg := segment{phys: ph, off: off, b: ph.data[off : off+8]}
				if rng.IntN(3) == 0 {
					val := rng.Uint64N(1000)
					stamp, newest := w.weakStore(v, sg, 8, val, signal.Release, signal.System, nil, 0)
					if newest {
						storeN(sg.b, val)
					}
					out = append(out, result{val: val, stamp: stamp})
					continue
				}
				val, from := w.weakLoad(v, sg, 8, signal.Relaxed, signal.System)
				out = append(out, result{val: val, from: from})
			}
			for i := range views {
				w.weak.forget(&views[i]) // the launch ends
			}
		}
		launch(12)
		if settle {
			w.weak.settle()
		}
		out = out[:0]
		launch(maxReaders + 4)
		return out, w, ph
	}
	want, _, _ := run(false)
	got, w, ph := run(true)
	if len(got) != len(want) {
		t.Fatalf("%d accesses after the settle, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("access %d after the settle returned %+v, want %+v", i, got[i], want[i])
		}
	}
	// Settled again with no thread live: only the newest entries stay,
	// but where a store placed before the newest ran after it, and no
	// reader names a live view.
	w.weak.since = w.weak.walk
	w.weak.settle()
	collapsed := 0
	for off := uint64(0); off < 32; off += 8 {
		for h := *ph.weak.wordAt(off, false); h != nil; h = h.next {
			top := h.ents[len(h.ents)-1]
			lost := false
			for _, e := range h.ents {
				lost = lost || !e.base && e.stamp > top.stamp
			}
			switch {
			case !lost && len(h.ents) != 1:
				t.Errorf("location %d keeps %d entries after a settle, want its newest", off, len(h.ents))
			case h.nval != top.val:
				t.Errorf("location %d: newest value %d, its entry's %d", off, h.nval, top.val)
			case len(h.ents) == 1:
				collapsed++
			}
			for _, r := range h.readers {
				if w.weak.view(r.view) != nil {
					t.Errorf("location %d names a live view after its threads ended", off)
				}
			}
		}
	}
	if collapsed == 0 {
		t.Error("no history kept its newest entry alone after a settle")
	}
}

// TestWeakSettleKeepsLostStores checks that a settle keeps every entry of
// a history with a store placed before the newest that ran after it (a
// lost store, which lostStores reports), and drops freed allocations.
func TestWeakSettleKeepsLostStores(t *testing.T) {
	w := weakWorld(t, 3)
	ph := &physical{id: 1, data: make([]byte, 16)}
	sg := segment{phys: ph, off: 0, b: ph.data[0:8]}
	var v weakView
	v.start(&w.weak, 0, place{lane: 1})
	for val := uint64(1); val <= 3; val++ {
		w.weakStore(&v, sg, 8, val, signal.Relaxed, signal.System, nil, 0)
		storeN(sg.b, val)
	}
	h := histOf(sg, 8)
	h.ents[1].stamp = h.newest().stamp + 1 // as if placed before the newest
	lost := lostStores([]segment{sg})
	w.weak.settle()
	if len(h.ents) != 4 {
		t.Fatalf("a settle left %d entries of a history with a lost store, want 4", len(h.ents))
	}
	if got := lostStores([]segment{sg}); len(lost) != 1 || !slices.Equal(got, lost) {
		t.Errorf("lost stores %v after a settle, want %v (one)", got, lost)
	}
	ph.weak.freed = true
	w.weak.since = w.weak.walk
	w.weak.settle()
	if len(w.weak.mems) != 0 {
		t.Errorf("a settle kept %d allocations, one of them freed; want none", len(w.weak.mems))
	}
}

// TestWeakReadersDoNotKeepEndedViews checks that a history names its
// readers without holding their views: a view that read a location and
// ended can be collected, a view that takes its slot later does not
// inherit its floor, the ended reader goes when another joins (the two
// live ones inline again), and a list of live readers still full evicts
// the oldest floor, whose view then knows it.
func TestWeakReadersDoNotKeepEndedViews(t *testing.T) {
	var wm weakMem
	h := &history{}
	h.readers = h.inlReader[:0]
	old := new(weakView)
	old.start(&wm, 0, place{lane: 1})
	h.read(&wm, old, 5)
	if got := h.floor(old); got != 5 {
		t.Fatalf("floor %d, want 5", got)
	}
	live := make([]weakView, maxReaders)
	for i := range live {
		live[i].start(&wm, 0, place{lane: int32(3 + i)})
	}
	h.read(&wm, &live[0], 6)
	h.read(&wm, &live[1], 7) // three readers: off the inline ones
	wm.forget(old)
	gone := weak.Make(old)
	old = nil
	runtime.GC()
	if gone.Value() != nil {
		t.Error("a history keeps the view of a thread that ended")
	}
	next := new(weakView)
	next.start(&wm, 0, place{lane: 2})
	if len(wm.views) != maxReaders+1 {
		t.Fatalf("%d view slots, want the ended view's slot reused", len(wm.views))
	}
	if got := h.floor(next); got != 0 {
		t.Errorf("a view in the ended one's slot has its floor %d", got)
	}
	wm.forget(&live[1])
	h.read(&wm, next, 8) // drops the two ended readers
	if len(h.readers) != 2 || h.readers[0].view != live[0].id || h.readers[1].view != next.id {
		t.Fatalf("readers %+v, want live view 0's and the new one's", h.readers)
	}
	if &h.readers[0] != &h.inlReader[0] {
		t.Error("two readers left off the history's inline ones")
	}
	live[1].start(&wm, 0, place{lane: 40}) // a new view again
	for i := 1; i < maxReaders-1; i++ {
		h.read(&wm, &live[i], uint64(10+i))
	}
	if len(h.readers) != maxReaders {
		t.Fatalf("%d readers, want %d", len(h.readers), maxReaders)
	}
	h.read(&wm, &live[maxReaders-1], 30) // full of live ones: evicts live[0] (floor 6)
	if live[0].known != 6 {
		t.Errorf("the evicted reader knows %d, want its floor 6", live[0].known)
	}
	if next.known != 0 || h.floor(next) != 8 {
		t.Errorf("a reader not evicted knows %d and has floor %d, want 0 and 8", next.known, h.floor(next))
	}
}

// TestWeakRereadsGetNewer: a thread's first read of a location with older
// stores it may read returns one of them half the time; reading it again
// right after one did, it returns an older one half as often as the time
// before, so that a spin soon sees the newest; and a read of another
// location in between does not reset that.
func TestWeakRereadsGetNewer(t *testing.T) {
	w := weakWorld(t, 5)
	ph := &physical{id: 1, data: make([]byte, 16)}
	x := segment{phys: ph, off: 0, b: ph.data[0:8]}
	y := segment{phys: ph, off: 8, b: ph.data[8:16]}
	var writer weakView
	writer.start(&w.weak, w.weak.stamp, place{lane: 0})
	for v := uint64(1); v <= WeakHistory; v++ {
		for _, sg := range []segment{x, y} {
			w.weakStore(&writer, sg, 8, v, signal.Relaxed, signal.System, nil, 0)
			storeN(sg.b, v)
		}
	}
	const trials = 40000
	var stale [4]int // stale[k]: trials whose reads 0..k of x all returned older stores
	for i := range trials {
		var v weakView
		v.start(&w.weak, 0, place{lane: int32(1 + i)})
		for k := range stale {
			if k == 2 {
				w.weakLoad(&v, y, 8, signal.Relaxed, signal.System) // another location between
			}
			if got, _ := w.weakLoad(&v, x, 8, signal.Relaxed, signal.System); got == WeakHistory {
				break
			}
			stale[k]++
		}
		w.weak.forget(&v)
	}
	// The chance of an older store: 1/2, then 1/4, 1/8 and 1/16.
	for k, n := range stale {
		prev := trials
		if k > 0 {
			prev = stale[k-1]
		}
		want := 1 / float64(int(2)<<k)
		if got := float64(n) / float64(prev); got < want*0.7 || got > want*1.3 {
			t.Errorf("read %d returned an older store in %d of %d trials (%.3f), want about %.3f", k+1, n, prev, got, want)
		}
	}
}

// TestWeakDropsFreedAllocationsWithoutASettle: an allocation freed while
// no settle runs (launches overlap on every device) leaves the weak
// memory's list when the next allocation gets its first history.
func TestWeakDropsFreedAllocationsWithoutASettle(t *testing.T) {
	w := weakWorld(t, 4)
	var v weakView
	v.start(&w.weak, 0, place{lane: 1})
	var prev *physical
	for i := range 10 {
		ph := newPhysical(uint64(i+1), 0, pageSize)
		ph.touch(0, 8)
		sg := segment{phys: ph, off: 0, b: ph.data[0:8]}
		w.weakStore(&v, sg, 8, 1, signal.Relaxed, signal.System, nil, 0)
		storeN(sg.b, 1)
		if len(w.weak.mems) != 1 || w.weak.mems[0] != ph.weak {
			t.Fatalf("allocation %d: the list holds %d allocations, want the live one alone", i, len(w.weak.mems))
		}
		if prev != nil && prev.weak != nil {
			t.Fatalf("allocation %d: the freed one keeps its histories", i)
		}
		ph.free()
		prev = ph
	}
}

// weakWorld is a world of one device under a scheduler of seed, for tests
// of its weak memory alone.
func weakWorld(t *testing.T, seed uint64) *World {
	t.Helper()
	w, err := NewWorld(actor.NewScheduler(actor.Config{Seed: seed}), Config{World: 1})
	if err != nil {
		t.Fatal(err)
	}
	return w
}
