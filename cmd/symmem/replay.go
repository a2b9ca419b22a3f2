package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/symmem/symmem/backend"
	"github.com/symmem/symmem/fuzz"
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
	maxSteps    int64
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

func newReplayCmd(_ *app) *cobra.Command {
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
that --case reads back. The race detector is on unless --race=false. Exits
non-zero when the case fails or the trace differs from the one expected.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.inputSeedSet = cmd.Flags().Changed("input-seed")
			f.planSet = cmd.Flags().Changed("plan")
			f.raceSet = cmd.Flags().Changed("race")
			return runReplay(f, cmd.OutOrStdout())
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
	fl.Int64Var(&f.maxSteps, "max-steps", fuzz.DefaultMaxSteps, "step bound")
	fl.BoolVar(&f.race, "race", true, "run the happens-before race detector; a data race fails the case")
	kernelsFlag(fl, &f.kernels)
	fl.StringVar(&f.expectTrace, "expect-trace", "", "fail unless the trace hash starts with this")
	fl.StringVar(&f.save, "save", "", "write the (shrunk) case to this file, which --case reads")
	fl.BoolVar(&f.shrink, "shrink", false, "shrink a failing case and show the minimal one")
	fl.IntVar(&f.shrinkRuns, "shrink-runs", fuzz.DefaultShrinkRuns, "runs the shrink may take")
	fl.BoolVar(&f.trace, "trace", false, "print every trace event")
	fl.BoolVar(&f.diff, "decisions-diff", false, "list every scheduling decision that differs from the default policy")
	return cmd
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
	c = fuzz.Case{
		Program: prog, InputSeed: inputSeed, Seed: f.seed, Strategy: f.strategy, Depth: f.depth, Steps: f.steps,
		Faults: set, Plan: plan, Schedule: sched, Timeout: f.timeout, MaxSteps: f.maxSteps, Race: f.race,
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

func runReplay(f *replayFlags, out io.Writer) error {
	if err := backend.RefuseUnderLaunch("symmem replay", "run it without launch"); err != nil {
		return err
	}
	c, expected, err := f.buildCase()
	if err != nil {
		return err
	}
	var bufs uint64
	for _, b := range c.Program.Bufs {
		bufs += b
	}
	if err := checkSimMemory(fmt.Sprintf("the case's %d ranks x %d bytes of buffers", c.Program.World, bufs), c.Program.World, bufs); err != nil {
		return err
	}
	o, err := fuzz.RunTraced(c)
	if err != nil {
		return err
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
		s, err := fuzz.Shrink(o, f.shrinkRuns)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "\nshrunk in %d runs: %d of %d steps, %d of %d faults, %d of %d decisions\n",
			s.Runs, len(s.Outcome.Case.Program.Steps), s.Steps, len(s.Outcome.Fired), s.Faults, len(s.Outcome.Schedule), s.Decisions)
		if err := report(out, s.Outcome, false, f.diff); err != nil {
			return err
		}
		final = s.Outcome
	}
	if f.save != "" {
		if err := fuzz.Save(f.save, final); err != nil {
			return err
		}
		fmt.Fprintf(out, "saved: symmem replay --case %s\n", f.save)
	}
	if o.Failed() {
		return fmt.Errorf("the case failed: %v", o.Failure)
	}
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
