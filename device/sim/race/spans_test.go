package race

import (
	"sort"

	"github.com/symmem/symmem/device/sim"
)

// This file keeps the detector's earlier shadow memory, sorted spans of
// granules with one state each, as the reference the paged shadow is
// compared with: the same events must give the same races and the same
// per-granule states, spans included.

// spanShadow is the shadow memory of one physical allocation: sorted,
// non-overlapping spans of granules that share one state.
type spanShadow struct {
	spans  []span
	places places
}

// span is the granules [lo, hi) and their common state.
type span struct {
	lo, hi uint64
	st     spanState
}

// spanState is a span's accesses and releases.
type spanState struct {
	accs []*rec
	rel  []release
}

func (s spanState) equal(o spanState) bool {
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

func (s spanState) lastWrite() *rec {
	for i := len(s.accs) - 1; i >= 0; i-- {
		if s.accs[i].write {
			return s.accs[i]
		}
	}
	return nil
}

// carve splits and fills the spans so that [lo, hi) is covered exactly by
// spans[i:j], and returns i and j.
func (sh *spanShadow) carve(lo, hi uint64) (int, int) {
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
func (sh *spanShadow) merge(i, j int) {
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

// spanAccess is the detector's access as it was over spans.
func (d *Detector) spanAccess(mem map[uint64]*spanShadow, a sim.Access) {
	if a.Size == 0 {
		return
	}
	t := d.self(a.Task)
	t.step()
	sh := mem[a.Phys]
	if sh == nil {
		sh = &spanShadow{}
		mem[a.Phys] = sh
	}
	x := d.newRec(&a, t, sh.places.of(&a))
	i, j := sh.carve(a.PhysOffset/granule, (a.PhysOffset+a.Size+granule-1)/granule)
	atomic := a.Kind == sim.Atomic
	if atomic {
		st := &sh.spans[i].st
		switch {
		case a.Write && !a.RMW: // a strong store observes nothing
		case a.Order.Acquires():
			d.acquire(t, st.rel, &a)
		default:
			d.observeRelease(t, st.rel, &a)
		}
		d.communicate(st.lastWrite(), x, &a)
		if a.Write {
			x.vc = t.clock().clone()
			x.fence = t.relFence[a.Scope]
		}
	}
	if atomic && (!a.Write || a.RMW) {
		for k := i; k < j; k++ {
			w := sh.spans[k].st.lastWrite()
			if w == nil || !w.kind.atomic() || conflict(w, x) {
				continue
			}
			if a.RMW && a.Write && k == i {
				x.from = w
			}
			for z, n := w, 0; z != nil && n < maxObserveChain; z, n = z.from, n+1 {
				z.observe(t.slot)
			}
		}
	}
	d.resetPairs()
	for k := i; k < j; k++ {
		st := &sh.spans[k].st
		keep := make([]*rec, 0, len(st.accs)+1)
		for _, y := range st.accs {
			ordered := t.knows(y.ep) || (y.strong != nil && y.observedBy(t.slot))
			if !ordered && (y.write || a.Write) && conflict(y, x) {
				d.report(y, x, t)
			}
			if !ordered || (!a.Write && y.write) {
				keep = append(keep, y)
			}
		}
		st.accs = append(keep, x)
		if a.Write && !atomic {
			st.rel = nil
		}
	}
	if atomic && a.Write {
		sh.spans[i].st.rel = d.release(t, sh.spans[i].st.rel, &a, x.vc)
	}
	sh.merge(i, j)
}
