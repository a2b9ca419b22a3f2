package memmodel

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Options bound the exploration.
type Options struct {
	// LoopBound is the number of backward jumps one thread may take in a
	// run (default 2).
	LoopBound int
	// MaxCandidates bounds the candidate executions examined (default
	// 20 million); more is an error.
	MaxCandidates int
}

func (o Options) withDefaults() Options {
	if o.LoopBound <= 0 {
		o.LoopBound = 2
	}
	if o.MaxCandidates <= 0 {
		o.MaxCandidates = 20_000_000
	}
	return o
}

// Observable names a value of the final state: a register of a thread, or
// a location when Thread is -1.
type Observable struct {
	Thread int
	Name   string
}

// Result is what the exploration found.
type Result struct {
	// Outcomes are the distinct final states, one value per observable, in
	// increasing order.
	Outcomes [][]int64
	// Candidates is the number of candidate executions examined (reads-from
	// choices with their barrier, fence-SC and coherence orders).
	Candidates int
	// Consistent is the number of candidate executions the axioms accept.
	Consistent int
	// CutRuns counts thread runs dropped at the loop bound.
	CutRuns int
	// Races are the data races of the allowed executions: two accesses of
	// a location by different threads, one a write, neither morally strong
	// with the other nor before it in causality order. Each pair of
	// instructions is listed once, in the order found.
	Races []Race
}

// Access names one memory access of a race: its thread, source line and
// kind.
type Access struct {
	Thread int
	Line   int
	Write  bool
	Loc    string
}

// Race is a pair of conflicting accesses of one execution that are
// unordered and not morally strong.
type Race struct {
	First, Second Access
}

type explorer struct {
	prog     *Program
	opts     Options
	locs     []string
	locIndex map[string]int // a name (location or alias) to its physical location
	vloc     map[string]int // a name to its generic address
	proxies  bool           // whether the program has aliases or non-generic proxies
	// live is set when deciding termination: runs may end spinning or
	// blocked, and an execution in which some thread does is sought.
	live  bool
	hang  []ThreadEnd // the hang found, when live
	obs   []Observable
	res   Result
	seen  map[string]bool
	raced map[Race]bool
}

// Explore enumerates the executions of p the PTX model allows and returns
// the final values of obs in each.
func Explore(p *Program, obs []Observable, opts Options) (*Result, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	x := newExplorer(p, opts)
	x.obs = obs
	for _, o := range obs {
		if o.Thread == -1 {
			if _, ok := x.locIndex[o.Name]; !ok {
				return nil, fmt.Errorf("location %q is not in the program", o.Name)
			}
		} else if o.Thread < 0 || o.Thread >= len(p.Threads) {
			return nil, fmt.Errorf("thread %d of %s is not in the program", o.Thread, o.Name)
		}
	}
	runs, err := x.allRuns()
	if err != nil {
		return nil, err
	}
	if err := x.combine(runs); err != nil {
		return nil, err
	}
	sort.Slice(x.res.Outcomes, func(i, j int) bool {
		return slices.Compare(x.res.Outcomes[i], x.res.Outcomes[j]) < 0
	})
	return &x.res, nil
}

// newExplorer indexes p's locations, aliases and generic addresses.
func newExplorer(p *Program, opts Options) *explorer {
	x := &explorer{prog: p, opts: opts, locIndex: map[string]int{}, vloc: map[string]int{}, seen: map[string]bool{}, raced: map[Race]bool{}}
	x.locs = p.locations()
	for i, l := range x.locs {
		x.locIndex[l] = i
		x.vloc[l] = i
	}
	aliases := make([]string, 0, len(p.Aliases))
	for n := range p.Aliases {
		aliases = append(aliases, n)
	}
	sort.Strings(aliases)
	for _, n := range aliases {
		x.locIndex[n] = x.locIndex[p.physical(n)]
		x.proxies = true
	}
	for _, n := range aliases {
		g := p.generic(n)
		if _, ok := x.vloc[g]; !ok {
			x.vloc[g] = len(x.vloc)
		}
		x.vloc[n] = x.vloc[g]
	}
	for _, t := range p.Threads {
		for _, in := range t.Code {
			if in.Proxy != Generic {
				x.proxies = true
			}
		}
	}
	return x
}

// allRuns computes every thread's runs over the values each location can
// hold. The values are a fixpoint: starting from the initial values, the
// values written by the runs are added until nothing changes, keeping only
// values that can be derived with no more writes to each location than the
// threads can make. That bound starts from the program text and is
// tightened to what the runs of a fixpoint write, which computes a new
// fixpoint, until it no longer shrinks.
func (x *explorer) allRuns() ([][]run, error) {
	nl := len(x.locs)
	maxWrites := make([]int, nl)
	for _, t := range x.prog.Threads {
		for _, in := range t.Code {
			if in.Op == OpStore || in.Op == OpAtom {
				maxWrites[x.locIndex[in.Loc]] += x.opts.LoopBound + 1
			}
		}
	}
	for {
		all, cut, counted, err := x.fixpoint(maxWrites)
		if err != nil {
			return nil, err
		}
		if slices.Equal(counted, maxWrites) {
			x.res.CutRuns = cut
			return all, nil
		}
		for l := range maxWrites {
			maxWrites[l] = min(maxWrites[l], counted[l])
		}
	}
}

// fixpoint computes the runs over the least domain closed under the
// runs' writes, with maxWrites bounding derivations. It returns the runs,
// how many were cut at the loop bound, and the most writes to each
// location the runs make together.
func (x *explorer) fixpoint(maxWrites []int) ([][]run, int, []int, error) {
	const maxRounds, maxValues = 64, 64
	nl := len(x.locs)
	dom := make([]domain, nl)
	for i, l := range x.locs {
		dom[i] = domain{vals: []int64{x.prog.Init[l]}, hops: [][]int{make([]int, nl)}}
	}
	for round := 0; round < maxRounds; round++ {
		all := make([][]run, len(x.prog.Threads))
		cut := 0
		changed := false
		counted := make([]int, nl)
		for ti := range x.prog.Threads {
			rs, c, err := x.threadRuns(ti, dom, maxWrites)
			if err != nil {
				return nil, 0, nil, err
			}
			all[ti], cut = rs, cut+c
			most := make([]int, nl)
			for _, r := range rs {
				per := make([]int, nl)
				for _, e := range r.events {
					if e.kind != evWrite {
						continue
					}
					per[e.loc]++
					d := &dom[e.loc]
					k := slices.Index(d.vals, e.val)
					if k < 0 {
						d.vals = append(d.vals, e.val)
						d.hops = append(d.hops, e.hops)
						changed = true
						if len(d.vals) > maxValues {
							return nil, 0, nil, fmt.Errorf("location %s takes more than %d values", x.locs[e.loc], maxValues)
						}
						continue
					}
					for l, n := range e.hops {
						if n < d.hops[k][l] {
							d.hops[k] = slices.Clone(d.hops[k])
							d.hops[k][l] = n
							changed = true
						}
					}
				}
				for l, n := range per {
					most[l] = max(most[l], n)
				}
			}
			for l := range counted {
				counted[l] += most[l]
			}
		}
		if !changed {
			return all, cut, counted, nil
		}
	}
	return nil, 0, nil, fmt.Errorf("the values of the locations do not settle after %d rounds", maxRounds)
}

// combine examines every choice of one run per thread.
func (x *explorer) combine(runs [][]run) error {
	pick := make([]int, len(runs))
	combos := 1
	for ti, r := range runs {
		if len(r) == 0 {
			return nil // a thread never finishes: no execution
		}
		if combos > x.opts.MaxCandidates/len(r) {
			return fmt.Errorf("%s and the threads before it have more than %d combinations of runs: the program is too large for exhaustive exploration",
				x.prog.Threads[ti].Name, x.opts.MaxCandidates)
		}
		combos *= len(r)
	}
	// What each run reads and writes, to skip choices in which a read has
	// no store of its value.
	type locVal struct {
		loc int
		val int64
	}
	reads := make([][][]locVal, len(runs))
	writes := make([][]map[locVal]bool, len(runs))
	for ti, rs := range runs {
		reads[ti] = make([][]locVal, len(rs))
		writes[ti] = make([]map[locVal]bool, len(rs))
		for ri, r := range rs {
			w := map[locVal]bool{}
			for _, e := range r.events {
				switch e.kind {
				case evRead:
					if e.val != x.prog.Init[x.locs[e.loc]] {
						reads[ti][ri] = append(reads[ti][ri], locVal{e.loc, e.val})
					}
				case evWrite:
					w[locVal{e.loc, e.val}] = true
				}
			}
			writes[ti][ri] = w
		}
	}
	feasible := func() bool {
		for ti, ri := range pick {
			for _, lv := range reads[ti][ri] {
				found := false
				for tj, rj := range pick {
					if writes[tj][rj][lv] {
						found = true
						break
					}
				}
				if !found {
					return false
				}
			}
		}
		return true
	}
	allFinished := func() bool {
		for ti, ri := range pick {
			if runs[ti][ri].end != finished {
				return false
			}
		}
		return true
	}
	for {
		if feasible() && !(x.live && allFinished()) {
			if err := x.execution(runs, pick); err != nil {
				return err
			}
		}
		i := 0
		for ; i < len(pick); i++ {
			pick[i]++
			if pick[i] < len(runs[i]) {
				break
			}
			pick[i] = 0
		}
		if i == len(pick) {
			return nil
		}
	}
}

// graph is one choice of runs with its events and fixed relations.
type graph struct {
	ev     []event
	first  []int // first event index of each thread
	regs   []map[string]int64
	po, ms rel
	rmwW   []int // the write of a read's read-modify-write, or -1
	ends   []end // how each thread's run ends
}

// blockedAt reports whether event i is a barrier its thread waits at
// forever: the last event of a run that ends blocked.
func (g *graph) blockedAt(i int) bool {
	t := g.ev[i].thread
	if t < 0 || g.ends[t] != blocked {
		return false
	}
	last := len(g.ev) - 1
	if t+1 < len(g.first) {
		last = g.first[t+1] - 1
	}
	return i == last
}

// execution examines every reads-from choice for one choice of runs.
func (x *explorer) execution(runs [][]run, pick []int) error {
	g := &graph{}
	for l := range x.locs {
		g.ev = append(g.ev, event{kind: evWrite, thread: -1, loc: l, vloc: l, val: x.prog.Init[x.locs[l]], sem: Weak})
	}
	for ti, p := range pick {
		g.first = append(g.first, len(g.ev))
		g.ev = append(g.ev, runs[ti][p].events...)
		g.regs = append(g.regs, runs[ti][p].regs)
		g.ends = append(g.ends, runs[ti][p].end)
	}
	n := len(g.ev)
	// Each read's candidate writes: same location, same value.
	var reads []int
	var cands [][]int
	for i, e := range g.ev {
		if e.kind != evRead {
			continue
		}
		var c []int
		for j, w := range g.ev {
			if w.kind == evWrite && w.loc == e.loc && w.val == e.val && !(e.rmw && j == i+1) {
				c = append(c, j)
			}
		}
		if len(c) == 0 {
			return nil
		}
		reads = append(reads, i)
		cands = append(cands, c)
	}
	g.po, g.ms = newRel(n), newRel(n)
	g.rmwW = make([]int, n)
	for i := range g.ev {
		g.rmwW[i] = -1
		a := &g.ev[i]
		if a.kind == evRead && a.rmw {
			g.rmwW[i] = i + 1
		}
		for j := range g.ev {
			b := &g.ev[j]
			if i == j {
				continue
			}
			if a.thread >= 0 && a.thread == b.thread && i < j {
				g.po.set(i, j)
			}
			if x.morallyStrong(a, b) {
				g.ms.set(i, j)
			}
		}
	}
	rf := make([]int, n)
	for i := range rf {
		rf[i] = -1
	}
	var choose func(k int) error
	choose = func(k int) error {
		if k == len(reads) {
			return x.check(g, rf)
		}
		for _, w := range cands[k] {
			rf[reads[k]] = w
			if err := choose(k + 1); err != nil {
				return err
			}
		}
		return nil
	}
	return choose(0)
}

// inScope reports whether an operation of thread a at scope s includes
// thread b.
func (x *explorer) inScope(s Scope, a, b int) bool {
	ta, tb := &x.prog.Threads[a], &x.prog.Threads[b]
	switch s {
	case CTA:
		return ta.GPU == tb.GPU && ta.CTA == tb.CTA
	case GPU:
		return ta.GPU == tb.GPU
	}
	return true
}

func strong(e *event) bool {
	switch e.kind {
	case evFence:
		return true
	case evRead, evWrite:
		return e.sem != Weak
	}
	return false
}

// morallyStrong is the model's morally-strong relation: two operations
// of one proxy (an alias fence has none), memory operations of one
// generic address, related in program order or both strong with scopes
// that include each other's thread.
func (x *explorer) morallyStrong(a, b *event) bool {
	if a.kind == evBarrier || b.kind == evBarrier {
		return false
	}
	if a.proxy != b.proxy || a.proxy == ProxyAlias {
		return false
	}
	if a.memory() && b.memory() && a.vloc != b.vloc {
		return false
	}
	if a.thread < 0 || b.thread < 0 {
		return false
	}
	if a.thread == b.thread {
		return true
	}
	return strong(a) && strong(b) && x.inScope(a.scope, a.thread, b.thread) && x.inScope(b.scope, b.thread, a.thread)
}

// outcome records the final state of a consistent execution: registers
// from the runs, locations from the coherence-maximal writes.
func (x *explorer) outcome(g *graph, co rel) {
	vals := make([][]int64, len(x.obs))
	for i, o := range x.obs {
		if o.Thread >= 0 {
			vals[i] = []int64{g.regs[o.Thread][o.Name]}
			continue
		}
		l := x.locIndex[o.Name]
		for w := range g.ev {
			if g.ev[w].kind != evWrite || g.ev[w].loc != l {
				continue
			}
			last := true
			for v := range g.ev {
				if co.has(w, v) {
					last = false
					break
				}
			}
			if last && !slices.Contains(vals[i], g.ev[w].val) {
				vals[i] = append(vals[i], g.ev[w].val)
			}
		}
	}
	out := make([]int64, len(x.obs))
	var emit func(i int)
	emit = func(i int) {
		if i == len(out) {
			var b strings.Builder
			for _, v := range out {
				fmt.Fprintf(&b, "%d,", v)
			}
			if k := b.String(); !x.seen[k] {
				x.seen[k] = true
				x.res.Outcomes = append(x.res.Outcomes, slices.Clone(out))
			}
			return
		}
		for _, v := range vals[i] {
			out[i] = v
			emit(i + 1)
		}
	}
	emit(0)
}

// races records the data races of a consistent execution with causality
// order cause.
func (x *explorer) races(g *graph, cause rel) {
	for a := range g.ev {
		ea := &g.ev[a]
		if ea.thread < 0 || (ea.kind != evRead && ea.kind != evWrite) {
			continue
		}
		for b := a + 1; b < len(g.ev); b++ {
			eb := &g.ev[b]
			if eb.thread < 0 || eb.thread == ea.thread || eb.loc != ea.loc || (eb.kind != evRead && eb.kind != evWrite) {
				continue
			}
			if ea.kind != evWrite && eb.kind != evWrite {
				continue
			}
			if g.ms.has(a, b) || cause.has(a, b) || cause.has(b, a) {
				continue
			}
			r := Race{
				First:  Access{Thread: ea.thread, Line: ea.line, Write: ea.kind == evWrite, Loc: x.locs[ea.loc]},
				Second: Access{Thread: eb.thread, Line: eb.line, Write: eb.kind == evWrite, Loc: x.locs[eb.loc]},
			}
			if !x.raced[r] {
				x.raced[r] = true
				x.res.Races = append(x.res.Races, r)
			}
		}
	}
}
