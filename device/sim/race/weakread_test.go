package race

import (
	"fmt"
	"strings"
	"testing"

	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/signal"
)

// strongAt is a strong access of size bytes at off, in units of unit
// bytes (0: one unit): a write numbered from stamp on, or a read whose
// units returned the stores from names (nil: the newest).
func (l *litmus) strongAt(task int, write bool, off, size, unit uint64, o signal.Order, stamp uint64, from []uint64) {
	l.d.observe(l.at(task, sim.Access{Kind: sim.Atomic, Phys: 1, PhysOffset: off, Size: size, Unit: unit, Write: write,
		Order: o, Scope: signal.System, Stamp: stamp, From: from}))
}

// publish is the writer of message passing over a flag of size bytes in
// units of unit bytes (0: one unit): it stores the flag relaxed (stores
// numbered from 1), then the data x, then the flag with release (stores
// numbered from release).
func (l *litmus) publish(size, unit, release uint64) {
	l.strongAt(writer, true, f, size, unit, signal.Relaxed, 1, nil)
	l.st(writer, x)
	l.strongAt(writer, true, f, size, unit, signal.Release, release, nil)
}

// fromName shows a From list in a subtest's name.
func fromName(from []uint64) string {
	if from == nil {
		return "newest"
	}
	if len(from) > 4 {
		return fmt.Sprintf("%d entries", len(from))
	}
	names := make([]string, len(from))
	for i, s := range from {
		names[i] = fmt.Sprint(s)
		if s == sim.StoreUnknown {
			names[i] = "unknown"
		}
	}
	return strings.Join(names, ",")
}

// Message passing whose flag load returns an older store than the newest
// (the simulator's weak reads): the writer stores the flag relaxed
// (store 1), then the data, then the flag with release (store 2). An
// acquire of store 2 orders the data; an acquire of store 1, which
// releases nothing the data needs, orders nothing, so the reader's data
// load races; so does one of a store the detector does not know.
func TestAcquireOfOlderStore(t *testing.T) {
	for _, c := range []struct {
		from []uint64
		race bool
	}{
		{nil, false},
		{[]uint64{2}, false}, // the newest, named
		{[]uint64{1}, true},
		{[]uint64{sim.StoreUnknown}, true},
		{[]uint64{77}, true}, // older than the detector keeps
		{append([]uint64{1}, make([]uint64, 999)...), true}, // more entries than units: ignored
	} {
		t.Run(fromName(c.from), func(t *testing.T) {
			l := newLitmus(t, false)
			l.publish(4, 0, 2)
			l.strongAt(reader, false, f, 4, 0, signal.Acquire, 0, c.from)
			l.ld(reader, x)
			l.wantRace(c.race)
		})
	}
}

// The same with a relaxed flag load and a fence after it (an acquire
// pattern): the fence acquires only what the store read released.
func TestFenceAfterReadOfOlderStore(t *testing.T) {
	for _, c := range []struct {
		from []uint64
		race bool
	}{{nil, false}, {[]uint64{1}, true}} {
		t.Run(fromName(c.from), func(t *testing.T) {
			l := newLitmus(t, false)
			l.publish(4, 0, 2)
			l.strongAt(reader, false, f, 4, 0, signal.Relaxed, 0, c.from)
			l.fence(reader, signal.System, false)
			l.ld(reader, x)
			l.wantRace(c.race)
		})
	}
}

// A strong read observes the write whose store it read, and only that
// one: after reading the writer's second store, the reader's plain store
// to the flag comes after both in causality order; after reading the
// first, it is unordered with the second, a race.
func TestReadObservesTheStoreItRead(t *testing.T) {
	for _, c := range []struct {
		from []uint64
		race bool
	}{{nil, false}, {[]uint64{2}, false}, {[]uint64{1}, true}} {
		t.Run(fromName(c.from), func(t *testing.T) {
			l := newLitmus(t, false)
			l.strongAt(writer, true, f, 4, 0, signal.Relaxed, 1, nil)
			l.strongAt(writer, true, f, 4, 0, signal.Relaxed, 2, nil)
			l.strongAt(reader, false, f, 4, 0, signal.Relaxed, 0, c.from)
			l.st(reader, f)
			l.wantRace(c.race)
		})
	}
}

// A vector's units each read a store of their own: the writer stores the
// two-word flag relaxed (stores 1 and 2), the data, then the flag with
// release (stores 3 and 4). The reader's acquire synchronises when any
// unit read a releasing store, whichever unit.
func TestVectorUnitsReadTheirOwnStores(t *testing.T) {
	for _, c := range []struct {
		from []uint64
		race bool
	}{
		{nil, false},
		{[]uint64{0, 2}, false},
		{[]uint64{1, 0}, false},
		{[]uint64{3, 2}, false},
		{[]uint64{1, 2}, true},
		{[]uint64{sim.StoreUnknown, 2}, true},
	} {
		t.Run(fromName(c.from), func(t *testing.T) {
			l := newLitmus(t, false)
			l.publish(8, 4, 3)
			l.strongAt(reader, false, f, 8, 4, signal.Acquire, 0, c.from)
			l.ld(reader, x)
			l.wantRace(c.race)
		})
	}
}

// The detector keeps maxPrior writes before a granule's latest: a read of
// the oldest store a weak read may return is still known; one older is
// not, and learns nothing.
func TestPriorWritesBounded(t *testing.T) {
	for _, c := range []struct {
		read uint64
		race bool
	}{{2, false}, {1, true}} {
		t.Run(fmt.Sprint("store ", c.read), func(t *testing.T) {
			l := newLitmus(t, false)
			l.st(writer, x)
			l.strongAt(writer, true, f, 4, 0, signal.Release, 1, nil)
			l.strongAt(writer, true, f, 4, 0, signal.Release, 2, nil)
			for s := uint64(3); s < 3+maxPrior; s++ {
				l.strongAt(writer, true, f, 4, 0, signal.Relaxed, s, nil)
			}
			l.strongAt(reader, false, f, 4, 0, signal.Acquire, 0, []uint64{c.read})
			l.ld(reader, x)
			l.wantRace(c.race)
		})
	}
	t.Run("a plain store ends them", func(t *testing.T) {
		l := newLitmus(t, false)
		l.st(writer, x)
		l.strongAt(writer, true, f, 4, 0, signal.Release, 1, nil)
		l.st(writer, f)
		l.strongAt(writer, true, f, 4, 0, signal.Relaxed, 2, nil)
		l.strongAt(reader, false, f, 4, 0, signal.Acquire, 0, []uint64{1})
		l.ld(reader, x)
		for _, r := range l.d.Races() {
			if r.Offset == x {
				return
			}
		}
		t.Fatalf("a read of a store before a plain store learned its release: no race on the data (%v)", l.d.Err())
	})
}

// TestStampsKeepNewestReads feeds the random event streams of
// TestShadowMatchesSpans twice, once as they are and once with their
// strong writes numbered (the detector then keeps prior writes): reads
// that return the newest store learn the same either way, so both find
// the same races. A third run makes some strong reads return older or
// unknown stores: the shadow's reference counts still hold.
func TestStampsKeepNewestReads(t *testing.T) {
	for seed := uint64(0); seed < 6; seed++ {
		plain := newGen(seed).stream()
		stamped := append([]sim.Access(nil), plain...)
		older := append([]sim.Access(nil), plain...)
		rng := newGen(seed + 1000).rng
		next := uint64(1)
		var recent []uint64
		for i, a := range stamped {
			if a.Kind != sim.Atomic {
				continue
			}
			if a.Write {
				stamped[i].Stamp, older[i].Stamp = next, next
				n := a.Size / unit(&a)
				for k := range n {
					recent = append(recent, next+k)
				}
				next += n
				continue
			}
			if a.RMW || len(recent) == 0 {
				continue
			}
			from := make([]uint64, a.Size/unit(&a))
			for k := range from {
				switch rng.IntN(4) {
				case 0:
					from[k] = recent[max(0, len(recent)-1-rng.IntN(8))]
				case 1:
					from[k] = sim.StoreUnknown
				}
			}
			older[i].From = from
		}
		var races [3]string
		for k, stream := range [][]sim.Access{plain, stamped, older} {
			d := newBare(t)
			for _, a := range stream {
				d.observe(&a)
			}
			if err := d.Err(); err != nil {
				races[k] = err.Error()
			}
			d.shadows(func(_ uint64, sh *shadow) { checkRefs(t, sh) })
		}
		if races[0] == "" {
			t.Fatalf("seed %d: the stream made no race: it checks too little", seed)
		}
		if races[0] != races[1] {
			t.Fatalf("seed %d: numbering the writes changed the races:\n%s\nnumbered:\n%s", seed, races[0], races[1])
		}
	}
}
