package ptxcheck

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/actor/store"
	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/device/sim/ptx"
	"github.com/symmem/symmem/device/sim/race"
	"github.com/symmem/symmem/fuzz"
	"github.com/symmem/symmem/simjob"
)

// Options says how to run a Program.
type Options struct {
	// Worlds replaces the program's worlds when not nil.
	Worlds []int
	// Seeds is how many seeds each world runs, from FirstSeed (0: 1).
	Seeds     int
	FirstSeed uint64
	// Strategy is the scheduling strategy: "random" (the default) or
	// "pct" of Depth (default 3) over about Steps steps (default 100000).
	Strategy string
	Depth    int
	Steps    int64
	// MaxThreads and MaxBlocks cap every launch's shape (0: none).
	MaxThreads, MaxBlocks int
	// LaneByLane runs every thread by itself, where by default the
	// converged lanes of a warp run their plain instructions in lockstep
	// ([sim.Kernels].LaneByLane): the same findings, for comparison.
	LaneByLane bool
	// MaxSteps bounds each run's scheduling steps (0: DefaultMaxSteps);
	// a run that reaches it counts as a hang.
	MaxSteps int64
	// NoRace turns the race detector off.
	NoRace bool
	// Vars replace (or add to) the program's vars.
	Vars map[string]Expr
	// Faults are the kinds of fault to inject: each run draws one fault
	// of one of them from its seed (see [FaultKind]); none when empty.
	Faults []FaultKind
	// Plan, when not nil, is the faults of every run instead of drawn
	// ones (a replay).
	Plan Plan
	// Repeats replace the counts of repeat steps, by path ("2" for step 2,
	// "2.1" for the first step inside it): a shrunk reproduction.
	Repeats map[string]int
	// Decisions, when not nil, replaces the strategy: each run follows
	// these scheduling decisions and the default policy between them
	// (see [fuzz.Replay]), as a shrunk reproduction does.
	Decisions fuzz.Schedule
	// Progress, when set, is called after every run, in the order of
	// worlds and seeds.
	Progress func(Run)
	// Jobs is how many runs go at once (0: 1). Each run is a simulation of
	// its own; the report is the same whatever Jobs is.
	Jobs int
	// Context, when not nil, stops the work when it ends: the runs going
	// on halt and are not counted, and no run starts after it.
	Context context.Context
}

// DefaultMaxSteps is the default [Options].MaxSteps.
const DefaultMaxSteps = 20_000_000

// Report is what Run found.
type Report struct {
	Source string
	Worlds []int
	Seeds  int
	// Cap is the cap on launch shapes, "none" when launches ran the
	// shapes they asked for.
	Cap string
	// Shapes lists the launch shapes that ran, one line per entry and
	// shape.
	Shapes   []string
	Runs     []Run
	Findings []*Finding // distinct findings, in the order found
	// Notes are remarks on the check itself (one line each), such as PTX
	// without line information.
	Notes []string
	// Interrupted says the options' Context ended before every run ran:
	// Runs and Findings are those of the runs that ran to the end.
	Interrupted bool
}

// errStopped is the error of a run halted because the options' Context
// ended.
var errStopped = errors.New("stopped")

// Run is one world and seed.
type Run struct {
	World int
	Seed  uint64
	Trace string // the trace hash: the same seed gives the same one
	Steps int64
	// Instructions is the lane-instructions its PTX threads executed,
	// InLockstep those of warps in lockstep.
	Instructions, InLockstep uint64
	Findings                 int  // findings of this run, before they are merged by site
	Plan                     Plan // the faults injected (nil: none)
	Fired                    int  // how many of them fired
}

// Finding is one distinct problem: a race, a hang, a failure of a kernel
// or of the program, or a wrong result.
type Finding struct {
	Kind    string   // "race", "nc", "hang", "error", "result"
	Title   string   // one line
	Details []string // more lines
	World   int      // the first run that found it
	Seed    uint64
	// Schedules is how many schedules of World ran until it was found
	// (1: the first seed did).
	Schedules int
	Runs      int  // the runs that found it
	Plan      Plan // the faults of the run that found it
	key       string
}

// Key identifies a finding across runs: its kind and its pair of source
// sites (a race), its waits (a hang) or its failure.
func (f *Finding) Key() string { return f.key }

// Refusal is the error of a program whose PTX uses what the interpreter
// cannot run: every refused line of the entries it launches (and of the
// functions they call) is listed.
type Refusal struct {
	Source   string
	Entries  []string // the launched entries that cannot run
	Problems []Problem
}

func (r *Refusal) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: the simulator cannot run %s: %d unsupported lines:", r.Source, strings.Join(r.Entries, ", "), len(r.Problems))
	for _, p := range r.Problems {
		b.WriteString("\n  " + p.String())
	}
	return b.String()
}

// Validate compiles prog against src, naming every problem of the
// harness, and refuses it (a [*Refusal]) when an entry it launches uses
// what the interpreter cannot run.
func Validate(prog *Program, src *Source) error {
	c, err := compile(prog, src)
	if err != nil {
		return err
	}
	return c.runnable()
}

// runnable refuses the program when a launched entry cannot be decoded.
func (c *compiled) runnable() error {
	var bad []string
	var probs []Problem // the refused entries' own lines
	seen := map[string]bool{}
	var walk func([]cStep)
	walk = func(ss []cStep) {
		for _, s := range ss {
			if s.repeat != nil {
				walk(s.repeat.steps)
			}
			if s.launch == nil || seen[s.launch.sig.Entry] {
				continue
			}
			e := s.launch.sig.Entry
			seen[e] = true
			if _, err := c.src.Module.NewBlockMem(e, nil); err != nil {
				bad = append(bad, e)
				own := c.src.EntryUnsupported(e)
				if len(own) == 0 {
					own = []Problem{{Text: e, Err: err.Error()}}
				}
				probs = append(probs, own...)
			}
		}
	}
	walk(c.steps)
	if len(bad) == 0 {
		return nil
	}
	return &Refusal{Source: c.src.Name, Entries: bad, Problems: probs}
}

// RunProgram runs prog on the PTX of src at every world over the seeds of
// opts, with the race detector, and reports what it found. Its error is
// for a program that cannot run at all (a bad harness, a [*Refusal]), or
// a [*HarnessError] a run met (a value of the harness out of its range
// in some world or rank); what the runs find is in the report.
func RunProgram(prog *Program, src *Source, opts Options) (*Report, error) {
	c, worlds, err := prepare(prog, src, &opts)
	if err != nil {
		return nil, err
	}
	caps := sim.Kernels{MaxThreads: opts.MaxThreads, MaxBlocks: opts.MaxBlocks}
	rep := &Report{Source: src.Name, Worlds: worlds, Seeds: opts.Seeds, Cap: caps.Capped()}
	if !src.HasLineInfo() {
		rep.Notes = append(rep.Notes, "note: the PTX has no .loc lines, so findings name PTX lines only: build it with nvcc -lineinfo to have them name CUDA lines too")
	}
	byKey := map[string]*Finding{}
	shapes := map[string]bool{}
	outs := c.runAll(worlds, opts)
	for i, world := range worlds {
		for k := 0; k < opts.Seeds; k++ {
			seed := opts.FirstSeed + uint64(k)
			o := outs[i*opts.Seeds+k]
			if !o.done || errors.Is(o.err, errStopped) {
				rep.Interrupted = true
				continue
			}
			if o.err != nil {
				return nil, o.err
			}
			run, found := o.run, o.found
			for s := range o.shapes {
				shapes[s] = true
			}
			inRun := map[string]bool{}
			for _, f := range found {
				if inRun[f.key] {
					continue // the same site on other devices or elements
				}
				inRun[f.key] = true
				if old, ok := byKey[f.key]; ok {
					old.Runs++
					continue
				}
				f.World, f.Seed, f.Schedules, f.Runs, f.Plan = world, seed, k+1, 1, run.Plan
				byKey[f.key] = f
				rep.Findings = append(rep.Findings, f)
			}
			rep.Runs = append(rep.Runs, run)
		}
	}
	for s := range shapes {
		rep.Shapes = append(rep.Shapes, s)
	}
	sort.Strings(rep.Shapes)
	return rep, nil
}

// outcome is what one run of [compiled.runAll] gave.
type outcome struct {
	run    Run
	found  []*Finding
	shapes map[string]bool
	err    error
	done   bool
}

// runAll runs every seed of opts at every world, opts.Jobs at a time,
// and returns their outcomes in the order of worlds, then seeds; it calls
// opts.Progress in that order as the runs end. After a run that fails to
// run at all, no new run starts.
func (c *compiled) runAll(worlds []int, opts Options) []outcome {
	n := len(worlds) * opts.Seeds
	outs := make([]outcome, n)
	var (
		mu     sync.Mutex
		next   int // the next run to start
		shown  int // the runs passed to Progress
		failed bool
		wg     sync.WaitGroup
	)
	work := func() {
		defer wg.Done()
		for {
			mu.Lock()
			i := next
			if i == n || failed || opts.Context != nil && opts.Context.Err() != nil {
				mu.Unlock()
				return
			}
			next++
			mu.Unlock()
			world, seed := worlds[i/opts.Seeds], opts.FirstSeed+uint64(i%opts.Seeds)
			o := outcome{shapes: map[string]bool{}, done: true}
			o.run, o.found, _, o.err = c.runOnce(world, seed, opts, o.shapes, false)
			mu.Lock()
			outs[i] = o
			failed = failed || o.err != nil && !errors.Is(o.err, errStopped)
			for shown < n && outs[shown].done && outs[shown].err == nil {
				if opts.Progress != nil {
					opts.Progress(outs[shown].run)
				}
				shown++
			}
			mu.Unlock()
		}
	}
	jobs := min(max(opts.Jobs, 1), max(n, 1))
	wg.Add(jobs)
	for range jobs {
		go work()
	}
	wg.Wait()
	return outs
}

// prepare compiles prog with the vars of opts, refuses what cannot run,
// checks and completes opts, and returns the worlds to run.
func prepare(prog *Program, src *Source, opts *Options) (*compiled, []int, error) {
	if len(opts.Vars) > 0 {
		p := *prog
		p.Vars = map[string]Expr{}
		for k, v := range prog.Vars {
			p.Vars[k] = v
		}
		for k, v := range opts.Vars {
			p.Vars[k] = v
		}
		prog = &p
	}
	c, err := compile(prog, src)
	if err != nil {
		return nil, nil, err
	}
	if err := c.runnable(); err != nil {
		return nil, nil, err
	}
	worlds := opts.Worlds
	if worlds == nil {
		if worlds, err = ParseWorlds(prog.Worlds); err != nil {
			return nil, nil, err
		}
	}
	if opts.Seeds <= 0 {
		opts.Seeds = 1
	}
	if opts.Strategy == "" {
		opts.Strategy = "random"
	}
	if opts.Strategy != "random" && opts.Strategy != "pct" {
		return nil, nil, fmt.Errorf("strategy %q: want random or pct", opts.Strategy)
	}
	if opts.MaxThreads < 0 || opts.MaxBlocks < 0 {
		return nil, nil, fmt.Errorf("negative shape cap %d threads x %d blocks", opts.MaxThreads, opts.MaxBlocks)
	}
	paths := c.repeatPaths()
	for p, n := range opts.Repeats {
		if !slices.Contains(paths, p) {
			return nil, nil, fmt.Errorf("repeat %s: no repeat step at that path (the harness has %s)", p, orNone(paths))
		}
		if n < 0 || n > 1<<20 {
			return nil, nil, fmt.Errorf("repeat %s: %d times out of range [0, %d]", p, n, 1<<20)
		}
	}
	for _, f := range opts.Plan {
		for _, w := range worlds {
			if f.Rank >= w {
				return nil, nil, fmt.Errorf("fault %s: rank %d outside world %d", f, f.Rank, w)
			}
		}
	}
	return c, worlds, nil
}

// repeatPaths lists the paths of the program's repeat steps, outer first.
func (c *compiled) repeatPaths() []string {
	var out []string
	var walk func([]cStep)
	walk = func(ss []cStep) {
		for _, s := range ss {
			if s.repeat != nil {
				out = append(out, s.repeat.path)
				walk(s.repeat.steps)
			}
		}
	}
	walk(c.steps)
	return out
}

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

// env is a frame of the program at a world size: world and the vars
// bound, the vars evaluated in as many passes as their references to
// each other take.
func (c *compiled) env(world int) (*frame, error) {
	f := c.scope.frame()
	f.bind(slotWorld, float64(world))
	left := c.vars
	for len(left) > 0 {
		var next []namedExpr
		var last error
		for _, v := range left {
			x, err := v.x.eval(f)
			if err != nil {
				next, last = append(next, v), err
				continue
			}
			f.bind(v.slot, x)
		}
		if len(next) == len(left) {
			return nil, fmt.Errorf("vars: %s: %w", next[0].name, last)
		}
		left = next
	}
	return f, nil
}

// runOnce runs one world and seed and returns its findings and, when
// record is set, the scheduling decisions it took that differ from the
// default policy (following them with a [fuzz.Replay] repeats the run).
func (c *compiled) runOnce(world int, seed uint64, opts Options, shapes map[string]bool, record bool) (Run, []*Finding, fuzz.Schedule, error) {
	vars, err := c.env(world)
	if err != nil {
		return Run{}, nil, nil, err
	}
	caps := sim.Kernels{MaxThreads: opts.MaxThreads, MaxBlocks: opts.MaxBlocks, LaneByLane: opts.LaneByLane}
	plan := opts.Plan
	if plan == nil && len(opts.Faults) > 0 {
		counts, err := c.counts(vars, world, opts.Repeats)
		if err != nil {
			return Run{}, nil, nil, err
		}
		plan = drawPlan(opts.Faults, world, seed, counts)
	}
	w := &worldRun{c: c, world: world, vars: vars, mismatches: make([][]Mismatch, world), shapes: shapes, caps: caps,
		plan: plan, fired: make([]bool, len(plan)), died: make([]bool, world), repeats: opts.Repeats, layout: newLayout()}
	maxSteps := opts.MaxSteps
	if maxSteps <= 0 {
		maxSteps = DefaultMaxSteps
	}
	cfg := simjob.Config{World: world, Seed: seed, MaxSteps: maxSteps, RaceDetector: !opts.NoRace,
		Device: sim.Config{Kernels: caps}, Setup: func(j simjob.Job) error {
			w.sched = j.Scheduler
			j.World.Observe(func(a *sim.Access) { w.layout.observe(c, a) })
			return nil
		}}
	cfg.Strategy = actor.NewRandomWalk(seed)
	switch {
	case opts.Decisions != nil:
		cfg.Strategy = fuzz.NewReplay(opts.Decisions)
	case opts.Strategy == "pct":
		depth, steps := opts.Depth, opts.Steps
		if depth <= 0 {
			depth = 3
		}
		if steps <= 0 {
			steps = 100_000
		}
		cfg.Strategy = actor.NewPCT(seed, depth, steps)
	}
	var rec *fuzz.Recorder
	if record {
		rec = fuzz.NewRecorder(cfg.Strategy)
		cfg.Strategy = rec
	}
	if ctx := opts.Context; ctx != nil {
		if ctx.Err() != nil {
			return Run{World: world, Seed: seed}, nil, nil, errStopped
		}
		st := &stopping{inner: cfg.Strategy, ctx: ctx, w: w}
		cfg.Strategy = st
		if p, ok := st.inner.(actor.Picker); ok {
			cfg.Strategy = &stoppingPicker{st, p}
		}
	}
	res, simErr := simjob.Simulate(cfg, w.run)
	if opts.Context != nil && opts.Context.Err() != nil {
		return Run{World: world, Seed: seed}, nil, nil, errStopped
	}
	run := Run{World: world, Seed: seed, Trace: res.Trace, Steps: res.Steps, Instructions: res.Instructions, InLockstep: res.InLockstep, Plan: plan}
	for _, f := range w.fired {
		if f {
			run.Fired++
		}
	}
	if simErr != nil && res.Trace == "" {
		return run, nil, nil, fmt.Errorf("world %d seed %d: %w", world, seed, simErr)
	}
	for r, err := range res.Errs {
		var he *harnessError
		if err != nil && (r >= world || !w.died[r]) && errors.As(err, &he) {
			return run, nil, nil, &HarnessError{World: world, Err: err}
		}
	}
	var found []*Finding
	if res.Races != nil {
		for _, r := range res.Races.Races {
			found = append(found, c.raceFinding(w.layout, r))
		}
		if n := res.Races.Cut; n > 0 {
			found = append(found, &Finding{Kind: "race", key: "race cut",
				Title: fmt.Sprintf("data races past the most a run keeps: %d more distinct pairs of accesses race, not explained here (fix the races listed and run again)", n)})
		}
	}
	found = append(found, w.layout.strayFindings(c)...)
	var spins []*sim.SpinError
	var occs []*sim.OccupancyError
	var waits, others []error
	for r, err := range res.Errs {
		if err == nil || (r < world && w.died[r]) {
			continue
		}
		var oe *sim.OccupancyError
		if errors.As(err, &oe) {
			occs = append(occs, oe)
		}
		if s := spinErrors(err); len(s) > 0 {
			spins = append(spins, s...)
			continue
		}
		var mk *store.MissingKeysError
		var to *actor.TimeoutError
		if errors.As(err, &mk) || errors.As(err, &to) {
			waits = append(waits, err)
			continue
		}
		others = append(others, err)
	}
	hung := len(spins) > 0 || simErr != nil || len(waits) > 0
	if hung {
		found = append(found, c.hangFinding(w.layout, spins, occs, waits, simErr, res.Hang))
	}
	if len(spins) == 0 && simErr == nil {
		for _, err := range others {
			found = append(found, c.errorFinding(w.layout, err))
		}
	}
	// A hung run's output is no verdict: results are judged only in a run
	// that did not hang.
	for _, ms := range w.mismatches {
		if hung {
			break
		}
		for _, m := range ms {
			found = append(found, &Finding{Kind: "result", Title: "wrong result: " + m.String(),
				key: "result " + m.Step + " " + m.Buffer})
		}
	}
	run.Findings = len(found)
	var sched fuzz.Schedule
	if rec != nil {
		sched = rec.Schedule()
	}
	return run, found, sched, nil
}

// stopping is a run's strategy that halts every task once ctx ends.
type stopping struct {
	inner actor.Strategy
	ctx   context.Context
	w     *worldRun
	n     int
}

// Next implements actor.Strategy: it looks at ctx every 1024 steps.
func (s *stopping) Next(step int64, runnable []*actor.Task) int {
	s.look()
	return s.inner.Next(step, runnable)
}

// look halts every task once ctx has ended, looking at it every 1024
// steps.
func (s *stopping) look() {
	if s.n++; s.n&1023 == 0 && s.ctx.Err() != nil && s.w.sched != nil {
		s.w.sched.Halt("interrupted", func(*actor.Task) bool { return true })
	}
}

// stoppingPicker is a stopping whose inner strategy chooses by position
// alone, and so does it (actor.Picker: the scheduler then builds no
// runnable list a step).
type stoppingPicker struct {
	*stopping
	inner actor.Picker
}

// Pick implements actor.Picker.
func (s *stoppingPicker) Pick(step int64, n int) int {
	s.look()
	return s.inner.Pick(step, n)
}

// spinErrors finds the spins in a rank's error.
func spinErrors(err error) []*sim.SpinError {
	var out []*sim.SpinError
	var walk func(error)
	walk = func(e error) {
		if s, ok := e.(*sim.SpinError); ok {
			out = append(out, s)
			return
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }:
			if x := u.Unwrap(); x != nil {
				walk(x)
			}
		}
	}
	walk(err)
	return out
}

// line names the PTX line n by its CUDA place when the PTX has one
// ("k.cu:40"), else as "PTX line n".
func (c *compiled) line(n int) string {
	if loc := c.src.Loc(n); loc.Line > 0 {
		return loc.String()
	}
	return fmt.Sprintf("PTX line %d", n)
}

// where describes the PTX line n and its CUDA place.
func (c *compiled) where(n int) string {
	if n <= 0 {
		return ""
	}
	s := fmt.Sprintf("PTX line %d `%s`", n, c.src.Line(n))
	if loc := c.src.Loc(n); loc.Line > 0 {
		s += " from " + loc.String()
	}
	return s
}

// access describes one access of a race, naming its address by buffer
// and offset and its stream as the harness numbers it.
func (c *compiled) access(l *layout, a sim.Access) string {
	var who string
	if a.Kernel != "" && a.Block >= 0 {
		who = fmt.Sprintf("device %d %s#%d block %d", a.Device, a.Kernel, a.Launch, a.Block)
		if a.Lane >= 0 {
			who += fmt.Sprintf(" thread %d", a.Lane)
		}
	} else {
		who = fmt.Sprintf("device %d stream %d %s (op %d)", a.Device, l.streamOf(a.Device, a.Stream), a.Op, a.Seq)
		if step := l.opStep(a.Device, a.Stream, a.Seq); step != "" {
			who += " of " + step
		}
	}
	what := a.Kind.String()
	if a.Kind == sim.Atomic {
		what = fmt.Sprintf("strong %s (%s, %s)", map[bool]string{true: "write", false: "read"}[a.Write], a.Order, a.Scope)
	}
	s := fmt.Sprintf("%s: %s of %d bytes at %s", who, what, a.Size, l.name(uint64(a.Addr)))
	if w := c.where(a.Line); w != "" {
		s += "\n      at " + w
	}
	return s
}

func (c *compiled) raceFinding(l *layout, r race.Race) *Finding {
	a, b := c.hostSite(l, r.First), c.hostSite(l, r.Second)
	if r.NC && r.First.NC {
		// The write came after the load, before its kernel ended.
		return &Finding{Kind: "nc", Title: fmt.Sprintf("non-coherent load: %s (ld.global.nc) reads bytes that %s writes later during the load's kernel", a, b),
			key: "nc after " + a + " / " + b, Details: []string{
				"nc load: " + c.access(l, r.First),
				"write: " + c.access(l, r.Second),
				"why: " + l.rewrite(r.Missing),
			}}
	}
	if r.NC {
		return &Finding{Kind: "nc", Title: fmt.Sprintf("non-coherent load: %s (ld.global.nc) reads bytes written during its kernel by %s", b, a),
			key: "nc " + a + " / " + b, Details: []string{
				"write: " + c.access(l, r.First),
				"nc load: " + c.access(l, r.Second),
				"why: " + l.rewrite(r.Missing),
			}}
	}
	// A race and its mirror (the same two sites, met in the other order)
	// are one finding.
	lo, hi := min(a, b), max(a, b)
	return &Finding{Kind: "race", Title: fmt.Sprintf("data race between %s and %s", a, b),
		key: "race " + lo + " / " + hi, Details: []string{
			"first:  " + c.access(l, r.First),
			"second: " + c.access(l, r.Second),
			"missing edge: " + l.rewrite(r.Missing),
		}}
}

// site names the code of an access: the CUDA line of a PTX access when
// the PTX has one, else its PTX line; a host operation by its kind. One
// bug found on many elements, threads, devices and unrolled copies of a
// loop is one site.
func (c *compiled) site(a sim.Access) string {
	kind := a.Kind.String()
	if a.Kind == sim.Atomic {
		kind = "strong " + map[bool]string{true: "store", false: "load"}[a.Write]
	}
	switch {
	case a.Line > 0:
		if loc := c.src.Loc(a.Line); loc.Line > 0 {
			return fmt.Sprintf("the %s at %s:%d", kind, loc.File, loc.Line)
		}
		return fmt.Sprintf("the %s at PTX line %d", kind, a.Line)
	case a.Kernel != "":
		return fmt.Sprintf("the %s of kernel %s", kind, a.Kernel)
	}
	return fmt.Sprintf("the host's %s (%s)", a.Op, kind)
}

// hostSite is site, with a memset named by the harness step that enqueued
// it: "the host's memset (store) of step 2 (memset flags)". A write's
// title stays "the host's write"; the details name the step of every host
// operation.
func (c *compiled) hostSite(l *layout, a sim.Access) string {
	s := c.site(a)
	if a.Line <= 0 && a.Kernel == "" && a.Op == "memset" {
		if step := l.opStep(a.Device, a.Stream, a.Seq); step != "" {
			s += " of " + step
		}
	}
	return s
}

// hangFinding describes a hang: threads that spun (resident blocks that
// spun while others could not start, when occs has launches that did),
// host waits that timed out (a peer that never arrived), or a run that
// could not go on.
func (c *compiled) hangFinding(l *layout, spins []*sim.SpinError, occs []*sim.OccupancyError, waits []error, simErr error, wf *race.WaitFor) *Finding {
	f := &Finding{Kind: "hang"}
	for _, o := range occs {
		f.Details = append(f.Details, fmt.Sprintf("device %d %s#%d: %s", o.Device, o.Kernel, o.Launch, o.Summary()))
	}
	lines := map[int]bool{}
	for _, s := range spins {
		lines[s.Line] = true
		f.Details = append(f.Details, fmt.Sprintf("%s %s\n      at %s", s.Thread(), l.rewrite(s.Spin()), c.where(s.Line)))
	}
	var ls []int
	for l := range lines {
		ls = append(ls, l)
	}
	sort.Ints(ls)
	var steps []string
	for _, err := range waits {
		f.Details = append(f.Details, "host wait: "+err.Error())
		step, _, _ := strings.Cut(rankPrefix.ReplaceAllString(err.Error(), ""), ": ")
		if !slices.Contains(steps, step) {
			steps = append(steps, step)
		}
	}
	sort.Strings(steps)
	switch {
	case len(occs) > 0:
		o := occs[0]
		var at []string
		for _, n := range ls {
			at = append(at, c.line(n))
		}
		f.Title = fmt.Sprintf("hang: blocks wait for blocks that cannot be resident: in %s, %s; they spin at %s",
			o.Kernel, o.Summary(), strings.Join(at, ", "))
		f.key = "hang occupancy " + o.Kernel + " " + joinInts(ls)
	case len(spins) > 0:
		f.Title = fmt.Sprintf("hang: threads spin on bytes that never change (PTX lines %s%s)%s", joinInts(ls), c.cudaLines(ls), c.lostStores(spins))
		f.key = "hang spin " + joinInts(ls)
	case simErr == nil:
		f.Title = "hang: host waits timed out at " + strings.Join(steps, ", ")
		f.key = "hang host " + strings.Join(steps, ", ")
	default:
		var dl *actor.DeadlockError
		var sl *actor.StepLimitError
		if errors.As(simErr, &dl) {
			f.Title = "hang: every task is blocked"
			f.key = "hang deadlock"
		} else if errors.As(simErr, &sl) && c.looping(f, sl) {
			return f
		} else {
			f.Title = "hang: " + firstLine(simErr.Error())
			f.key = "hang " + f.Title
		}
		if simErr != nil {
			f.Details = append(f.Details, simErr.Error())
		}
	}
	if wf != nil && len(wf.Waits) > 0 {
		f.Details = append(f.Details, l.rewrite(wf.String()))
	}
	return f
}

// cudaLines names the CUDA lines of PTX lines ls (see cudaName), as ":
// file:line, ...", or "" when the PTX has no .loc lines for them.
func (c *compiled) cudaLines(ls []int) string {
	var names []string
	for _, n := range ls {
		if name := c.cudaName(n); name != "" && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return ": " + strings.Join(names, ", ")
}

// cudaName is the CUDA line of PTX line n ("file:line"; for an inlined
// helper, the line it was inlined at), or "" when the PTX has none.
func (c *compiled) cudaName(n int) string {
	loc := c.src.Loc(n)
	if loc.InlinedAt != "" || loc.Line == 0 {
		return loc.InlinedAt
	}
	return loc.File + ":" + strconv.Itoa(loc.Line)
}

// lostStores says which stores the spun-on words lost (a store placed in
// coherence order before a store that ran earlier, [sim.LostStore]), as
// "; the store at X ran after the store at Y but was placed before it,
// which erased it", each pair once, or "" when none did.
func (c *compiled) lostStores(spins []*sim.SpinError) string {
	name := func(line int) string {
		if n := c.cudaName(line); n != "" {
			return n
		}
		return "PTX line " + strconv.Itoa(line)
	}
	var out []string
	for _, s := range spins {
		for _, l := range s.Lost {
			msg := fmt.Sprintf("the store at %s ran after the store at %s but was placed before it, which erased it", name(l.Line), name(l.Under))
			if !slices.Contains(out, msg) {
				out = append(out, msg)
			}
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "; " + strings.Join(out, "; ")
}

// looping describes in f a run that reached its step limit with threads
// of a launch among the tasks that kept it going: the loops they are in
// (their PTX lines, and CUDA lines when the PTX has them), each thread
// with where it was, and the tasks that waited. It reports false, leaving
// f as it was, when no thread of a launch kept the run going.
func (c *compiled) looping(f *Finding, sl *actor.StepLimitError) bool {
	// The threads, grouped by where they were (in the order of their
	// first thread).
	type group struct {
		place sim.ThreadPlace
		names []string
	}
	var groups []*group
	var loops []int
	for _, t := range sl.Running {
		p, ok := t.Where.(sim.ThreadPlace)
		if !ok {
			continue
		}
		if p.Loop == 0 {
			p.Loop = p.Line
		}
		if !slices.Contains(loops, p.Loop) {
			loops = append(loops, p.Loop)
		}
		i := slices.IndexFunc(groups, func(g *group) bool { return g.place == p })
		if i < 0 {
			i = len(groups)
			groups = append(groups, &group{place: p})
		}
		groups[i].names = append(groups[i].names, t.Name)
	}
	if len(loops) == 0 {
		return false
	}
	sort.Ints(loops)
	f.Title = fmt.Sprintf("hang: threads still loop at the step limit of %d steps (loops ending at PTX lines %s)", sl.Steps, joinInts(loops))
	f.key = "hang livelock " + joinInts(loops)
	for _, g := range groups {
		where := fmt.Sprintf("at %s\n      in the loop of %s", c.where(g.place.Line), c.where(g.place.Loop))
		if len(g.names) == 1 {
			f.Details = append(f.Details, g.names[0]+" was "+where)
			continue
		}
		f.Details = append(f.Details, fmt.Sprintf("%d threads were %s: %s", len(g.names), where, someOf(g.names, maxNamed)))
	}
	for i, t := range sl.Blocked {
		if i == maxNamed {
			f.Details = append(f.Details, fmt.Sprintf("and %d more tasks wait", len(sl.Blocked)-i))
			break
		}
		f.Details = append(f.Details, fmt.Sprintf("%s waits for %s", t.Name, t.What))
	}
	return true
}

// maxNamed is how many threads of a place, and how many waiting tasks, a
// hang at the step limit names.
const maxNamed = 8

// someOf joins the first n names, and says how many more there are.
func someOf(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s, and %d more", strings.Join(names[:n], ", "), len(names)-n)
}

func (c *compiled) errorFinding(l *layout, err error) *Finding {
	msg := l.rewrite(err.Error())
	f := &Finding{Kind: "error", Title: "failure: " + firstLine(msg), key: "error " + rankPrefix.ReplaceAllString(msg, "")}
	var ex *ptx.ExecError
	if errors.As(err, &ex) {
		// The same failure on every device is one finding.
		f.key = fmt.Sprintf("error %s:%d %s", ex.Func, ex.Line, devicePlaces.ReplaceAllString(ex.Err.Error(), "#"))
		f.Details = append(f.Details, "at "+c.where(ex.Line))
	}
	if strings.Contains(msg, "\n") {
		f.Details = append(f.Details, msg)
	}
	return f
}

// devicePlaces are the parts of an error that name a device or an
// address.
var devicePlaces = regexp.MustCompile(`device \d+|0x[0-9a-f]+`)

// rankPrefix is the "rank N: " an error of rank N starts with.
var rankPrefix = regexp.MustCompile(`^rank \d+: `)

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}
