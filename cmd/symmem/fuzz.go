package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"go.uber.org/zap"

	"github.com/symmem/symmem/backend"
	"github.com/symmem/symmem/campaign"
	"github.com/symmem/symmem/fuzz"
	"github.com/symmem/symmem/workload"
)

type fuzzFlags struct {
	seeds      int
	first      uint64
	time       time.Duration
	strategy   string
	depth      int
	faults     string
	jobs       int
	worlds     string
	sizes      []string
	algos      []string
	timeout    time.Duration
	maxSteps   stepBound
	race       bool
	kernels    string
	shrink     bool
	shrinkRuns int
	shrinkTime time.Duration
	saveDir    string
	progress   bool
	cpuProfile string
	campaign   campaignFlags

	sizesSet, algosSet bool
	identity           []string // see [identity]
}

func newFuzzCmd(a *app) *cobra.Command {
	f := &fuzzFlags{}
	cmd := &cobra.Command{
		Use:   "fuzz",
		Short: "Fuzz the all-reduce protocol on the simulator: programs, schedules and faults",
		Long: `Run one program per seed on the deterministic simulator and judge every run.
A seed draws its world size, up to two subgroups, one or two symmetric
buffers that several groups share, and two to six steps: all-reduces of
every form (one-shot, its _out and _copy forms, two-shot in place and
_out, ll, the intra-node service), batches of them queued asynchronously
and synchronized, graphs captured and replayed, signal barriers and
point-to-point signals with peer reads, and re-allocations. Inputs are
rewritten before every call and every result is checked on every rank.
Each seed also draws its schedule strategy and its faults:

  --faults none    liveness: every rank finishes with the right results;
  --faults safety  crashes, delays, lost and corrupt signal writes, lost
                   messages, lost and wrong fds, slow and failing Store
                   requests: a rank may fail, but only with an error, never
                   with a wrong result, a panic or a hang;
  --faults all     safety plus duplicated signal writes, which the pad
                   protocol cannot tell from real ones (expect wrong results).

A run whose faults cannot explain a failure (none fired, or only delays
adding up to less than half the timeout) is judged for liveness. The
happens-before race detector is on (--race=false turns it off): a data race
fails the case (in a run where a rank failed, races are listed, not judged).

Prints schedules per second and each distinct failure once, with the replay
command that reproduces it exactly and, by default, its shrunk form; a case
saved with --save-dir is a file that symmem replay --case reads.
--log-level debug prints a line per case and per shrink. SIGINT or SIGTERM
stops the run (and any shrink) within a second or two: the report covers
the cases that ran, the files asked for are written, and the command exits
with status 130 (SIGINT) or 143 (SIGTERM). Exits non-zero when any case
fails.

--shard i/n runs shard i (from 0) of n of the seeds: with the other shards,
every seed once. Without it the shard comes from a Slurm job array, a
Kubernetes Indexed Job or TEST_SHARD_INDEX. --report F.jsonl writes the
findings and a summary for symmem merge, which prints the report one
process over every seed would have printed (docs/campaigns.md).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.sizesSet, f.algosSet = cmd.Flags().Changed("sizes"), cmd.Flags().Changed("algos")
			f.identity = identity(cmd, nil)
			a.procs(f.jobs)
			if a.limitFuzzMemory != nil && !f.sizesSet {
				// Drawn sizes fit a worker's share; sizes given
				// are the user's to afford.
				a.limitFuzzMemory(f.jobs)
			}
			return runFuzz(cmd.Context(), f, cmd.OutOrStdout(), a.log, envOr(a.getenv))
		},
	}
	d := fuzz.DefaultConfig()
	algos := make([]string, len(d.Algos))
	for i, a := range d.Algos {
		algos[i] = a.String()
	}
	fl := cmd.Flags()
	fl.IntVar(&f.seeds, "seeds", d.Seeds, "number of seeds to run (0: until --time passes)")
	fl.Uint64Var(&f.first, "first-seed", 0, "the first seed")
	fl.DurationVar(&f.time, "time", 0, "start no case after this long (0: no limit)")
	fl.StringVar(&f.strategy, "strategy", d.Strategy, "schedule strategy: random, pct or portfolio")
	fl.IntVar(&f.depth, "depth", d.Depth, "PCT depth (strategy pct)")
	fl.StringVar(&f.faults, "faults", d.Faults.String(), "faults: none, safety or all")
	fl.IntVarP(&f.jobs, "jobs", "j", d.Workers, fmt.Sprintf("cases run at once (1 to %d)", fuzz.MaxWorkers))
	fl.StringVar(&f.worlds, "worlds", "2-8", "world sizes: a range (2-8) or a list (2,4,8)")
	fl.StringSliceVar(&f.sizes, "sizes", nil, "tensor sizes, e.g. 64,1KiB (default 4 B to 64 KiB, now and then 256 KiB to 3 MiB; with --kernels ptx up to 64 KiB, less where a case would need more than 400 MiB)")
	fl.StringSliceVar(&f.algos, "algos", algos, "algorithms: one-shot (and its _out and _copy forms), two-shot (in place and _out), ll, auto (the intra-node service)")
	fl.DurationVar(&f.timeout, "timeout", d.Timeout, "timeout of every rank wait (virtual time)")
	fl.Var(&f.maxSteps, "max-steps", "scheduling steps after which a run counts as livelocked: a number, or auto (sized from each program, at least 2,000,000)")
	fl.BoolVar(&f.race, "race", d.Race, "run every schedule with the happens-before race detector; a data race is a failure")
	kernelsFlag(fl, &f.kernels)
	fl.BoolVar(&f.shrink, "shrink", d.Shrink, "shrink the first case of each distinct failure")
	fl.IntVar(&f.shrinkRuns, "shrink-runs", d.Budget, "runs one shrink may take (at least 1)")
	fl.DurationVar(&f.shrinkTime, "shrink-time", d.ShrinkTime, "time one shrink may take: no run starts after it, and the smallest failing case so far is the result")
	fl.StringVar(&f.saveDir, "save-dir", "", "write each failure's case and its shrunk form to this directory (created if need be; checked before the run)")
	fl.BoolVar(&f.progress, "progress", true, "show a progress bar (only when stdout is a terminal)")
	fl.StringVar(&f.cpuProfile, "cpuprofile", "", "write a Go CPU profile of the cases (and shrinks) to this file (go tool pprof reads it)")
	f.campaign.add(fl)
	return cmd
}

// config checks every flag, reporting every bad one at once, and returns
// the fuzzing configuration.
func (f *fuzzFlags) config() (fuzz.Config, error) {
	errs := []error{checkTimeout(f.timeout)}
	if f.seeds < 0 {
		errs = append(errs, fmt.Errorf("--seeds %d: want a number >= 0 (0: until --time passes)", f.seeds))
	}
	if f.time < 0 {
		errs = append(errs, fmt.Errorf("--time %v: want a duration >= 0 (0: no limit)", f.time))
	}
	if f.seeds == 0 && f.time <= 0 {
		errs = append(errs, errors.New("--seeds 0 runs until --time passes: give --time too"))
	}
	if f.jobs < 1 || f.jobs > fuzz.MaxWorkers {
		errs = append(errs, fmt.Errorf("-j/--jobs %d: want 1 to %d cases at once", f.jobs, fuzz.MaxWorkers))
	}
	if f.depth < 1 {
		errs = append(errs, fmt.Errorf("--depth %d: want a PCT depth of at least 1", f.depth))
	}
	if f.shrinkRuns < 1 {
		errs = append(errs, fmt.Errorf("--shrink-runs %d: want at least 1", f.shrinkRuns))
	}
	if f.shrinkTime <= 0 {
		errs = append(errs, fmt.Errorf("--shrink-time %v: want a positive duration", f.shrinkTime))
	}
	set, err := fuzz.ParseFaultSet(f.faults)
	errs = append(errs, flagErr("faults", err))
	worlds, err := parseWorlds(f.worlds)
	errs = append(errs, flagErr("worlds", err))
	kern, err := parseKernels(f.kernels)
	errs = append(errs, err)
	switch f.strategy {
	case fuzz.StrategyRandom, fuzz.StrategyPCT, fuzz.StrategyPortfolio:
	default:
		errs = append(errs, fmt.Errorf("--strategy %q: want random, pct or portfolio", f.strategy))
	}
	cfg := fuzz.Config{
		Seeds: f.seeds, First: f.first, Time: f.time, Strategy: f.strategy, Depth: f.depth,
		Faults: set, Workers: f.jobs, Worlds: worlds, Timeout: f.timeout, MaxSteps: int64(f.maxSteps), Race: f.race,
		Shrink: f.shrink, Budget: f.shrinkRuns, ShrinkTime: f.shrinkTime, Kernels: kern,
	}
	if f.sizesSet && len(f.sizes) == 0 {
		errs = append(errs, errors.New("--sizes is empty: give at least one size, or leave the flag out for the default sizes"))
	}
	var bad []string
	for _, s := range f.sizes {
		n, err := parseBytes(s)
		switch {
		case err != nil:
			bad = append(bad, err.Error())
		case n == 0 || n%4 != 0 || n > 64<<20:
			bad = append(bad, fmt.Sprintf("%q: want a positive multiple of 4 bytes up to 64MiB", s))
		default:
			cfg.Sizes = append(cfg.Sizes, n)
		}
	}
	if len(bad) > 0 {
		errs = append(errs, fmt.Errorf("--sizes: %s", strings.Join(bad, "; ")))
	}
	if f.algosSet && len(f.algos) == 0 {
		errs = append(errs, errors.New("--algos is empty: give at least one of one-shot, two-shot, ll, auto, or leave the flag out for all"))
	}
	for _, s := range f.algos {
		a, err := workload.ParseAlgo(s)
		if err != nil {
			errs = append(errs, flagErr("algos", err))
			continue
		}
		cfg.Algos = append(cfg.Algos, a)
	}
	if err := errors.Join(errs...); err != nil {
		return cfg, err
	}
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// stepBound is the value of --max-steps: a positive number of steps, or 0
// for "auto" (sized from each program).
type stepBound int64

func (b *stepBound) String() string {
	if *b == 0 {
		return "auto"
	}
	return strconv.FormatInt(int64(*b), 10)
}

func (b *stepBound) Set(s string) error {
	if s == "auto" {
		*b = 0
		return nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 {
		return fmt.Errorf("%q: want a positive number of steps, or auto", s)
	}
	*b = stepBound(n)
	return nil
}

func (b *stepBound) Type() string { return "steps" }

// checkSaveDir makes dir if need be and checks that a file can be written
// there, before any work starts.
func checkSaveDir(flag, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%s %s: %w", flag, dir, err)
	}
	probe, err := os.CreateTemp(dir, ".symmem-write-check-*")
	if err != nil {
		return fmt.Errorf("%s %s: cannot write there: %w", flag, dir, err)
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// parseWorlds reads "2-8" or "2,4,8".
func parseWorlds(s string) ([]int, error) {
	if lo, hi, ok := strings.Cut(s, "-"); ok {
		a, err1 := strconv.Atoi(strings.TrimSpace(lo))
		b, err2 := strconv.Atoi(strings.TrimSpace(hi))
		if err1 != nil || err2 != nil || a < 1 || b < a || b > 72 {
			return nil, fmt.Errorf("%q: want a range such as 2-8 within 1-72", s)
		}
		var out []int
		for w := a; w <= b; w++ {
			out = append(out, w)
		}
		return out, nil
	}
	var out []int
	for _, part := range strings.Split(s, ",") {
		w, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || w < 1 || w > 72 {
			return nil, fmt.Errorf("%q: want world sizes within 1-72", s)
		}
		out = append(out, w)
	}
	return out, nil
}

func runFuzz(ctx context.Context, f *fuzzFlags, out io.Writer, log *zap.Logger, getenv func(string) string) error {
	if err := backend.RefuseUnderLaunch("symmem fuzz", "run it without launch"); err != nil {
		return err
	}
	cfg, err := f.config()
	if f.saveDir != "" {
		err = errors.Join(err, checkSaveDir("--save-dir", f.saveDir))
	}
	if err = errors.Join(err, checkWritable("cpuprofile", f.cpuProfile)); err != nil {
		return err
	}
	sh, err := startShard("fuzz", &f.campaign, campaign.Range{First: f.first, Count: uint64(f.seeds)}, f.identity, getenv)
	if err != nil {
		return err
	}
	defer sh.abort() // a report not finished is not left behind
	if sh.shard.Sharded() && (f.seeds == 0 || f.time > 0) {
		return fmt.Errorf("--shard %s: a shard runs its share of --seeds, all of it: give --seeds N and no --time", sh.shard)
	}
	cfg.First, cfg.Seeds = sh.seeds.First, int(sh.seeds.Count)
	io.WriteString(out, sh.line())
	if ctx == nil {
		ctx = context.Background()
	}
	cfg.Log = log
	// An interrupt stops the session: the cases running stop, no case or
	// shrink starts after it, and the report covers the cases that ran.
	ctx, stop := signalContext(ctx)
	defer stop()
	stopProfile, err := startProfile(f.cpuProfile)
	if err != nil {
		return err
	}
	finish := func() {}
	if f.progress && out == io.Writer(os.Stdout) && isTerminal(os.Stdout) {
		cfg.Progress, finish = fuzzProgress(cfg)
	}
	rep, ferr := fuzz.Report{Fired: map[fuzz.Kind]int{}}, error(nil)
	if cfg.Seeds > 0 || cfg.Time > 0 { // a shard may have no seeds
		rep, ferr = fuzz.Fuzz(ctx, cfg)
	}
	finish()
	if rep.Interrupted && errors.Is(ferr, context.Canceled) {
		ferr = nil // the interrupt is reported below
	}
	// The cases that ran are reported even when some could not run, and
	// even when a case file could not be written.
	saver := &caseSaver{dir: f.saveDir}
	v := newFuzzView(cfg, rep, saver)
	perr := errors.Join(v.print(out, interruptErr(ctx, "fuzz")), errors.Join(saver.errs...))
	perr = errors.Join(perr, sh.finish(v.findings, v.summary(), rep.Interrupted, ferr))
	ferr = errors.Join(ferr, stopProfile(out))
	switch {
	case rep.Interrupted:
		if err := interruptErr(ctx, "fuzz"); err != nil {
			return errors.Join(err, ferr, perr)
		}
		return errors.Join(fmt.Errorf("fuzz interrupted: %w", ctx.Err()), ferr, perr)
	case ferr != nil || perr != nil:
		return errors.Join(ferr, perr)
	case rep.Failed > 0:
		return fmt.Errorf("%d of %d cases failed (%d distinct failures)", rep.Failed, rep.Cases, len(rep.Failures))
	}
	return nil
}

// fuzzProgress starts a progress bar and returns the callback that
// advances it and the function that completes it and waits for its last
// line.
func fuzzProgress(cfg fuzz.Config) (update func(done, failed int), finish func()) {
	prog := mpb.New(mpb.WithOutput(os.Stdout), mpb.WithWidth(40))
	total := int64(cfg.Seeds)
	var failures int
	var mu sync.Mutex
	bar := prog.AddBar(total,
		mpb.PrependDecorators(decor.Name("fuzz "), decor.CountersNoUnit("%d/%d schedules")),
		mpb.AppendDecorators(
			decor.AverageSpeed(0, " %.0f/s"), decor.Name(" "),
			decor.Any(func(decor.Statistics) string {
				mu.Lock()
				defer mu.Unlock()
				return fmt.Sprintf("%d failed", failures)
			}),
		))
	update = func(done, failed int) {
		mu.Lock()
		failures = failed
		mu.Unlock()
		if total == 0 {
			bar.SetTotal(int64(done)+1, false)
		}
		bar.SetCurrent(int64(done))
	}
	finish = func() {
		bar.SetTotal(-1, true) // the current count becomes the total
		prog.Wait()
	}
	return update, finish
}

// fuzzView is what the fuzz report prints: one process's run, one
// shard's, or a whole campaign's merged from its shards' (see
// [printMergedFuzz]), which prints as one process over every seed would.
type fuzzView struct {
	strategy, faults       string
	race                   bool
	cases, failed, crashed int64
	steps, traces, workers int64
	fired                  map[string]int64 // by kind
	elapsed, shrinking     time.Duration
	interrupted            bool
	traceHashes            []string
	findings               []campaign.Finding
}

// newFuzzView is the view of a run of cfg, its failures' cases saved by
// saver (or printed as commands).
func newFuzzView(cfg fuzz.Config, rep fuzz.Report, saver *caseSaver) fuzzView {
	v := fuzzView{
		strategy: cfg.Strategy, faults: cfg.Faults.String(), race: cfg.Race,
		cases: int64(rep.Cases), failed: int64(rep.Failed), crashed: int64(rep.Crashed), steps: rep.Steps,
		traces: int64(rep.Traces), workers: int64(max(cfg.Workers, 1)), fired: map[string]int64{},
		elapsed: rep.Elapsed, shrinking: rep.Shrinking, interrupted: rep.Interrupted, traceHashes: rep.TraceHashes,
	}
	for k, n := range rep.Fired {
		v.fired[k.String()] += int64(n)
	}
	for _, fr := range rep.Failures {
		o := fr.First
		x := campaign.Finding{Signature: fr.Signature, Kind: string(o.Failure.Kind), Title: o.Failure.Summary(),
			Order: []uint64{o.Case.Seed}, Seed: o.Case.Seed, World: o.Case.Program.World, Count: fr.Count}
		if len(o.Fired) > 0 {
			x.Lines = append(x.Lines, fmt.Sprintf("faults fired: %s", o.Fired))
		}
		x.Lines = append(x.Lines, "replay: "+saver.line(o, fmt.Sprintf("fuzz-seed-%d.json", o.Case.Seed), false))
		if fr.ShrinkErr != nil {
			x.Lines = append(x.Lines, fmt.Sprintf("not shrunk: %v", fr.ShrinkErr))
		}
		if s := fr.Shrunk; s != nil {
			m := s.Outcome
			x.Lines = append(x.Lines,
				fmt.Sprintf("shrunk in %d runs%s: %d of %d steps, %d of %d faults, %d of %d decisions: %s",
					s.Runs, map[bool]string{true: " (stopped at --shrink-time)"}[s.TimedOut], len(m.Case.Program.Steps), s.Steps, len(m.Fired), s.Faults, len(m.Schedule), s.Decisions, m.Failure.Summary()),
				"minimal case: "+saver.line(m, fmt.Sprintf("fuzz-seed-%d-shrunk.json", o.Case.Seed), true))
		}
		v.findings = append(v.findings, x)
	}
	return v
}

// The names of a fuzz report's counts, sets and durations.
const (
	fuzzCases, fuzzFailed, fuzzCrashed, fuzzSteps, fuzzWorkers = "cases", "failed", "crashed", "steps", "workers"
	fuzzFiredPrefix                                            = "fired "
	fuzzTraces                                                 = "traces"
	fuzzElapsed, fuzzShrinking                                 = "cases", "shrinking"
)

// summary is the view's counts for a report file, with its trace hashes,
// from which a merge counts the campaign's distinct traces.
func (v fuzzView) summary() campaign.Summary {
	s := campaign.Summary{
		Counts:    map[string]int64{fuzzCases: v.cases, fuzzFailed: v.failed, fuzzCrashed: v.crashed, fuzzSteps: v.steps, fuzzWorkers: v.workers},
		Sets:      map[string][]string{fuzzTraces: v.traceHashes},
		Durations: map[string]float64{fuzzElapsed: v.elapsed.Seconds(), fuzzShrinking: v.shrinking.Seconds()},
	}
	for k, n := range v.fired {
		s.Counts[fuzzFiredPrefix+k] = n
	}
	return s
}

// printMergedFuzz prints a merged fuzz campaign's report.
func printMergedFuzz(out io.Writer, m *campaign.Merged) error {
	v := fuzzView{
		strategy: flagValue(m.Flags, "strategy"), faults: flagValue(m.Flags, "faults"), race: flagValue(m.Flags, "race") == "true",
		cases: m.Counts[fuzzCases], failed: m.Counts[fuzzFailed], crashed: m.Counts[fuzzCrashed], steps: m.Counts[fuzzSteps],
		traces: int64(len(m.Sets[fuzzTraces])), workers: m.Counts[fuzzWorkers], fired: map[string]int64{},
		elapsed:   time.Duration(m.Durations[fuzzElapsed] * float64(time.Second)),
		shrinking: time.Duration(m.Durations[fuzzShrinking] * float64(time.Second)),
		findings:  m.Findings,
	}
	for _, r := range m.Used {
		v.interrupted = v.interrupted || r.Summary.Interrupted
	}
	for k, n := range m.Counts {
		if kind, ok := strings.CutPrefix(k, fuzzFiredPrefix); ok {
			v.fired[kind] = n
		}
	}
	return v.print(out, nil)
}

// print writes the report; interrupted is the interruption that stopped
// the run, if one did.
func (v fuzzView) print(w io.Writer, interrupted error) error {
	var b strings.Builder
	rate := 0.0
	if v.elapsed > 0 {
		rate = float64(v.cases) / v.elapsed.Seconds()
	}
	fmt.Fprintf(&b, "fuzz: %d schedules in %v: %.0f schedules/s on %d workers, %d steps, %d distinct traces\n",
		v.cases, v.elapsed.Round(time.Millisecond), rate, v.workers, v.steps, v.traces)
	if v.interrupted {
		why := "the run was stopped"
		if interrupted != nil {
			why = interrupted.Error()
		}
		fmt.Fprintf(&b, "%s: %d schedules ran to the end (the ones cut short are not counted)\n", why, v.cases)
	}
	var kinds []string
	var total int64
	for k, n := range v.fired {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
		total += n
	}
	slices.Sort(kinds)
	fmt.Fprintf(&b, "strategy %s, faults %s", v.strategy, v.faults)
	if v.race {
		b.WriteString(", race detector on")
	}
	fmt.Fprintf(&b, ": %d faults fired", total)
	if len(kinds) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(kinds, ", "))
	}
	fmt.Fprintf(&b, "; %d schedules had ranks fail cleanly\n", v.crashed)
	fmt.Fprintf(&b, "failures: %d cases, %d distinct", v.failed, len(v.findings))
	if len(v.findings) > 0 && v.shrinking > 0 {
		fmt.Fprintf(&b, "; shrinking took %v", v.shrinking.Round(time.Millisecond))
	}
	b.WriteString("\n")
	for i, x := range v.findings {
		fmt.Fprintf(&b, "\nFAIL %d/%d (%d cases, first seed %d): %s\n", i+1, len(v.findings), x.Count, x.Seed, x.Title)
		for _, l := range x.Lines {
			fmt.Fprintf(&b, "  %s\n", l)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// maxInlineCommand is the longest shrunk case printed as a command without
// --save-dir; a longer one (a long list of decisions) is summarised.
const maxInlineCommand = 2000

// caseSaver writes cases to --save-dir, when given; else cases are printed
// as commands.
type caseSaver struct {
	dir  string
	errs []error // files that could not be written
}

// line is the replay command of o: through the file name it is saved to
// under the directory, else inline. A shrunk case too long to print is
// summarised, with how to get it.
func (s *caseSaver) line(o fuzz.Outcome, name string, shrunk bool) string {
	cmd := o.Case.Command() + " --expect-trace " + shortHash(o.Trace)
	if s.dir == "" {
		if shrunk && len(cmd) > maxInlineCommand {
			return fmt.Sprintf("%d decisions, too long to print: rerun with --save-dir D to get its file, or add --shrink --save F to the replay command above", len(o.Schedule))
		}
		return cmd
	}
	path := filepath.Join(s.dir, name)
	if err := fuzz.Save(path, o); err != nil {
		s.errs = append(s.errs, fmt.Errorf("--save-dir: %w", err))
		return fmt.Sprintf("%s (not saved: %v)", cmd, err)
	}
	return "symmem replay --case " + path
}

// shortHash is the prefix of a trace hash that replay --expect-trace takes.
func shortHash(h string) string { return h[:min(16, len(h))] }
