package memmodel

import "fmt"

// barrierSchedules returns the barrier synchronisation relation of every
// way the run's barriers can complete without a thread waiting forever.
func (x *explorer) barrierSchedules(g *graph) ([]rel, error) {
	n := len(g.ev)
	// Arrivals per barrier, per thread, in program order.
	type arrivals struct {
		key      barrierKey
		byThread map[int][]int
		threads  []int
		quorum   bool
	}
	groups := map[barrierKey]*arrivals{}
	var keys []barrierKey
	for i, e := range g.ev {
		if e.kind != evBarrier {
			continue
		}
		a := groups[e.bar]
		if a == nil {
			a = &arrivals{key: e.bar, byThread: map[int][]int{}}
			groups[e.bar] = a
			keys = append(keys, e.bar)
		}
		if len(a.byThread[e.thread]) == 0 {
			a.threads = append(a.threads, e.thread)
		}
		a.byThread[e.thread] = append(a.byThread[e.thread], i)
		if e.quorum > 0 {
			a.quorum = true
		}
	}
	if len(keys) == 0 {
		return []rel{newRel(n)}, nil
	}
	// Each barrier's possible arrival orders: a list of alternatives, each a
	// set of (arrival, waiter) pairs and an order of arrivals.
	type alt struct {
		sync  [][2]int // arrival -> waiter
		order []int    // arrivals in the order they happen (quorum barriers)
		hang  bool
	}
	var choices [][]alt
	for _, k := range keys {
		a := groups[k]
		if !a.quorum {
			var al alt
			for inst := 0; ; inst++ {
				var members []int
				for _, t := range a.threads {
					if inst < len(a.byThread[t]) {
						members = append(members, a.byThread[t][inst])
					}
				}
				if len(members) == 0 {
					break
				}
				// An instance completes when every thread of the CTA
				// that has a barrier instruction naming it has arrived
				// or ended; one that spins or waits elsewhere forever
				// keeps it waiting.
				complete := true
				for ti := range x.prog.Threads {
					th := &x.prog.Threads[ti]
					if th.GPU == k.gpu && th.CTA == k.cta && g.ends[ti] != finished && len(a.byThread[ti]) <= inst && mayArrive(th, k) {
						complete = false
					}
				}
				for _, m := range members {
					b := g.blockedAt(m)
					if complete && b || !complete && !b && !g.ev[m].arrive {
						return nil, nil // a run waits that is released, or passes a barrier that never completes
					}
				}
				if !complete {
					continue
				}
				for _, m := range members {
					for _, w := range members {
						if m != w && !g.ev[w].arrive {
							al.sync = append(al.sync, [2]int{m, w})
						}
					}
				}
			}
			choices = append(choices, []alt{al})
			continue
		}
		for _, t := range a.threads {
			for _, i := range a.byThread[t] {
				if g.ev[i].quorum == 0 {
					return nil, fmt.Errorf("%s line %d: barrier %d mixes arrivals with and without a thread count", x.prog.Threads[t].Name, g.ev[i].line, k.instance)
				}
			}
		}
		var alts []alt
		total := 0
		for _, t := range a.threads {
			total += len(a.byThread[t])
		}
		if total > 12 {
			return nil, fmt.Errorf("barrier %d has %d arrivals: too many to order", k.instance, total)
		}
		next := map[int]int{}
		var order []int
		var interleave func()
		interleave = func() {
			if len(order) == total {
				al := alt{order: append([]int(nil), order...)}
				for k, w := range order {
					m := max(k+1, int(g.ev[w].quorum))
					if g.ev[w].arrive {
						continue
					}
					// A waiter not released must be a run's last event,
					// blocked; one released must not be.
					if (m > total) != g.blockedAt(w) {
						al.hang = true
						break
					}
					if m > total {
						continue
					}
					for j := 0; j < m; j++ {
						if j != k {
							al.sync = append(al.sync, [2]int{order[j], w})
						}
					}
				}
				if !al.hang {
					alts = append(alts, al)
				}
				return
			}
			for _, t := range a.threads {
				if next[t] < len(a.byThread[t]) {
					order = append(order, a.byThread[t][next[t]])
					next[t]++
					interleave()
					next[t]--
					order = order[:len(order)-1]
				}
			}
		}
		interleave()
		choices = append(choices, alts)
	}
	// Combine one alternative per barrier and keep those without a
	// deadlock: the waits, with program order, must be acyclic.
	var out []rel
	pick := make([]int, len(choices))
	for _, c := range choices {
		if len(c) == 0 {
			return nil, nil
		}
	}
	for {
		sb := newRel(n)
		// Nodes: event i's arrival is i, its release n+i.
		wait := newRel(2 * n)
		for t := range g.first {
			end := len(g.ev)
			if t+1 < len(g.first) {
				end = g.first[t+1]
			}
			for i := g.first[t]; i < end; i++ {
				e := &g.ev[i]
				if e.kind == evBarrier && !e.arrive {
					wait.set(i, n+i)
				}
				if i+1 < end {
					out := i
					if e.kind == evBarrier && !e.arrive {
						out = n + i
					}
					wait.set(out, i+1)
				}
			}
		}
		for ci, c := range choices {
			al := c[pick[ci]]
			for _, p := range al.sync {
				sb.set(p[0], p[1])
				wait.set(p[0], n+p[1])
			}
			for j := 1; j < len(al.order); j++ {
				wait.set(al.order[j-1], al.order[j])
			}
		}
		if wait.acyclic() {
			out = append(out, sb)
		}
		i := 0
		for ; i < len(pick); i++ {
			pick[i]++
			if pick[i] < len(choices[i]) {
				break
			}
			pick[i] = 0
		}
		if i == len(pick) {
			break
		}
	}
	return out, nil
}
