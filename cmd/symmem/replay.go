package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/symmem/symmem/backend"
	"github.com/symmem/symmem/fuzz"
	"github.com/symmem/symmem/simjob"
)

type replayFlags struct {
	caseFile  string
	program   string
	seed      uint64
	inputSeed uint64
	strategy  string
	depth     int
	steps     int64
	specFlags
	faults      string
	plan        string
	decisions   string
	timeout     time.Duration
	maxSteps    stepBound
	race        bool
	kernels     string
	expectTrace string
	save        string
	shrink      bool
	shrinkRuns  int
	trace       bool
	diff        bool

	inputSeedSet, planSet, raceSet bool
}

func newReplayCmd(a *app) *cobra.Command {
	f := &replayFlags{}
	cmd := &cobra.Command{
		Use:   "replay",
		Short: "Run one fuzz case again, exactly, and explain it",
		Long: `Run one case of symmem fuzz again: the same program (--program, or one
all-reduce from --world, --bytes, --dtype, --op, --algo and --offset), seed,
strategy, faults and (with --decisions, or from a --case file) scheduling
decisions give the same run and the same trace hash. Prints the case, the
faults that fired, each rank's verdict (every result right, a wrong result,
an error, or no return) and the verdict of the case; --decisions-diff also
lists every scheduling decision that differs from the default policy.
--expect-trace checks the trace hash (a prefix is enough); --shrink reduces a
failing case to its essentials; --save writes the (shrunk) case to a file
that --case reads back (checked before the run). The race detector is on
unless --race=false. --log-level debug logs what every rank does.
SIGINT or SIGTERM stops the run or the shrink within a second or two, prints
what it has and exits with status 130 (SIGINT) or 143 (SIGTERM). Exits
non-zero when the case fails or the trace differs from the one expected.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.inputSeedSet = cmd.Flags().Changed("input-seed")
			f.planSet = cmd.Flags().Changed("plan")
			f.raceSet = cmd.Flags().Changed("race")
			return runReplay(cmd.Context(), f, cmd.OutOrStdout(), a.log)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.caseFile, "case", "", "a case file written by --save or symmem fuzz (other case flags but --race are ignored)")
	fl.StringVar(&f.program, "program", "", "the program every rank runs, as symmem fuzz prints it (default: one all-reduce from --world, --bytes, ...)")
	fl.Uint64Var(&f.seed, "seed", 0, "seed of the schedule (and of the inputs unless --input-seed)")
	fl.Uint64Var(&f.inputSeed, "input-seed", 0, "seed of the inputs (default: --seed)")
	fl.StringVar(&f.strategy, "strategy", fuzz.StrategyRandom, "random, pct, portfolio, or replay (follows --decisions)")
	fl.IntVar(&f.depth, "depth", fuzz.DefaultDepth, "PCT depth")
	fl.Int64Var(&f.steps, "steps", 0, "estimated run length for PCT and drawn plans (0: estimate it from the program)")
	fl.IntVar(&f.world, "world", 4, "number of ranks")
	fl.StringVar(&f.bytes, "bytes", "4KiB", "tensor size in bytes")
	fl.StringVar(&f.dtype, "dtype", "float32", "element type")
	fl.StringVar(&f.op, "op", "sum", "reduction")
	fl.StringVar(&f.algo, "algo", "auto", "algorithm: auto, one-shot, two-shot, ll")
	fl.Uint64Var(&f.offset, "offset", 0, "byte offset of the tensor in the symmetric buffer")
	fl.StringVar(&f.faults, "faults", "none", "fault set judging the run: none, safety or all")
	fl.StringVar(&f.plan, "plan", "", "the faults, e.g. 'crash rank=2 step=517; delay rank=1 op=3 for=40ms' (default: drawn from the seed)")
	fl.StringVar(&f.decisions, "decisions", "", "scheduling decisions for --strategy replay ('step:task.run ...')")
	fl.DurationVar(&f.timeout, "timeout", fuzz.DefaultTimeout, "timeout of every rank wait (virtual time)")
	fl.Var(&f.maxSteps, "max-steps", "step bound: a number, or auto (sized from the program, at least 2,000,000)")
	fl.BoolVar(&f.race, "race", true, "run the happens-before race detector; a data race fails the case")
	kernelsFlag(fl, &f.kernels)
	fl.StringVar(&f.expectTrace, "expect-trace", "", "fail unless the trace hash starts with this (1 to 64 hex digits)")
	fl.StringVar(&f.save, "save", "", "write the (shrunk) case to this file, which --case reads")
	fl.BoolVar(&f.shrink, "shrink", false, "shrink a failing case and show the minimal one")
	fl.IntVar(&f.shrinkRuns, "shrink-runs", fuzz.DefaultShrinkRuns, "runs the shrink may take (at least 1)")
	fl.BoolVar(&f.trace, "trace", false, "print every trace event")
	fl.BoolVar(&f.diff, "decisions-diff", false, "list every scheduling decision that differs from the default policy")
	return cmd
}

// check checks the flags that do not describe the case, naming each bad
// one: they are checked before anything runs.
func (f *replayFlags) check() error {
	var errs []error
	if f.shrinkRuns < 1 {
		errs = append(errs, fmt.Errorf("--shrink-runs %d: want at least 1", f.shrinkRuns))
	}
	if f.expectTrace != "" && !isHexPrefix(f.expectTrace) {
		errs = append(errs, fmt.Errorf("--expect-trace %q: want 1 to 64 hex digits of a trace hash", f.expectTrace))
	}
	if f.save != "" {
		errs = append(errs, checkSaveFile(f.save))
	}
	if f.caseFile == "" {
		errs = append(errs, checkTimeout(f.timeout))
		if f.depth < 1 {
			errs = append(errs, fmt.Errorf("--depth %d: want a PCT depth of at least 1", f.depth))
		}
		if f.steps < 0 {
			errs = append(errs, fmt.Errorf("--steps %d: want an estimated run length >= 0 (0: estimate it from the program)", f.steps))
		}
	}
	return errors.Join(errs...)
}

// isHexPrefix reports whether s is 1 to 64 hex digits.
func isHexPrefix(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, r := range strings.ToLower(s) {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
			return false
		}
	}
	return true
}

// checkSaveFile checks, before the run, that path can be written: its
// directory exists and takes a new file, and path is not a directory.
func checkSaveFile(path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("--save %s: is a directory, want a file name", path)
	}
	dir := filepath.Dir(path)
	probe, err := os.CreateTemp(dir, ".symmem-write-check-*")
	if err != nil {
		return fmt.Errorf("--save %s: cannot write in %s: %w", path, dir, err)
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// buildCase turns the flags into a case; expected is the trace hash a
// case file recorded ("" when none).
func (f *replayFlags) buildCase() (c fuzz.Case, expected string, err error) {
	kern, err := parseKernels(f.kernels)
	if err != nil {
		return c, "", err
	}
	if f.caseFile != "" {
		c, expected, err := fuzz.Load(f.caseFile)
		if f.raceSet {
			c.Race = f.race // the detector leaves the trace as it is
		}
		c.Kernels.PTX = c.Kernels.PTX || kern.PTX
		return c, expected, err
	}
	var errs []error
	set, err := fuzz.ParseFaultSet(f.faults)
	errs = append(errs, flagErr("faults", err))
	plan, err := fuzz.ParsePlan(f.plan)
	errs = append(errs, flagErr("plan", err))
	sched, err := fuzz.ParseSchedule(f.decisions)
	errs = append(errs, flagErr("decisions", err))
	if err := errors.Join(errs...); err != nil {
		return c, "", err
	}
	if f.decisions != "" && f.strategy != fuzz.StrategyReplay {
		return c, "", fmt.Errorf("--decisions needs --strategy replay (got %q)", f.strategy)
	}
	inputSeed := f.seed
	if f.inputSeedSet {
		inputSeed = f.inputSeed
	}
	var prog fuzz.Program
	if f.program != "" {
		if prog, err = fuzz.ParseProgram(f.program); err != nil {
			return c, "", flagErr("program", err)
		}
	} else {
		spec, err := f.spec(inputSeed)
		if err != nil {
			return c, "", err
		}
		if prog, err = fuzz.SpecProgram(spec); err != nil {
			return c, "", err
		}
	}
	// Bad numbers are named by check; the case takes the defaults instead,
	// so that its own checks do not report them again.
	c = fuzz.Case{
		Program: prog, InputSeed: inputSeed, Seed: f.seed, Strategy: f.strategy, Depth: max(f.depth, 0), Steps: max(f.steps, 0),
		Faults: set, Plan: plan, Schedule: sched, Timeout: max(f.timeout, 0), MaxSteps: int64(f.maxSteps), Race: f.race,
		Kernels: kern,
	}
	if c.Steps == 0 {
		c.Steps = fuzz.EstimateSteps(prog)
	}
	if !f.planSet {
		c.Plan = fuzz.NewPlan(c.Seed, set, prog, c.Steps, c.Timeout)
	}
	if err := c.Validate(); err != nil {
		return c, "", err
	}
	return c, "", nil
}

func runReplay(ctx context.Context, f *replayFlags, out io.Writer, log *zap.Logger) error {
	if err := backend.RefuseUnderLaunch("symmem replay", "run it without launch"); err != nil {
		return err
	}
	if log == nil {
		log = zap.NewNop()
	}
	ferr := f.check()
	c, expected, err := f.buildCase()
	if err := errors.Join(ferr, err); err != nil {
		return err
	}
	var bufs uint64
	for _, b := range c.Program.Bufs {
		bufs += b
	}
	if err := checkSimMemory(fmt.Sprintf("the case's %d ranks x %d bytes of buffers", c.Program.World, bufs), c.Program.World, bufs); err != nil {
		return err
	}
	if log != nil && log.Core().Enabled(zap.DebugLevel) {
		c.Instrument = func(cfg *simjob.Config) { cfg.Logger = log }
		log.Debug("replay", zap.String("case", c.Command()), zap.Int64("step bound", c.StepBound()))
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signalContext(ctx)
	defer stop()
	if f.caseFile != "" {
		fmt.Fprintf(out, "from:    %s\n", f.caseFile)
	}
	o, err := fuzz.RunTracedContext(ctx, c)
	if err != nil {
		return interrupted(ctx, "replay", err)
	}
	if err := report(out, o, f.trace, f.diff); err != nil {
		return err
	}
	if f.expectTrace != "" {
		expected = f.expectTrace
	}
	if expected != "" && !strings.HasPrefix(o.Trace, strings.ToLower(expected)) {
		return fmt.Errorf("trace %s differs from the expected %s: the case did not replay exactly", o.Trace, expected)
	}
	if expected != "" {
		fmt.Fprintf(out, "trace matches %s\n", expected)
	}
	final := o
	if f.shrink && o.Failed() {
		log.Debug("shrink", zap.Int("budget", f.shrinkRuns))
		s, err := fuzz.ShrinkContext(ctx, o, f.shrinkRuns)
		if err != nil {
			// The case as replayed is still saved when asked.
			fmt.Fprintf(out, "\nnot shrunk: %v\n", err)
			return errors.Join(interrupted(ctx, "replay", err), saveCase(out, f.save, final), fmt.Errorf("the case failed: %v", o.Failure))
		}
		fmt.Fprintf(out, "\nshrunk in %d runs: %d of %d steps, %d of %d faults, %d of %d decisions\n",
			s.Runs, len(s.Outcome.Case.Program.Steps), s.Steps, len(s.Outcome.Fired), s.Faults, len(s.Outcome.Schedule), s.Decisions)
		if err := report(out, s.Outcome, false, f.diff); err != nil {
			return err
		}
		final = s.Outcome
	}
	if err := saveCase(out, f.save, final); err != nil {
		return err
	}
	if o.Failed() {
		return fmt.Errorf("the case failed: %v", o.Failure)
	}
	return nil
}

// interrupted returns the interruptedError of what when a signal stopped
// err's work, else err.
func interrupted(ctx context.Context, what string, err error) error {
	if ierr := interruptErr(ctx, what); ierr != nil && errors.Is(err, context.Canceled) {
		return ierr
	}
	return err
}

// saveCase writes o's case to path, when given, and says so.
func saveCase(out io.Writer, path string, o fuzz.Outcome) error {
	if path == "" {
		return nil
	}
	if err := fuzz.Save(path, o); err != nil {
		return fmt.Errorf("--save: %w", err)
	}
	fmt.Fprintf(out, "saved: symmem replay --case %s\n", path)
	return nil
}

func report(w io.Writer, o fuzz.Outcome, events, decisions bool) error {
	if events {
		for _, e := range o.Events {
			if _, err := fmt.Fprintln(w, e); err != nil {
				return err
			}
		}
	}
	return fuzz.Describe(w, o, decisions)
}
