package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/symmem/symmem/fuzz"
	"github.com/symmem/symmem/ptxcheck"
)

// checkFlags are the flags of symmem check.
type checkFlags struct {
	ptx        string
	listUnsupp bool
	init       string
	seeds      int
	firstSeed  uint64
	seed       int64
	worlds     string
	strategy   string
	depth      int
	maxThreads int
	laneByLane bool
	maxBlocks  int
	maxSteps   int64
	race       bool
	showRuns   bool
	jobs       int
	vars       []string
	faults     string
	faultPlan  string
	repeats    []string
	decisions  string
	shrink     bool
	shrinkRuns int
	shrinkTime time.Duration
	caseDir    string
	inline     int // the longest decisions text printed (see [app])
	campaign   campaignFlags
	identity   []string            // see [identity]
	getenv     func(string) string // where the shard may come from
}

func newCheckCmd(a *app) *cobra.Command {
	f := &checkFlags{}
	cmd := &cobra.Command{
		Use:   "check HARNESS.json | --ptx FILE --list-unsupported | --init PTX [ENTRY]",
		Short: "Run any PTX kernel from a harness file on simulated GPUs and report races, hangs, failures and wrong results",
		Long: `check runs the program of a harness file (docs/check.md) on simulated GPUs:
every rank allocates the buffers, launches the PTX entry points with the
grids and parameters it gives, and checks the results, under the seeded
scheduler and the race detector, at every world and over --seeds seeds.
Each distinct finding is printed once, with the PTX lines (and CUDA lines,
for PTX built with nvcc -lineinfo) of a race's two accesses or of a hang's
spinning threads, and the command that replays it; then (unless
--shrink=false) it is reduced to a smaller run that finds it too (fewer
faults, a smaller world, fewer repeats, fewer scheduling decisions),
printed with its own replay command. It exits non-zero when it found
anything.

A shrink tries the smaller case first where runs are cheap: the launch
(fewer blocks, then fewer threads a block, as --max-blocks and
--max-threads cap them), its elements (each var of the harness that is a
whole number set smaller, as --var sets it), the world, the faults, the
repeat counts, then the scheduling decisions. It stops after --shrink-runs runs or --shrink-time,
whichever comes first, with the smallest case it found so far, and shows
each smaller case on stderr as it finds it. A shrunk case whose decisions
are too long for a command line has them written to a case file (in
--case-dir) that its replay command reads with --decisions @FILE.

SIGINT or SIGTERM stops the check: runs going on halt, a shrink going on
ends with its smallest case so far, the report covers the runs that ran
to the end (a --report file too, marked interrupted), and the exit
status is 130 or 143.

Its heap is reserved for transparent huge pages where Linux leaves them
to the program (a simulation's records are read at random); set
SYMMEM_HUGE_HEAP=0 to keep it as Go leaves it.

--faults draws one fault per run from its seed, of the kinds listed:
  stall       a rank's launch starts late: its host sleeps 1us, 100us or
              10ms (virtual) before enqueuing it
  die         a rank dies just before a launch: its program and device stop
              for good; peers waiting for it must end in a hang
  lose-write  a rank's write step never reaches the device
  dup-write   a rank's write step is delivered again after its next launch
              is enqueued (or at the end of the program), a stale copy
Each names a rank and its n-th launch or write step (from 0), so it fires
at the same point of the program whatever the schedule. --fault-plan gives
the faults of every run instead (KIND:RANK:AT, stall:RANK:AT:DURATION,
comma-separated), as replay commands do.

With --list-unsupported it prints every line of --ptx that the simulator
cannot run, and runs nothing. With --init it prints a harness skeleton for
an entry of the PTX file (the only one, or the one named), with TODOs to
fill; for a module of several entries without one named, it lists them.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			fl := cmd.Flags()
			f.identity, f.getenv = identity(cmd, args), envOr(a.getenv)
			f.inline = cmp.Or(a.inlineDecisions, maxInlineDecisions)
			a.procs(f.jobs)
			if a.checkGC != nil {
				a.checkGC()
			}
			a.reserveHeap()
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			return runCheck(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), f, args, fl.Changed("seed"), fl.Changed("fault-plan"), fl.Changed("decisions"))
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.ptx, "ptx", "", "PTX file (with --list-unsupported; a harness names its own)")
	fl.BoolVar(&f.listUnsupp, "list-unsupported", false, "print every line of --ptx the simulator cannot run, run nothing")
	fl.StringVar(&f.init, "init", "", "print a harness skeleton for an entry of this PTX file (--init PTX [ENTRY]), run nothing")
	fl.IntVar(&f.seeds, "seeds", 20, "seeds to run at each world")
	fl.Uint64Var(&f.firstSeed, "first-seed", 0, "the first seed")
	fl.Int64Var(&f.seed, "seed", 0, "run this one seed (the replay of a finding)")
	fl.StringVar(&f.worlds, "worlds", "", "world sizes, 2-8 or 2,4,8 (default: the harness's)")
	fl.StringVar(&f.strategy, "strategy", "random", "schedule: random or pct")
	fl.IntVar(&f.depth, "depth", 3, "PCT depth")
	fl.IntVar(&f.maxThreads, "max-threads", 0, "cap every launch's threads per block (0: the launch's own)")
	fl.BoolVar(&f.laneByLane, "lane-by-lane", false, "run every thread by itself, not the converged lanes of a warp in lockstep (the same findings; for comparison)")
	fl.IntVar(&f.maxBlocks, "max-blocks", 0, "cap every launch's blocks (0: the launch's own)")
	fl.Int64Var(&f.maxSteps, "max-steps", ptxcheck.DefaultMaxSteps, "scheduling steps a run may take before it counts as a hang")
	fl.BoolVar(&f.race, "race", true, "run the race detector")
	fl.BoolVar(&f.showRuns, "runs", false, "print every run's world, seed, steps and trace hash")
	fl.IntVarP(&f.jobs, "jobs", "j", runtime.NumCPU(), "runs made at once (the report is the same)")
	fl.StringArrayVar(&f.vars, "var", nil, "NAME=EXPR: replace (or add) a var of the harness (repeatable)")
	fl.StringVar(&f.faults, "faults", "none", "fault kinds to draw one of per run: stall,die,lose-write,dup-write, all or none")
	fl.StringVar(&f.faultPlan, "fault-plan", "", "the faults of every run, KIND:RANK:AT[,...] (stall:RANK:AT:DURATION); replaces --faults")
	fl.StringArrayVar(&f.repeats, "repeat", nil, "PATH=N: run the repeat step at PATH (2, or 2.1 inside it) N times (repeatable)")
	fl.StringVar(&f.decisions, "decisions", "", "follow these scheduling decisions (step:task.run ..., or @FILE: those of a case file) and the default policy between them, instead of --strategy")
	fl.BoolVar(&f.shrink, "shrink", true, "reduce each finding to a smaller run that finds it too, and print its replay")
	fl.IntVar(&f.shrinkRuns, "shrink-runs", ptxcheck.DefaultShrinkRuns, "runs each shrink may take")
	fl.DurationVar(&f.shrinkTime, "shrink-time", ptxcheck.DefaultShrinkTime, "time each shrink may take: no run starts after it, and the smallest case so far is printed")
	fl.StringVar(&f.caseDir, "case-dir", "", "folder of the case files of shrunk cases with decisions too long to print (default: the --report file's folder, else the current one)")
	f.campaign.add(fl)
	return cmd
}

// maxCheckJobs bounds -j: each run holds a whole simulated job.
const maxCheckJobs = 256

// maxInlineDecisions is the longest decisions text a replay command
// carries; longer ones go to a case file.
const maxInlineDecisions = 1000

// runCheck runs symmem check under ctx: an interruption stops it, and it
// reports what ran. Shrinks show their progress on errOut.
func runCheck(ctx context.Context, out, errOut io.Writer, f *checkFlags, args []string, oneSeed, planSet, decided bool) error {
	if f.init != "" {
		if f.listUnsupp || f.ptx != "" {
			return errors.New("--init PTX [ENTRY] takes no --ptx or --list-unsupported")
		}
		return initHarness(out, f.init, args)
	}
	if f.listUnsupp {
		if f.ptx == "" || len(args) > 0 {
			return errors.New("--list-unsupported takes --ptx FILE and no harness")
		}
		return listUnsupported(out, f.ptx)
	}
	if len(args) != 1 {
		return errors.New("give a harness file (or --ptx FILE --list-unsupported)")
	}
	if f.ptx != "" {
		return errors.New("--ptx goes with --list-unsupported: a harness names its PTX file")
	}
	var bad []error
	if f.jobs < 1 || f.jobs > maxCheckJobs {
		bad = append(bad, fmt.Errorf("-j/--jobs %d: want 1 to %d runs at once", f.jobs, maxCheckJobs))
	}
	if f.seeds < 1 {
		bad = append(bad, fmt.Errorf("--seeds %d: want at least 1", f.seeds))
	}
	if oneSeed && f.seed < 0 {
		bad = append(bad, fmt.Errorf("--seed %d: want a seed >= 0", f.seed))
	}
	if f.strategy != "random" && f.strategy != "pct" {
		bad = append(bad, fmt.Errorf("--strategy %q: want random or pct", f.strategy))
	}
	if f.depth < 1 {
		bad = append(bad, fmt.Errorf("--depth %d: want at least 1", f.depth))
	}
	if f.maxThreads < 0 || f.maxBlocks < 0 {
		bad = append(bad, fmt.Errorf("--max-threads %d --max-blocks %d: caps cannot be negative", f.maxThreads, f.maxBlocks))
	}
	if f.maxSteps < 1 {
		bad = append(bad, fmt.Errorf("--max-steps %d: want at least 1", f.maxSteps))
	}
	vars := map[string]ptxcheck.Expr{}
	for _, v := range f.vars {
		name, x, ok := strings.Cut(v, "=")
		if !ok || strings.TrimSpace(name) == "" {
			bad = append(bad, fmt.Errorf("--var %q: want NAME=EXPR", v))
			continue
		}
		vars[strings.TrimSpace(name)] = ptxcheck.Expr(x)
	}
	if f.shrinkRuns < 1 {
		bad = append(bad, fmt.Errorf("--shrink-runs %d: want at least 1", f.shrinkRuns))
	}
	if f.shrinkTime <= 0 {
		bad = append(bad, fmt.Errorf("--shrink-time %v: want a positive duration", f.shrinkTime))
	}
	kinds, err := ptxcheck.ParseFaultKinds(f.faults)
	if err != nil {
		bad = append(bad, fmt.Errorf("--faults: %w", err))
	}
	var plan ptxcheck.Plan
	if planSet {
		if plan, err = ptxcheck.ParsePlan(f.faultPlan); err != nil {
			bad = append(bad, fmt.Errorf("--fault-plan: %w", err))
		}
	}
	repeats := map[string]int{}
	for _, r := range f.repeats {
		path, n, ok := strings.Cut(r, "=")
		k, err := strconv.Atoi(strings.TrimSpace(n))
		if !ok || strings.TrimSpace(path) == "" || err != nil {
			bad = append(bad, fmt.Errorf("--repeat %q: want PATH=N", r))
			continue
		}
		repeats[strings.TrimSpace(path)] = k
	}
	var decisions fuzz.Schedule
	if decided {
		if decisions, err = readDecisions(f.decisions); err != nil {
			bad = append(bad, fmt.Errorf("--decisions: %w", err))
		}
		if decisions == nil {
			decisions = fuzz.Schedule{}
		}
	}
	var worlds []int
	if f.worlds != "" {
		var err error
		if worlds, err = ptxcheck.ParseWorlds(f.worlds); err != nil {
			bad = append(bad, fmt.Errorf("--worlds: %w", err))
		}
	}
	if err := errors.Join(bad...); err != nil {
		return err
	}
	harness := args[0]
	prog, err := ptxcheck.LoadHarness(harness)
	if err != nil {
		return err
	}
	if prog.PTX == "" {
		return fmt.Errorf("harness %s: no ptx file named", harness)
	}
	src, err := ptxcheck.LoadFile(prog.PTX)
	if err != nil {
		return err
	}
	opts := ptxcheck.Options{Worlds: worlds, Seeds: f.seeds, FirstSeed: f.firstSeed, Strategy: f.strategy, Depth: f.depth,
		MaxThreads: f.maxThreads, MaxBlocks: f.maxBlocks, LaneByLane: f.laneByLane, MaxSteps: f.maxSteps, NoRace: !f.race, Vars: vars,
		Faults: kinds, Plan: plan, Decisions: decisions, Jobs: f.jobs, Context: ctx}
	if len(repeats) > 0 {
		opts.Repeats = repeats
	}
	if oneSeed {
		opts.Seeds, opts.FirstSeed = 1, uint64(f.seed)
	}
	sh, err := startCheckShard(out, f, &opts, oneSeed)
	if err != nil {
		return err
	}
	defer sh.abort()
	rep, err := ptxcheck.RunProgram(prog, src, opts)
	var he *ptxcheck.HarnessError
	if errors.As(err, &he) {
		return fmt.Errorf("%s: %w", harness, err)
	}
	if err != nil {
		return err
	}
	printCheck(out, rep, f, harness, opts, oneSeed || f.showRuns)
	if rep.Interrupted {
		why := "the check was stopped"
		if err := interruptErr(ctx, "check"); err != nil {
			why = err.Error()
		}
		fmt.Fprintf(out, "%s: %d runs ran to the end (the ones cut short are not counted); no finding was shrunk\n", why, len(rep.Runs))
	}
	cases := &caseFiles{dir: f.caseDir, harness: harness}
	if cases.dir == "" {
		cases.dir = filepath.Dir(f.campaign.report)
	}
	if f.shrink && !rep.Interrupted {
		for i, x := range rep.Findings {
			if ctx.Err() != nil {
				break // interrupted: the findings left are not shrunk
			}
			lim := ptxcheck.ShrinkLimits{Runs: f.shrinkRuns, Time: f.shrinkTime, Progress: shrinkProgress(errOut, i+1)}
			s, err := ptxcheck.Shrink(prog, src, opts, x, lim)
			if err != nil {
				return fmt.Errorf("finding %d: %w", i+1, err)
			}
			if err := printShrunk(sh.shrunk(out, i), i+1, s, f, harness, cases); err != nil {
				return err
			}
		}
	}
	interrupted := interruptErr(ctx, "check")
	if err := finishCheckShard(sh, rep, f, harness, opts, interrupted != nil); err != nil {
		return err
	}
	if interrupted != nil {
		return interrupted
	}
	if n := len(rep.Findings); n > 0 {
		return fmt.Errorf("check %s: %d findings", harness, n)
	}
	return nil
}

// initHarness prints a harness skeleton for the entry of the PTX file
// named in args, or its only entry; with several and none named, its
// error lists them.
func initHarness(out io.Writer, path string, args []string) error {
	text, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("ptx: %w", err)
	}
	// The parameter lists are all a skeleton needs: a module the
	// simulator cannot run yet gets one too.
	src := ptxcheck.ParseSignatures(path, string(text))
	entries := src.Entries()
	var entry string
	switch {
	case len(args) == 1:
		entry = args[0]
	case len(args) > 1:
		return errors.New("--init PTX [ENTRY]: give one entry at most")
	case len(entries) == 1:
		entry = entries[0]
	case len(entries) == 0:
		return fmt.Errorf("%s: no .entry to make a harness for", path)
	default:
		var b strings.Builder
		fmt.Fprintf(&b, "%s has %d entries: name one (symmem check --init %s ENTRY):", path, len(entries), path)
		for _, e := range entries {
			sig, _ := src.Signature(e)
			fmt.Fprintf(&b, "\n  %s (%d parameters, %d bytes)", e, len(sig.Params), sig.Size)
		}
		return errors.New(b.String())
	}
	sk, err := ptxcheck.Skeleton(src, entry, path)
	if err != nil {
		return err
	}
	_, err = io.WriteString(out, sk)
	return err
}

// listUnsupported prints every line of a PTX file the simulator refuses.
func listUnsupported(out io.Writer, path string) error {
	src, err := ptxcheck.LoadFile(path)
	if err != nil {
		return err
	}
	probs := src.Unsupported()
	fmt.Fprintf(out, "%s: entries %s\n", path, strings.Join(src.Entries(), ", "))
	if len(probs) == 0 {
		fmt.Fprintln(out, "every line is supported")
		return nil
	}
	for _, p := range probs {
		fmt.Fprintln(out, p)
	}
	return fmt.Errorf("%s: %d unsupported lines", path, len(probs))
}

// printCheck prints a check's report.
func printCheck(out io.Writer, rep *ptxcheck.Report, f *checkFlags, harness string, opts ptxcheck.Options, runs bool) {
	worlds := make([]string, len(rep.Worlds))
	for i, w := range rep.Worlds {
		worlds[i] = fmt.Sprint(w)
	}
	strategy := f.strategy
	if opts.Decisions != nil {
		strategy = fmt.Sprintf("%d decisions", len(opts.Decisions))
	}
	faults := "none"
	switch {
	case opts.Plan != nil:
		faults = "plan " + orNone(opts.Plan.String())
	case len(opts.Faults) > 0:
		faults = "one per run of " + f.faults
	}
	fmt.Fprintf(out, "check %s: PTX %s, worlds %s, %d seeds each, strategy %s, faults %s, launch shape cap: %s\n",
		harness, rep.Source, strings.Join(worlds, ","), rep.Seeds, strategy, faults, rep.Cap)
	for _, s := range rep.Shapes {
		fmt.Fprintf(out, "launch %s\n", s)
	}
	for _, n := range rep.Notes {
		fmt.Fprintln(out, n)
	}
	if runs {
		for _, r := range rep.Runs {
			fmt.Fprintf(out, "world %d seed %d: %d steps, %d findings, trace %s", r.World, r.Seed, r.Steps, r.Findings, r.Trace)
			if r.Plan != nil {
				fmt.Fprintf(out, ", faults %q (%d fired)", r.Plan.String(), r.Fired)
			}
			fmt.Fprintln(out)
		}
	}
	fmt.Fprintf(out, "%d runs, %d distinct findings\n", len(rep.Runs), len(rep.Findings))
	for i, x := range rep.Findings {
		printFindingHead(out, i+1, x.Title, x.World, x.Seed, int64(x.Schedules), int64(x.Runs), int64(len(rep.Runs)))
		if x.Plan != nil {
			fmt.Fprintf(out, "   faults: %s\n", orNone(x.Plan.String()))
		}
		for _, d := range x.Details {
			fmt.Fprintf(out, "   %s\n", strings.ReplaceAll(d, "\n", "\n   "))
		}
		fmt.Fprintf(out, "   replay: %s\n", replayCommand(harness, f, x.World, x.Seed, x.Plan, opts, f.decisions))
	}
}

// printFindingHead prints finding n's title and where it was first found,
// as one process's report and a merged campaign's both do.
func printFindingHead(out io.Writer, n int, title string, world int, seed uint64, schedules, runs, of int64) {
	fmt.Fprintf(out, "\n%d. %s\n", n, title)
	fmt.Fprintf(out, "   found at world %d seed %d, after %d schedules of that world; in %d of %d runs\n",
		world, seed, schedules, runs, of)
}

// shrinkProgress is the progress report of the shrink of finding i: a
// line on w for each smaller case it finds.
func shrinkProgress(w io.Writer, i int) func(ptxcheck.ShrinkProgress) {
	return func(p ptxcheck.ShrinkProgress) {
		if p.Found {
			fmt.Fprintf(w, "shrink %d: run %d of at most %d, %v: %s: %s\n", i, p.Runs, p.Budget, p.Elapsed.Round(time.Millisecond), p.Stage, p.Size)
		}
	}
}

// shrinkStops says why a shrink stopped early, for its report.
var shrinkStops = map[string]string{
	"runs":        "stopped at --shrink-runs",
	"time":        "stopped at --shrink-time",
	"interrupted": "stopped by the interrupt",
}

// printShrunk prints the reproduction a shrink found for finding i; long
// decisions go to a case file of cases.
func printShrunk(out io.Writer, i int, s *ptxcheck.Shrunk, f *checkFlags, harness string, cases *caseFiles) error {
	o := s.Options
	fmt.Fprintf(out, "\n%d. shrunk in %d runs", i, s.Runs)
	if why := shrinkStops[s.Stopped]; why != "" {
		fmt.Fprintf(out, " (%s)", why)
	}
	fmt.Fprintf(out, ": world %d (was %d), faults %s (was %d), decisions %d (was %d)",
		o.Worlds[0], s.World, orNone(o.Plan.String()), s.Faults, len(o.Decisions), s.Decisions)
	if o.MaxBlocks > 0 && o.MaxBlocks != f.maxBlocks {
		fmt.Fprintf(out, ", at most %d blocks", o.MaxBlocks)
	}
	if o.MaxThreads > 0 && o.MaxThreads != f.maxThreads {
		fmt.Fprintf(out, ", at most %d threads a block", o.MaxThreads)
	}
	for _, name := range slices.Sorted(maps.Keys(o.Vars)) {
		if v := name + "=" + string(o.Vars[name]); !slices.Contains(f.vars, v) {
			fmt.Fprintf(out, ", %s", v) // set by the shrink
		}
	}
	if len(o.Repeats) > 0 {
		fmt.Fprintf(out, ", repeats %s", strings.Join(repeatArgs(o.Repeats), " "))
	}
	decisions := ""
	if o.Decisions != nil {
		decisions = o.Decisions.String()
		if len(decisions) > f.inline {
			path, err := cases.write(i, o, decisions)
			if err != nil {
				return err
			}
			decisions = "@" + path
		}
	}
	trace := s.Trace
	if trace == "" {
		trace = "not run (the original run is the smallest case found)"
	}
	fmt.Fprintf(out, "\n   finds: %s\n   trace %s\n   replay: %s\n", s.Finding.Title, trace,
		replayCommand(harness, f, o.Worlds[0], o.FirstSeed, o.Plan, o, decisions))
	return nil
}

// caseFiles writes the decisions of shrunk cases to files of dir, named
// after the harness, the world, the seed and the finding.
type caseFiles struct {
	dir, harness string
}

// write writes the decisions of finding i's case o and returns the file's
// path.
func (c *caseFiles) write(i int, o ptxcheck.Options, decisions string) (string, error) {
	base := strings.TrimSuffix(filepath.Base(c.harness), filepath.Ext(c.harness))
	path := filepath.Join(c.dir, fmt.Sprintf("%s-world%d-seed%d-finding%d.decisions", base, o.Worlds[0], o.FirstSeed, i))
	if err := os.WriteFile(path, []byte(decisions+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("case file: %w", err)
	}
	return path, nil
}

// readDecisions parses decisions given as text, or as @FILE: the text of
// a case file.
func readDecisions(s string) (fuzz.Schedule, error) {
	if path, ok := strings.CutPrefix(s, "@"); ok {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("case file: %w", err)
		}
		s = strings.TrimSpace(string(b))
	}
	d, err := fuzz.ParseSchedule(s)
	if err != nil {
		return nil, err
	}
	if d == nil {
		d = fuzz.Schedule{}
	}
	return d, nil
}

// repeatArgs is the PATH=N form of repeat counts, in path order.
func repeatArgs(r map[string]int) []string {
	var out []string
	for p, n := range r {
		out = append(out, fmt.Sprintf("%s=%d", p, n))
	}
	sort.Strings(out)
	return out
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// replayCommand is the symmem check command that reruns the run of world
// and seed with the faults of plan, under opts: its shape caps, its repeat
// counts and its decisions, given as decisions (their text or @FILE).
func replayCommand(harness string, f *checkFlags, world int, seed uint64, plan ptxcheck.Plan, opts ptxcheck.Options, decisions string) string {
	args := []string{"symmem", "check", harness, "--worlds", fmt.Sprint(world), "--seed", fmt.Sprint(seed)}
	if len(plan) > 0 {
		// No plan is the default: faults are drawn only under --faults,
		// which a replay never passes.
		args = append(args, "--fault-plan", plan.String())
	}
	if opts.Decisions != nil {
		args = append(args, "--decisions", decisions)
	} else if f.strategy != "random" {
		args = append(args, "--strategy", f.strategy, "--depth", fmt.Sprint(f.depth))
	}
	if opts.MaxThreads > 0 {
		args = append(args, "--max-threads", fmt.Sprint(opts.MaxThreads))
	}
	if opts.LaneByLane {
		args = append(args, "--lane-by-lane")
	}
	if opts.MaxBlocks > 0 {
		args = append(args, "--max-blocks", fmt.Sprint(opts.MaxBlocks))
	}
	if f.maxSteps != ptxcheck.DefaultMaxSteps {
		args = append(args, "--max-steps", fmt.Sprint(f.maxSteps))
	}
	if !f.race {
		args = append(args, "--race=false")
	}
	for _, name := range slices.Sorted(maps.Keys(opts.Vars)) {
		args = append(args, "--var", name+"="+string(opts.Vars[name]))
	}
	for _, r := range repeatArgs(opts.Repeats) {
		args = append(args, "--repeat", r)
	}
	if !f.shrink {
		args = append(args, "--shrink=false")
	}
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " '\"*()%$") {
			args[i] = "'" + a + "'"
		}
	}
	return strings.Join(args, " ")
}
