package ptxcheck

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/symmem/symmem/fuzz"
	"github.com/symmem/symmem/internal/minimize"
)

// DefaultShrinkRuns bounds the runs one shrink takes.
const DefaultShrinkRuns = 100

// DefaultShrinkTime bounds the time one shrink takes: no run starts after
// it (the run going on then ends first).
const DefaultShrinkTime = 60 * time.Second

// ShrinkLimits bound a shrink and report its progress.
type ShrinkLimits struct {
	// Runs bounds the runs (0: DefaultShrinkRuns).
	Runs int
	// Time bounds the time: no run starts once it has passed (0:
	// DefaultShrinkTime).
	Time time.Duration
	// Now is the clock that Time is measured on (nil: time.Now).
	Now func() time.Time
	// Progress, when set, is called after every run of the shrink.
	Progress func(ShrinkProgress)
}

// ShrinkProgress is where a shrink stands after one of its runs.
type ShrinkProgress struct {
	Runs, Budget int           // runs done, and the most it may take
	Elapsed      time.Duration // since the shrink began, on its clock
	Stage        string        // "faults", "world", "blocks", "threads", "repeats" or "decisions"
	Found        bool          // whether the run found the finding
	Size         string        // the smallest case so far (see [Shrunk.Size])
}

// Shrunk is a smaller reproduction of a finding.
type Shrunk struct {
	// Finding is what the reproduction finds: the same kind and sites as
	// the original.
	Finding *Finding
	// Options replay the reproduction exactly (one world, one seed, the
	// fault plan, the shape caps, the repeat counts and, once any were
	// dropped, the scheduling decisions); the other fields are those given
	// to Shrink.
	Options Options
	// Trace is the reproduction's trace hash ("" when the shrink ran
	// nothing that found it, and Options are the original run's).
	Trace string
	Runs  int // runs the shrink took
	// What the original run had: its world and faults; and the decisions
	// of the reduced run before they were dropped (0 when the shrink
	// stopped before it recorded them).
	World, Faults, Decisions int
	// Stopped says why the shrink ended before it tried every reduction:
	// "" (it did not), "runs" or "time" (a limit), or "interrupted" (the
	// options' Context ended).
	Stopped string
}

// Size describes the reproduction: its world, launch shape caps, vars,
// repeats and decisions.
func (s *Shrunk) Size() string { return caseSize(s.Options) }

func caseSize(o Options) string {
	parts := []string{fmt.Sprintf("world %d", o.Worlds[0])}
	if o.MaxBlocks > 0 {
		parts = append(parts, fmt.Sprintf("at most %d blocks", o.MaxBlocks))
	}
	if o.MaxThreads > 0 {
		parts = append(parts, fmt.Sprintf("at most %d threads a block", o.MaxThreads))
	}
	for _, name := range slices.Sorted(maps.Keys(o.Vars)) {
		parts = append(parts, fmt.Sprintf("%s=%s", name, o.Vars[name]))
	}
	if len(o.Repeats) > 0 {
		var rs []string
		for _, p := range slices.Sorted(maps.Keys(o.Repeats)) {
			rs = append(rs, fmt.Sprintf("%s=%d", p, o.Repeats[p]))
		}
		parts = append(parts, "repeats "+strings.Join(rs, " "))
	}
	if o.Decisions != nil {
		parts = append(parts, fmt.Sprintf("%d decisions", len(o.Decisions)))
	}
	return strings.Join(parts, ", ")
}

// Shrink reduces the run that found f (a finding of RunProgram(prog, src,
// opts)) to a smaller one that still finds it: the same kind and the same
// sites. In turn it caps every launch to fewer blocks, then to fewer
// threads a block (whole warps), sets each var of the harness that is a
// whole number (its elements, as a rule) smaller (a 1,024th of it up to a
// half, the smallest first), tries the smaller worlds the harness
// declares (never another: a fault of rank r moves to rank r mod the
// world), drops faults of the run's plan, runs each repeat step fewer
// times, and, replaying the run's scheduling decisions with a
// [fuzz.Replay], drops decisions (the tail first, then by delta
// debugging). A candidate that no longer finds f is discarded.
//
// lim bounds the runs and the time; when a bound is reached, or the
// Context of opts ends, the shrink stops and returns the smallest case
// found so far (the original run's, when none was), with Stopped saying
// why. The result's Options replay the reproduction exactly.
func Shrink(prog *Program, src *Source, opts Options, f *Finding, lim ShrinkLimits) (*Shrunk, error) {
	if lim.Runs <= 0 {
		lim.Runs = DefaultShrinkRuns
	}
	if lim.Time <= 0 {
		lim.Time = DefaultShrinkTime
	}
	now := lim.Now
	if now == nil {
		now = time.Now
	}
	start := now()
	opts.Worlds, opts.Seeds, opts.FirstSeed, opts.Progress = []int{f.World}, 1, f.Seed, nil
	opts.Plan = f.Plan
	if opts.Plan == nil {
		opts.Plan = Plan{}
	}
	vars := opts.Vars
	c, _, err := prepare(prog, src, &opts)
	if err != nil {
		return nil, err
	}
	opts.Vars = nil // prepare applied them to the compiled program
	s := &Shrunk{World: f.World, Faults: len(f.Plan)}
	shapes := map[string]bool{}
	var runErr error
	// best is the smallest case that found f so far: its options, the
	// decisions it took, its run and its finding.
	var best struct {
		o     Options
		sched fuzz.Schedule
		run   Run
		g     *Finding
		elems map[string]Expr // the vars the elements stage set
	}
	cur := opts
	// elems are the vars the elements stage set so far, cand and
	// candElems a candidate's program and vars (nil: c and elems).
	var elems, candElems map[string]Expr
	var cand *compiled
	stage := ""
	stopped := func() bool {
		switch {
		case s.Stopped != "":
		case opts.Context != nil && opts.Context.Err() != nil:
			s.Stopped = "interrupted"
		case s.Runs >= lim.Runs:
			s.Stopped = "runs"
		case now().Sub(start) >= lim.Time:
			s.Stopped = "time"
		}
		return s.Stopped != "" || runErr != nil
	}
	// finds runs o and reports whether it found f; when it did, o (with
	// the decisions it took, when it followed decisions and took no more)
	// becomes the best case.
	finds := func(o Options) bool {
		if stopped() {
			return false
		}
		w := o.Worlds[0]
		for _, ft := range o.Plan {
			if ft.Rank >= w {
				return false
			}
		}
		s.Runs++
		cc, ce := c, elems
		if cand != nil {
			cc, ce = cand, candElems
		}
		run, found, sched, err := cc.runOnce(w, o.FirstSeed, o, shapes, true)
		var he *HarnessError
		ok := false
		switch {
		case errors.Is(err, errStopped):
		case errors.As(err, &he): // the harness cannot run so (a smaller world, fewer repeats)
		case err != nil:
			runErr = err
		default:
			for _, g := range found {
				if g.key == f.key {
					ok = true
					if o.Decisions != nil && len(sched) <= len(o.Decisions) {
						o.Decisions = append(fuzz.Schedule{}, sched...) // not nil: the default policy
					}
					best.o, best.sched, best.run, best.g, best.elems = o, sched, run, g, ce
					break
				}
			}
		}
		if lim.Progress != nil {
			size := caseSize(opts)
			if best.g != nil {
				bo := best.o
				bo.Vars = best.elems
				size = caseSize(bo)
			}
			lim.Progress(ShrinkProgress{Runs: s.Runs, Budget: lim.Runs, Elapsed: now().Sub(start), Stage: stage, Found: ok, Size: size})
		}
		return ok
	}
	// adopt makes the best case the current one, when a run found one.
	adopt := func() {
		if best.g != nil {
			cur = best.o
		}
	}
	// Shapes, worlds, faults and repeats change the tasks that run: each
	// candidate runs under the original strategy (or decisions).
	env, err := c.env(f.World)
	if err != nil {
		return nil, err
	}
	// The launch first: fewer blocks, then fewer threads a block, the
	// smallest first (a small launch runs fast, so a miss costs little, and
	// so do the candidates after it).
	grid, block := c.largestLaunch(env)
	stage = "blocks"
	for b := 1; b < capOf(grid, cur.MaxBlocks); b *= 2 {
		o := cur
		o.MaxBlocks = b
		if finds(o) {
			adopt()
			break
		}
	}
	stage = "threads"
	for t := 32; t < capOf(block, cur.MaxThreads); t *= 2 {
		o := cur
		o.MaxThreads = t
		if finds(o) {
			adopt()
			break
		}
	}
	// Elements: each var of the harness that is a whole number (a size,
	// a count of elements) set smaller, the smallest first, in the
	// program recompiled with it.
	stage = "elements"
	for _, name := range slices.Sorted(maps.Keys(prog.Vars)) {
		e, ok := vars[name]
		if !ok {
			e = prog.Vars[name]
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(e)), 10, 64)
		if err != nil || v < 2 {
			continue // an expression, or nothing smaller to try
		}
		last := int64(0)
		for shift := 10; shift >= 1; shift-- {
			k := v >> shift // v/1024 up to v/2
			if k < 1 || k == last {
				continue
			}
			last = k
			ce := maps.Clone(elems)
			if ce == nil {
				ce = map[string]Expr{}
			}
			ce[name] = Expr(strconv.FormatInt(k, 10))
			o := Options{Vars: mergeVars(vars, ce), Worlds: cur.Worlds}
			cc, _, err := prepare(prog, src, &o)
			if err != nil {
				continue // the harness refuses the smaller size
			}
			cand, candElems = cc, ce
			found := finds(cur)
			cand, candElems = nil, nil
			if found {
				c, elems = cc, ce
				adopt()
				break
			}
		}
	}
	// Only the worlds the harness declares: a kernel built for a fixed
	// number of GPUs may mean nothing in another world.
	declared, err := ParseWorlds(prog.Worlds)
	if err != nil {
		return nil, err
	}
	slices.Sort(declared)
	stage = "world"
	for _, w := range declared {
		if w >= f.World {
			break
		}
		o := cur
		o.Worlds = []int{w}
		// A fault of a rank the smaller world lacks moves to rank r mod w.
		o.Plan = make(Plan, len(cur.Plan))
		for i, ft := range cur.Plan {
			ft.Rank %= w
			o.Plan[i] = ft
		}
		if finds(o) {
			adopt()
			break
		}
	}
	if len(cur.Plan) > 0 {
		stage = "faults"
		minimize.DDMin(cur.Plan, func(p Plan) bool {
			o := cur
			o.Plan = p
			return finds(o)
		})
		adopt()
	}
	env, err = c.env(cur.Worlds[0])
	if err != nil {
		return nil, err
	}
	stage = "repeats"
	for _, path := range c.repeatPaths() {
		n, ok := cur.Repeats[path]
		if !ok {
			x, err := c.repeatExpr(path).evalInt(firstRank(env))
			if err != nil {
				continue // a count of the rank or an outer iteration's: left as it is
			}
			n = int(x)
		}
		for k := 0; k < min(n, 8); k++ {
			o := cur
			o.Repeats = maps.Clone(cur.Repeats)
			if o.Repeats == nil {
				o.Repeats = map[string]int{}
			}
			o.Repeats[path] = k
			if finds(o) {
				adopt()
				break
			}
		}
	}
	// Decisions: those the current case took, so that replaying them all
	// repeats it; then drop what the finding does not need.
	stage = "decisions"
	if best.g == nil {
		finds(cur) // the original run, to record its decisions
	}
	if best.g != nil {
		cur = best.o
		if cur.Decisions == nil {
			cur.Decisions = best.sched
			if cur.Decisions == nil {
				cur.Decisions = fuzz.Schedule{}
			}
		}
		s.Decisions = len(cur.Decisions)
		replays := func(d fuzz.Schedule) bool {
			o := cur
			o.Decisions = d
			return finds(o)
		}
		minimize.ShortestPrefix(cur.Decisions, replays)
		if best.o.Decisions != nil {
			cur = best.o
		}
		minimize.DDMin(cur.Decisions, replays)
	}
	if runErr != nil {
		return nil, fmt.Errorf("shrink: %w", runErr)
	}
	if best.g == nil {
		// Nothing ran to the end and found it: the original run is the
		// smallest case known.
		s.Options = opts
		s.Finding = f
	} else {
		g := best.g
		g.World, g.Seed, g.Schedules, g.Runs, g.Plan = best.o.Worlds[0], best.o.FirstSeed, 1, 1, best.o.Plan
		s.Options, s.Finding, s.Trace = best.o, g, best.run.Trace
	}
	s.Options.Vars = mergeVars(vars, best.elems)
	s.Options.Context = nil
	return s, nil
}

// mergeVars is vars with set's vars set over them (nil when both are
// empty).
func mergeVars(vars, set map[string]Expr) map[string]Expr {
	if len(vars) == 0 && len(set) == 0 {
		return nil
	}
	out := maps.Clone(vars)
	if out == nil {
		out = map[string]Expr{}
	}
	maps.Copy(out, set)
	return out
}

// capOf is the size a cap leaves of n (0: no cap).
func capOf(n, cap int) int {
	if cap > 0 {
		return min(n, cap)
	}
	return n
}

// largestLaunch is the most blocks and the most threads a block of the
// program's launches in env, as far as they can be told before a run
// (a shape of the rank or of an iteration counts as rank 0's first).
func (c *compiled) largestLaunch(env *frame) (grid, block int) {
	loc := firstRank(env)
	var walk func([]cStep)
	walk = func(ss []cStep) {
		for _, s := range ss {
			switch {
			case s.repeat != nil:
				walk(s.repeat.steps)
			case s.graph != nil:
				walk(s.graph.steps)
			case s.launch != nil:
				if g, err := s.launch.grid.evalInt(loc); err == nil {
					grid = max(grid, int(g))
				}
				if b, err := s.launch.block.evalInt(loc); err == nil {
					block = max(block, int(b))
				}
			}
		}
	}
	walk(c.steps)
	return grid, block
}

// firstRank is a copy of env with rank and iter bound to 0: rank 0 in the
// first iteration of its repeats.
func firstRank(env *frame) *frame {
	f := env.clone()
	f.bind(slotRank, 0)
	f.bind(slotIter, 0)
	return f
}

// repeatExpr is the times expression of the repeat step at path.
func (c *compiled) repeatExpr(path string) *expr {
	var found *expr
	var walk func([]cStep)
	walk = func(ss []cStep) {
		for _, s := range ss {
			if s.repeat != nil {
				if s.repeat.path == path {
					found = s.repeat.times
				}
				walk(s.repeat.steps)
			}
		}
	}
	walk(c.steps)
	return found
}
