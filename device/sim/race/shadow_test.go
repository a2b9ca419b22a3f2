package race

import (
	"math/rand/v2"
	"testing"
)

// TestShadowCarve: after carving random ranges the spans stay sorted and
// disjoint, cover exactly the granules ever carved, and every granule keeps
// the state last written to it.
func TestShadowCarve(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var sh shadow
	const size = 64
	want := make([]*rec, size) // per granule: the last access stored there
	for step := range 2000 {
		lo := rng.Uint64N(size)
		hi := lo + 1 + rng.Uint64N(min(size-lo, 9))
		i, j := sh.carve(lo, hi)
		if j-i < 1 || sh.spans[i].lo != lo || sh.spans[j-1].hi != hi {
			t.Fatalf("step %d: carve(%d, %d) = spans %d..%d: %v", step, lo, hi, i, j, sh.spans)
		}
		x := &rec{id: uint64(step)}
		if rng.IntN(3) == 0 && step > 0 {
			x = want[lo] // sometimes store what is already there, to exercise merging
			if x == nil {
				x = &rec{id: uint64(step)}
			}
		}
		for k := i; k < j; k++ {
			sh.spans[k].st = state{accs: []*rec{x}}
		}
		for g := lo; g < hi; g++ {
			want[g] = x
		}
		sh.merge(i, j)
		for k, s := range sh.spans {
			if s.lo >= s.hi || (k > 0 && sh.spans[k-1].hi > s.lo) {
				t.Fatalf("step %d: spans not sorted and disjoint: %v", step, sh.spans)
			}
			if k > 0 && sh.spans[k-1].hi == s.lo && sh.spans[k-1].st.equal(s.st) {
				t.Fatalf("step %d: equal neighbours left unmerged: %v", step, sh.spans)
			}
		}
		covered := make([]*rec, size)
		for _, s := range sh.spans {
			for g := s.lo; g < s.hi; g++ {
				covered[g] = s.st.accs[0]
			}
		}
		for g := range want {
			if covered[g] != want[g] {
				t.Fatalf("step %d: granule %d holds %v, want %v", step, g, covered[g], want[g])
			}
		}
	}
}
