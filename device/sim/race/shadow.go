package race

import "sort"

// shadow is the shadow memory of one physical allocation: sorted,
// non-overlapping spans of granules that share one state. Simulated
// accesses are large and regular (whole tensors, a block's vectors), so a
// few spans cover what a per-granule table would need millions of entries
// for. Granules no access touched have no span.
type shadow struct {
	spans []span
}

// span is the granules [lo, hi) and their common state.
type span struct {
	lo, hi uint64
	st     state
}

// state is what the detector knows about a granule: the accesses that a
// later access must be checked against (every write not ordered before a
// later write, every read not ordered before a later access of the same
// granule), in the order they happened, and what atomic writes released.
// Slices are never modified in place once shared, so spans split from one
// another may share them.
type state struct {
	accs []*rec
	rel  []release
}

func (s state) equal(o state) bool {
	if len(s.rel) != 0 || len(o.rel) != 0 || len(s.accs) != len(o.accs) {
		return false
	}
	for i, a := range s.accs {
		if o.accs[i] != a {
			return false
		}
	}
	return true
}

// lastWrite is the latest write of the granule, nil when none.
func (s state) lastWrite() *rec {
	for i := len(s.accs) - 1; i >= 0; i-- {
		if s.accs[i].a.Write {
			return s.accs[i]
		}
	}
	return nil
}

// carve splits and fills the spans so that [lo, hi) is covered exactly by
// spans[i:j], and returns i and j.
func (sh *shadow) carve(lo, hi uint64) (int, int) {
	first := sort.Search(len(sh.spans), func(k int) bool { return sh.spans[k].hi > lo })
	var mid []span
	at, k := lo, first
	for at < hi {
		if k < len(sh.spans) && sh.spans[k].lo <= at {
			end := min(sh.spans[k].hi, hi)
			mid = append(mid, span{lo: at, hi: end, st: sh.spans[k].st})
			at = end
			if end == sh.spans[k].hi {
				k++
			}
			continue
		}
		end := hi
		if k < len(sh.spans) {
			end = min(end, sh.spans[k].lo)
		}
		mid = append(mid, span{lo: at, hi: end})
		at = end
	}
	// spans[first:k] are consumed whole; spans[k], if it starts before hi,
	// was consumed up to hi. Keep the parts outside [lo, hi).
	last := k
	if k < len(sh.spans) && sh.spans[k].lo < hi {
		last = k + 1
	}
	var repl []span
	if first < last && sh.spans[first].lo < lo {
		repl = append(repl, span{lo: sh.spans[first].lo, hi: lo, st: sh.spans[first].st})
	}
	i := first + len(repl)
	repl = append(repl, mid...)
	if first < last && sh.spans[last-1].hi > hi {
		repl = append(repl, span{lo: hi, hi: sh.spans[last-1].hi, st: sh.spans[last-1].st})
	}
	// Splice repl in place of spans[first:last], moving the tail once.
	n := len(sh.spans)
	grow := len(repl) - (last - first)
	if grow > 0 {
		sh.spans = append(sh.spans, make([]span, grow)...)
	}
	copy(sh.spans[last+grow:], sh.spans[last:n])
	copy(sh.spans[first:], repl)
	if grow < 0 {
		clear(sh.spans[n+grow : n])
		sh.spans = sh.spans[:n+grow]
	}
	return i, i + len(mid)
}

// merge joins adjacent spans with equal states among spans[i-1:j+1].
func (sh *shadow) merge(i, j int) {
	i, j = max(i-1, 0), min(j+1, len(sh.spans))
	out := i
	for k := i + 1; k < j; k++ {
		if sh.spans[out].hi == sh.spans[k].lo && sh.spans[out].st.equal(sh.spans[k].st) {
			sh.spans[out].hi = sh.spans[k].hi
			continue
		}
		out++
		sh.spans[out] = sh.spans[k]
	}
	if out+1 < j {
		sh.spans = append(sh.spans[:out+1], sh.spans[j:]...)
	}
}
