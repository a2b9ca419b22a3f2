package memmodel

import (
	"fmt"
	"sort"
)

// check examines one reads-from choice: every barrier schedule, fence-SC
// order and coherence order, recording the outcome of each consistent one.
func (x *explorer) check(g *graph, rf []int) error {
	n := len(g.ev)
	// No-Thin-Air: reads-from and dependencies are acyclic.
	rfDep := newRel(n)
	for r, w := range rf {
		if w >= 0 {
			rfDep.set(w, r)
		}
	}
	for i, e := range g.ev {
		if e.thread < 0 {
			continue
		}
		f := g.first[e.thread]
		for d := e.deps; d != 0; d &= d - 1 {
			k := 0
			for d>>k&1 == 0 {
				k++
			}
			rfDep.set(f+k, i)
		}
	}
	if !rfDep.acyclic() {
		x.res.Candidates++
		return x.budget()
	}

	// Observation: morally strong reads-from, extended through atomic
	// read-modify-writes.
	obs1 := newRel(n)
	for r, w := range rf {
		if w >= 0 && g.ms.has(w, r) {
			obs1.set(w, r)
		}
	}
	rmw := newRel(n)
	for r, w := range g.rmwW {
		if w >= 0 {
			rmw.set(r, w)
		}
	}
	obs := obs1.clone()
	step := rmw.compose(obs1)
	for {
		next := obs.compose(step)
		next.union(obs1)
		if equal(next, obs) {
			break
		}
		obs = next
	}

	// Synchronization: release pattern; observation; acquire pattern, with
	// morally strong ends.
	sync := newRel(n)
	for w := 0; w < n; w++ {
		for r := 0; r < n; r++ {
			if !obs.has(w, r) {
				continue
			}
			for a := 0; a < n; a++ {
				if !x.releasePattern(g, a, w) {
					continue
				}
				for b := 0; b < n; b++ {
					if g.ms.has(a, b) && x.acquirePattern(g, r, b) {
						sync.set(a, b)
					}
				}
			}
		}
	}

	base0 := g.po.clone()
	base0.union(sync)
	// A quick necessary test: causality from program order and
	// synchronization alone must not contradict reads-from.
	{
		b := base0.clone()
		b.close()
		cause := x.causality(g, b, obs)
		for r, w := range rf {
			if w >= 0 && cause.has(r, w) {
				x.res.Candidates++
				return x.budget()
			}
		}
	}

	scheds, err := x.barrierSchedules(g)
	if err != nil {
		return err
	}
	// Fence-SC order: orient every morally strong pair of sc fences of
	// different threads.
	var fpairs [][2]int
	for a := 0; a < n; a++ {
		for b := a + 1; b < n; b++ {
			ea, eb := &g.ev[a], &g.ev[b]
			if ea.kind == evFence && eb.kind == evFence && ea.sem == SC && eb.sem == SC && ea.thread != eb.thread && g.ms.has(a, b) {
				fpairs = append(fpairs, [2]int{a, b})
			}
		}
	}
	if len(fpairs) > 20 {
		return fmt.Errorf("too many sc fences (%d pairs) to order", len(fpairs))
	}
	// Every barrier schedule and fence-SC order is examined: races depend
	// on them.
	for _, sb := range scheds {
		for mask := 0; mask < 1<<len(fpairs); mask++ {
			sf := newRel(n)
			for i, p := range fpairs {
				if mask>>i&1 == 0 {
					sf.set(p[0], p[1])
				} else {
					sf.set(p[1], p[0])
				}
			}
			base := base0.clone()
			base.union(sb)
			base.union(sf)
			base.close()
			cause := x.causality(g, base, obs)
			ok, err := x.coherence(g, rf, base, cause, sf)
			if err != nil {
				return err
			}
			if ok && !x.live {
				x.races(g, cause)
			}
		}
	}
	return nil
}

// observesMemory reports whether a location is observed (its final value
// depends on the coherence order).
func (x *explorer) observesMemory() bool {
	for _, o := range x.obs {
		if o.Thread < 0 {
			return true
		}
	}
	return false
}

func (x *explorer) budget() error {
	if x.res.Candidates > x.opts.MaxCandidates {
		return fmt.Errorf("more than %d candidate executions: the program is too large for exhaustive exploration", x.opts.MaxCandidates)
	}
	return nil
}

// spinsOnLast reports whether every read of a spin loop's last round reads
// a write that no write of its location follows in coherence order: the
// value a fair execution eventually reads forever.
func spinsOnLast(g *graph, rf []int, co rel) bool {
	for r := range g.ev {
		if !g.ev[r].spin {
			continue
		}
		w := rf[r]
		for v := range g.ev {
			if co.has(w, v) {
				return false
			}
		}
	}
	return true
}

// causality is the causality order from the base causality order cb: the
// order proxies preserve (preserved), after an optional observation.
// Without aliases or proxies the base order is used whole: every axiom
// reads causality between memory operations of one location only, where
// the two agree.
func (x *explorer) causality(g *graph, cb, obs rel) rel {
	pp := cb
	if x.proxies {
		pp = x.preserved(g, cb)
	}
	cause := pp.clone()
	cause.union(obs.compose(pp))
	return cause
}

// preserved is the part of the base causality order cb that proxies
// preserve, between memory operations of one physical location:
//   - both generic, on one generic address;
//   - both of one proxy, in one CTA, on one generic address;
//   - on one generic address, from a left end to a right end in cb: the
//     left end is the first operation if it is generic, or a proxy fence
//     of its proxy and CTA after it; the right end is the second operation
//     if generic, or a proxy fence of its proxy and CTA before it;
//   - on any address of the location, from a left end through a
//     fence.proxy.alias to a right end.
func (x *explorer) preserved(g *graph, cb rel) rel {
	n := len(g.ev)
	out := newRel(n)
	var fences, aliasFences []int
	for i := range g.ev {
		if e := &g.ev[i]; e.kind == evFence && e.thread >= 0 {
			if e.proxy == ProxyAlias {
				aliasFences = append(aliasFences, i)
			} else {
				fences = append(fences, i)
			}
		}
	}
	sameCTA := func(a, b *event) bool {
		ta, tb := &x.prog.Threads[a.thread], &x.prog.Threads[b.thread]
		return ta.GPU == tb.GPU && ta.CTA == tb.CTA
	}
	// ends lists the left (after) or right (before) ends of memory
	// operation m.
	ends := func(m int, left bool) []int {
		em := &g.ev[m]
		var out []int
		if em.proxy == Generic {
			out = append(out, m)
		}
		for _, f := range fences {
			ef := &g.ev[f]
			if ef.proxy != em.proxy || !sameCTA(ef, em) {
				continue
			}
			if left && cb.has(m, f) || !left && cb.has(f, m) {
				out = append(out, f)
			}
		}
		return out
	}
	lefts, rights := make([][]int, n), make([][]int, n)
	for i := range g.ev {
		if e := &g.ev[i]; e.memory() && e.thread >= 0 {
			lefts[i], rights[i] = ends(i, true), ends(i, false)
		}
	}
	for a := range g.ev {
		ea := &g.ev[a]
		if !ea.memory() || ea.thread < 0 {
			continue
		}
		for b := range g.ev {
			eb := &g.ev[b]
			if !eb.memory() || eb.thread < 0 || eb.loc != ea.loc || !cb.has(a, b) {
				continue
			}
			if preserves(cb, ea, eb, a, b, lefts[a], rights[b], aliasFences, sameCTA) {
				out.set(a, b)
			}
		}
	}
	return out
}

// preserves decides one pair of preserved: memory operations a and b of
// one location with cb(a, b), the left ends of a and right ends of b.
func preserves(cb rel, ea, eb *event, a, b int, lefts, rights, aliasFences []int, sameCTA func(a, b *event) bool) bool {
	if ea.vloc == eb.vloc {
		if ea.proxy == eb.proxy && (ea.proxy == Generic || sameCTA(ea, eb)) {
			return true
		}
		for _, l := range lefts {
			for _, r := range rights {
				if l == a && r == b || cb.has(l, r) {
					return true
				}
			}
		}
	}
	for _, h := range aliasFences {
		for _, l := range lefts {
			if !cb.has(l, h) {
				continue
			}
			for _, r := range rights {
				if cb.has(h, r) {
					return true
				}
			}
		}
	}
	return false
}

func equal(a, b rel) bool {
	for i := range a.b {
		if a.b[i] != b.b[i] {
			return false
		}
	}
	return true
}

// releasePattern: a release write followed (or not) in program order by a
// strong write to its location, or an acq_rel or sc fence followed by a
// strong write.
func (x *explorer) releasePattern(g *graph, a, w int) bool {
	ea, ew := &g.ev[a], &g.ev[w]
	if ew.kind != evWrite || !strong(ew) || ew.thread < 0 {
		return false
	}
	switch ea.kind {
	case evWrite:
		return ea.sem == Release && (a == w || g.po.has(a, w) && ea.vloc == ew.vloc)
	case evFence:
		return (ea.sem == AcqRel || ea.sem == SC) && g.po.has(a, w)
	}
	return false
}

// acquirePattern: a strong read followed (or not) in program order by an
// acquire read of its location, or a strong read followed by an acq_rel or
// sc fence.
func (x *explorer) acquirePattern(g *graph, r, b int) bool {
	er, eb := &g.ev[r], &g.ev[b]
	if er.kind != evRead || !strong(er) {
		return false
	}
	switch eb.kind {
	case evRead:
		return eb.sem == Acquire && (r == b || g.po.has(r, b) && er.vloc == eb.vloc)
	case evFence:
		return (eb.sem == AcqRel || eb.sem == SC) && g.po.has(r, b)
	}
	return false
}

// coherence enumerates the coherence orders allowed by causality for one
// causality order and checks the remaining axioms; it reports whether one
// was consistent. base is the causality order before proxies, which
// orders fences.
func (x *explorer) coherence(g *graph, rf []int, base, cause, sf rel) (bool, error) {
	n := len(g.ev)
	// FenceSC: fence-SC order never contradicts causality.
	for a := 0; a < n; a++ {
		for b := 0; b < n; b++ {
			if sf.has(a, b) && base.has(b, a) {
				x.res.Candidates++
				return false, x.budget()
			}
		}
	}
	// Causality, reads-from half.
	for r, w := range rf {
		if w >= 0 && cause.has(r, w) {
			x.res.Candidates++
			return false, x.budget()
		}
	}
	// Coherence: initial writes first, causally ordered writes in order.
	req := newRel(n)
	var free [][2]int
	for a := 0; a < n; a++ {
		ea := &g.ev[a]
		if ea.kind != evWrite {
			continue
		}
		for b := 0; b < n; b++ {
			eb := &g.ev[b]
			if a == b || eb.kind != evWrite || eb.loc != ea.loc {
				continue
			}
			if ea.thread < 0 || eb.thread >= 0 && cause.has(a, b) {
				req.set(a, b)
			}
		}
	}
	req.close()
	if req.reflexive() {
		x.res.Candidates++
		return false, x.budget()
	}
	for a := 0; a < n; a++ {
		for b := a + 1; b < n; b++ {
			ea, eb := &g.ev[a], &g.ev[b]
			if ea.kind == evWrite && eb.kind == evWrite && g.ms.has(a, b) && !req.has(a, b) && !req.has(b, a) {
				free = append(free, [2]int{a, b})
			}
		}
	}
	if len(free) > 20 {
		return false, fmt.Errorf("too many unordered writes (%d pairs) to order", len(free))
	}
	sort.Slice(free, func(i, j int) bool { return free[i][0] < free[j][0] })
	consistent := false
	for mask := 0; mask < 1<<len(free); mask++ {
		x.res.Candidates++
		if err := x.budget(); err != nil {
			return false, err
		}
		co := req.clone()
		for i, p := range free {
			if mask>>i&1 == 0 {
				co.set(p[0], p[1])
			} else {
				co.set(p[1], p[0])
			}
		}
		co.close()
		if co.reflexive() || !x.consistentWith(g, rf, cause, co) {
			continue
		}
		if x.live {
			if !spinsOnLast(g, rf, co) {
				continue
			}
			x.res.Consistent++
			x.recordHang(g)
			return true, errHang
		}
		x.res.Consistent++
		consistent = true
		x.outcome(g, co)
		if !x.observesMemory() {
			break
		}
	}
	return consistent, nil
}

// consistentWith checks Causality (from-reads half) and Atomicity for one
// coherence order.
func (x *explorer) consistentWith(g *graph, rf []int, cause, co rel) bool {
	n := len(g.ev)
	fr := func(r, w int) bool { return rf[r] >= 0 && co.has(rf[r], w) }
	for r := 0; r < n; r++ {
		if g.ev[r].kind != evRead {
			continue
		}
		for w := 0; w < n; w++ {
			if fr(r, w) && cause.has(w, r) {
				return false
			}
		}
		if wr := g.rmwW[r]; wr >= 0 {
			for w := 0; w < n; w++ {
				if g.ms.has(r, w) && fr(r, w) && g.ms.has(w, wr) && co.has(w, wr) {
					return false
				}
			}
		}
	}
	return true
}
