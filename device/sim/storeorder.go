package sim

import "fmt"

// Store order. Two strong stores of a thread to different locations may
// become visible to other threads in the other order unless a release or
// fence between them orders them; a store of another thread that does
// not know the first of them may then land before it. A kernel run gets
// these outcomes by placing a strong store (not a read-modify-write) in
// its location's coherence order anywhere after the newest entry its
// thread knows (its view: stores it read or wrote there, stores that
// happen before it through release/acquire, fences, barriers and the
// kernel's start), not always at the end: half the time, as a seeded
// decision, at a uniformly chosen earlier place, when there is one. That
// is the view-based model's rule for a write (the new store must follow
// every store of its location it happens after or read); an entry a
// read-modify-write made keeps the store it read right before it. A store
// placed before newer ones changes no bytes: memory holds the newest
// store, which plain loads, read-modify-writes and the host read.
//
// The clear-then-set handshake is the shape this reaches: a thread clears
// its own flag and then sets a peer's, with no fence between; the peer,
// having read the set with no acquire, answers by setting the first
// flag, and that answer may be placed before the clear, so the clear
// wins and the flag is lost. With a fence between the clear and the set
// (and a fence or acquire on the peer's side after its read) the peer
// knows the clear and its answer follows it.
//
// Stamps number stores in the order they ran, so a history placed this
// way is not in stamp order. A thread's floor in a location (the stamp
// of the newest store it read there) then hides, as a stamp, every entry
// before the newest entry with a stamp at or below it, which may hide
// the entry it read too: that only hides stores. The race detector takes
// a store's report as the word's latest write; reads name the store they
// returned unless it is the one that ran last ([history.from]), so the
// detector synchronises them with the right store.

// placeStore returns where in h a strong store of the thread of v goes
// (an index of h.ents; len(h.ents) for the end): after the newest entry
// the thread knows, and not right before an entry a read-modify-write
// made.
func (w *World) placeStore(v *weakView, h *history) int {
	end := len(h.ents)
	var at [WeakHistory]int
	n := 0
	for p := v.visible(h) + 1; p < end; p++ {
		if !h.ents[p].rmw {
			at[n] = p
			n++
		}
	}
	if n == 0 {
		return end
	}
	if r := w.weakRand().IntN(2 * n); r < n {
		return at[r]
	}
	return end
}

// LostStore is a strong store placed in its location's coherence order
// before the location's newest store although it ran after it, with
// another value: no read that knows the newest store can see it. A
// thread that spins for it spins forever ([SpinError].Lost).
type LostStore struct {
	Line  int    // the PTX line of the lost store (0: a Go twin's)
	Value uint64 // what it stored
	Under int    // the PTX line of the newest store, which ran before it
}

func (l LostStore) String() string {
	return fmt.Sprintf("the store of %#x at PTX line %d ran after the store at PTX line %d but was placed before it (store order), which erased it", l.Value, l.Line, l.Under)
}

// lostStores returns the lost stores (see [LostStore]) of the locations
// of segs, oldest first.
func lostStores(segs []segment) []LostStore {
	var out []LostStore
	for _, sg := range segs {
		eachWord(sg, func(slot **history) {
			for h := *slot; h != nil; h = h.next {
				if !h.overlaps(sg) {
					continue
				}
				top := h.newest()
				for i := range h.ents[:len(h.ents)-1] {
					if e := &h.ents[i]; !e.base && e.stamp > top.stamp && e.val != top.val {
						out = append(out, LostStore{Line: int(e.line), Value: e.val, Under: int(top.line)})
					}
				}
			}
		})
	}
	return out
}
