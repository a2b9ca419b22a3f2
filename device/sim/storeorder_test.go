package sim

import (
	"slices"
	"testing"

	"github.com/symmem/symmem/signal"
)

// TestStorePlacement: a strong store goes after the newest store of its
// location its thread knows, sometimes before newer ones it does not
// know (then the bytes keep the newest, the thread that made the newest
// never reads it, and a spin on the location names it as lost), never
// before one it knows, one of its own, or right before a
// read-modify-write's store.
func TestStorePlacement(t *testing.T) {
	w := weakWorld(t, 5)
	const clearLine, answerLine = 23, 38
	placed := 0
	for trial := 0; trial < 40; trial++ {
		ph := &physical{id: 1, data: make([]byte, 16)}
		sg := segment{phys: ph, off: 8, b: ph.data[8:16]}
		storeN(sg.b, 7)
		var a, b weakView
		a.start(&w.weak, w.weak.stamp, place{lane: 0})
		b.start(&w.weak, w.weak.stamp, place{lane: 1})
		// a clears the flag; b, not knowing the clear, sets it.
		if _, newest := w.weakStore(&a, sg, 8, 0, signal.Relaxed, signal.System, nil, clearLine); !newest {
			t.Fatal("the first store of a location was placed before another")
		}
		storeN(sg.b, 0)
		_, newest := w.weakStore(&b, sg, 8, 1, signal.Relaxed, signal.System, nil, answerLine)
		if newest {
			storeN(sg.b, 1)
			if lost := lostStores([]segment{sg}); len(lost) != 0 {
				t.Fatalf("lost %v with the stores in the order they ran", lost)
			}
			continue
		}
		placed++
		if got := loadN(sg.b); got != 0 {
			t.Fatalf("a store placed before the newest wrote the bytes: %d", got)
		}
		for i := 0; i < 20; i++ {
			if v, _ := w.weakLoad(&a, sg, 8, signal.Relaxed, signal.System); v != 0 {
				t.Fatalf("the clearing thread read %d, a store placed before its own", v)
			}
		}
		lost := lostStores([]segment{sg})
		if want := (LostStore{Line: answerLine, Value: 1, Under: clearLine}); len(lost) != 1 || lost[0] != want {
			t.Fatalf("lost %v, want [%v]", lost, want)
		}
		// A store of a thread goes after its own earlier one, and one of
		// a thread that knows every store so far goes last.
		if _, newest := w.weakStore(&b, sg, 8, 2, signal.Relaxed, signal.System, nil, 0); newest {
			storeN(sg.b, 2)
		}
		var order []uint64
		for _, e := range histOf(sg, 8).ents {
			order = append(order, e.val)
		}
		if !slices.Contains(order, 2) || slices.Index(order, 2) < slices.Index(order, 1) {
			t.Fatalf("coherence order %v: a thread's store before its own earlier one", order)
		}
		var c weakView
		c.start(&w.weak, w.weak.stamp, place{lane: 2})
		if _, newest := w.weakStore(&c, sg, 8, 3, signal.Relaxed, signal.System, nil, 0); !newest {
			t.Fatal("a store was placed before one its thread knows")
		}
		storeN(sg.b, 3)
	}
	if placed == 0 || placed == 40 {
		t.Errorf("the answer went before the clear in %d of 40 trials, want some but not all", placed)
	}
	// Nothing goes between a read-modify-write and the store it read.
	for trial := 0; trial < 40; trial++ {
		ph := &physical{id: 2, data: make([]byte, 16)}
		sg := segment{phys: ph, off: 0, b: ph.data[0:8]}
		var a, b weakView
		a.start(&w.weak, w.weak.stamp, place{lane: 0})
		b.start(&w.weak, w.weak.stamp, place{lane: 1})
		carried, _ := w.weakRMW(&a, sg, 8, signal.Relaxed, signal.System)
		w.weakStore(&a, sg, 8, 1, signal.Relaxed, signal.System, carried, 0)
		storeN(sg.b, 1)
		if _, newest := w.weakStore(&b, sg, 8, 2, signal.Relaxed, signal.System, nil, 0); !newest {
			t.Fatal("a store was placed between a read-modify-write and the store it read")
		}
		storeN(sg.b, 2)
	}
}
