package ptxcheck

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/symmem/symmem/fuzz"
	"github.com/symmem/symmem/internal/minimize"
)

// DefaultShrinkRuns bounds the runs one shrink takes.
const DefaultShrinkRuns = 100

// Shrunk is a smaller reproduction of a finding.
type Shrunk struct {
	// Finding is what the reproduction finds: the same kind and sites as
	// the original.
	Finding *Finding
	// Options replay the reproduction exactly (one world, one seed, the
	// fault plan, the repeat counts and the scheduling decisions); the
	// other fields are those given to Shrink.
	Options Options
	Trace   string // the reproduction's trace hash
	Runs    int    // runs the shrink took, the last one included
	// What the original run had: its world, faults, and decisions that
	// differ from the default policy.
	World, Faults, Decisions int
}

// Shrink reduces the run that found f (a finding of RunProgram(prog, src,
// opts)) to a smaller one that still finds it: the same kind and the same
// sites. In turn it drops faults of the run's plan, tries the smaller
// worlds the harness declares (never another: a fault of rank r moves to
// rank r mod the world), runs each repeat step
// fewer times, and, replaying the run's scheduling
// decisions with a [fuzz.Replay], drops decisions (the tail first, then
// by delta debugging). A candidate that no longer finds f is discarded;
// budget bounds the runs (0: DefaultShrinkRuns). The result's Options
// replay the reproduction exactly.
func Shrink(prog *Program, src *Source, opts Options, f *Finding, budget int) (*Shrunk, error) {
	if budget <= 0 {
		budget = DefaultShrinkRuns
	}
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
	// finds runs o and reports whether it found f, with the decisions the
	// run took.
	finds := func(o Options) (bool, fuzz.Schedule) {
		if s.Runs >= budget || runErr != nil {
			return false, nil
		}
		s.Runs++
		w := o.Worlds[0]
		for _, ft := range o.Plan {
			if ft.Rank >= w {
				return false, nil
			}
		}
		_, found, sched, err := c.runOnce(w, o.FirstSeed, o, shapes, true)
		var he *HarnessError
		if errors.As(err, &he) {
			return false, nil // the harness cannot run so (a smaller world, fewer repeats)
		}
		if err != nil {
			runErr = err
			return false, nil
		}
		for _, g := range found {
			if g.key == f.key {
				return true, sched
			}
		}
		return false, nil
	}
	cur := opts
	if opts.Decisions == nil {
		ok, sched := finds(cur)
		if !ok {
			if runErr != nil {
				return nil, fmt.Errorf("shrink: %w", runErr)
			}
			return nil, fmt.Errorf("shrink: world %d seed %d no longer finds %q", f.World, f.Seed, f.Title)
		}
		s.Decisions = len(sched)
	} else {
		s.Decisions = len(opts.Decisions)
	}
	// Faults, worlds and repeats change the tasks that run: each
	// candidate runs under the original strategy (or decisions).
	cur.Plan = minimize.DDMin(cur.Plan, func(p Plan) bool {
		o := cur
		o.Plan = p
		ok, _ := finds(o)
		return ok
	})
	// Only the worlds the harness declares: a kernel built for a fixed
	// number of GPUs may mean nothing in another world.
	declared, err := ParseWorlds(prog.Worlds)
	if err != nil {
		return nil, err
	}
	slices.Sort(declared)
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
		if ok, _ := finds(o); ok {
			cur = o
			break
		}
	}
	env, err := c.env(cur.Worlds[0])
	if err != nil {
		return nil, err
	}
	for _, path := range c.repeatPaths() {
		n, ok := cur.Repeats[path]
		if !ok {
			x, err := c.repeatExpr(path).evalInt(env, map[string]float64{"rank": 0, "iter": 0})
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
			if ok, _ := finds(o); ok {
				cur = o
				break
			}
		}
	}
	// Decisions: record the current case's, so that replaying them all
	// repeats it, then drop what the finding does not need.
	ok, sched := finds(cur)
	if !ok {
		if runErr != nil {
			return nil, fmt.Errorf("shrink: %w", runErr)
		}
		return nil, fmt.Errorf("shrink: the reduced run (world %d seed %d) no longer finds %q", cur.Worlds[0], cur.FirstSeed, f.Title)
	}
	if sched == nil {
		sched = fuzz.Schedule{}
	}
	cur.Decisions = sched
	replays := func(d fuzz.Schedule) bool {
		o := cur
		o.Decisions = d
		ok, took := finds(o)
		if ok && len(took) <= len(d) {
			cur.Decisions = took
		}
		return ok
	}
	replays(minimize.ShortestPrefix(cur.Decisions, replays))
	minimize.DDMin(cur.Decisions, replays)
	if runErr != nil {
		return nil, fmt.Errorf("shrink: %w", runErr)
	}
	// The reproduction, run as its replay runs it.
	s.Runs++
	run, found, _, err := c.runOnce(cur.Worlds[0], cur.FirstSeed, cur, shapes, false)
	if err != nil {
		return nil, fmt.Errorf("shrink: %w", err)
	}
	for _, g := range found {
		if g.key == f.key {
			g.World, g.Seed, g.Schedules, g.Runs, g.Plan = cur.Worlds[0], cur.FirstSeed, 1, 1, cur.Plan
			s.Finding, s.Trace = g, run.Trace
		}
	}
	if s.Finding == nil {
		// Cannot happen for a deterministic run; report rather than hide it.
		return nil, fmt.Errorf("shrink: the reproduction of %q did not find it when run again", f.Title)
	}
	cur.Vars = vars
	s.Options = cur
	return s, nil
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
