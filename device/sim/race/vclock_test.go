package race

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestClockMatchesPlain: random sequences of set, join, clone, get and leq
// over a few clocks of up to four chunks give what plain component slices
// (the reference: clone copies them whole) give, whatever chunks the clocks share; a clone never changes when the
// clock it was taken of does, nor that clock when the clone does.
func TestClockMatchesPlain(t *testing.T) {
	const clocks, comps = 6, 4 * chunkLen
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 1))
		vs := make([]vclock, clocks)
		ps := make([][]uint32, clocks)
		for i := range ps {
			ps[i] = make([]uint32, comps)
		}
		for step := range 300 {
			i, j := r.IntN(clocks), r.IntN(clocks)
			switch op := r.IntN(4); op {
			case 0:
				k, c := r.IntN(comps), uint32(r.IntN(50))
				if r.IntN(2) == 0 {
					k %= chunkLen // crowd one chunk
				}
				vs[i].set(k, c)
				ps[i][k] = c
			case 1:
				vs[i].join(vs[j])
				for k := range ps[i] {
					ps[i][k] = max(ps[i][k], ps[j][k])
				}
			case 2:
				vs[i] = vs[j].clone()
				ps[i] = slices.Clone(ps[j])
			case 3:
				want := true
				for k := range ps[i] {
					if ps[i][k] > ps[j][k] {
						want = false
					}
				}
				if got := vs[i].leq(vs[j]); got != want {
					t.Fatalf("seed %d step %d: leq of clocks %d, %d is %t, want %t", seed, step, i, j, got, want)
				}
			}
			for n := range clocks {
				for k := range comps {
					if got := vs[n].get(k); got != ps[n][k] {
						t.Fatalf("seed %d step %d: clock %d component %d is %d, want %d", seed, step, n, k, got, ps[n][k])
					}
				}
				if vs[n].get(comps+chunkLen) != 0 {
					t.Fatalf("seed %d step %d: clock %d has a component past its end", seed, step, n)
				}
			}
		}
	}
}

// TestCloneSharesChunks: a clone holds the chunks of its clock; writing
// one component afterwards copies that chunk alone; a join that the other
// clock dominates on a chunk takes that chunk rather than a copy.
func TestCloneSharesChunks(t *testing.T) {
	var v vclock
	v.set(3*chunkLen+1, 7)
	v.set(1, 2)
	c := v.clone()
	if len(c) != 4 || c[0] != v[0] || c[3] != v[3] {
		t.Fatal("a clone does not share its clock's chunks")
	}
	v.set(2, 9)
	if c[0] == v[0] || c[3] != v[3] || c.get(2) != 0 || v.get(2) != 9 || v.get(1) != 2 {
		t.Fatal("writing after a clone did not copy exactly the chunk written")
	}
	var w vclock
	w.set(5, 1)
	w.join(c)
	if w[3] != c[3] || w.get(3*chunkLen+1) != 7 || w.get(5) != 1 || w.get(1) != 2 {
		t.Fatal("a join did not take the chunks the other clock dominates")
	}
	w.set(3*chunkLen+2, 4)
	if c.get(3*chunkLen+2) != 0 || v.get(3*chunkLen+2) != 0 {
		t.Fatal("writing a chunk taken by a join changed the clocks it came from")
	}
}

// clockOf returns the clock whose first components are cs.
func clockOf(cs ...uint32) vclock {
	var v vclock
	for i, c := range cs {
		if c != 0 {
			v.set(i, c)
		}
	}
	v.grow(len(cs))
	return v
}
