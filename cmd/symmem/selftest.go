package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/symmem/symmem/backend"
	"github.com/symmem/symmem/conformance"
	"github.com/symmem/symmem/launch"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/simjob"
)

type selftestFlags struct {
	world   int
	dev     string
	cases   string
	cycles  int
	seed    uint64
	timeout time.Duration
	kernels string
	bad     []error // flags whose values did not parse
}

func newSelftestCmd(a *app) *cobra.Command {
	f := &selftestFlags{}
	cmd := &cobra.Command{
		Use:   "selftest",
		Short: "Run the conformance cases (reference table, signals, IntraNodeComm, leaks...) and print what ran",
		Long: `Run every self-checking conformance case on the simulator or on GPUs. On cuda the
ranks run as goroutines of this process, or one per process under
'symmem launch --nproc N -- symmem selftest --device cuda'. Each rank checks
its own results; the table lists each case, the mode, world size, time and
outcome. Exits non-zero if any case fails.

Its heap is reserved for transparent huge pages where Linux leaves them
to the program (a simulation's records are read at random); set
SYMMEM_HUGE_HEAP=0 to keep it as Go leaves it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.bad = flagErrors(cmd)
			a.reserveHeap()
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			return runSelftest(ctx, a, f, cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.world, "world", 2, "number of ranks (under launch: the launcher's)")
	fl.StringVar(&f.dev, "device", "sim", "device: sim or cuda")
	fl.StringVar(&f.cases, "cases", ".", "regular expression selecting cases by name")
	fl.IntVar(&f.cycles, "cycles", 500, "alloc/rendezvous/all-reduce/free cycles of the leak case, >= 1")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of inputs and schedules")
	fl.DurationVar(&f.timeout, "timeout", rank.DefaultTimeout, "timeout of every wait, > 0 (virtual time on sim)")
	kernelsFlag(fl, &f.kernels)
	collectFlagErrors(cmd)
	return cmd
}

type caseResult struct {
	name    string
	elapsed time.Duration
	err     error
}

// maxCycles bounds --cycles: a selftest is meant to end.
const maxCycles = 1_000_000

// selftestLargest is the largest tensor a conformance case reduces (the
// intra-node-comm case's 10 MiB), for the simulator's memory check.
const selftestLargest = 10 << 20

// validate checks every flag before any work starts.
func (f *selftestFlags) validate() error {
	errs := append(f.bad, checkDevice(f.dev), checkTimeout(f.timeout), checkKernels(f.kernels), checkKernelImage())
	if _, launched, _ := launch.ProcessEnvFromOS(); !launched || f.dev != "cuda" {
		errs = append(errs, checkWorld("world", f.world))
	}
	errs = append(errs, checkCount("cycles", f.cycles, 1, maxCycles))
	if _, err := regexp.Compile(f.cases); err != nil {
		errs = append(errs, fmt.Errorf("--cases %q: %w", f.cases, err))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if f.dev == "sim" {
		return checkSimMemory(fmt.Sprintf("--world %d", f.world), f.world, selftestLargest)
	}
	return nil
}

func runSelftest(ctx context.Context, a *app, f *selftestFlags, out io.Writer) error {
	start := time.Now()
	if err := f.validate(); err != nil {
		return err
	}
	kern, err := simKernels(f.kernels)
	if err != nil {
		return err
	}
	var stop simStopper
	b, err := backend.Choose(backend.Options{Device: f.dev, World: f.world, Seed: f.seed, Timeout: f.timeout,
		Logger: a.log, Command: "selftest", Sim: func(c *simjob.Config) { kern(c); stop.adjust(c) }})
	if err != nil {
		return err
	}
	world, mode := b.World(), b.Kind().String()
	cases, err := conformance.Select(conformance.Options{Cycles: f.cycles, Seed: f.seed}, f.cases, world)
	if err != nil {
		return err
	}
	if len(cases) == 0 {
		return fmt.Errorf("no case matches %q on %d ranks", f.cases, world)
	}
	var current atomic.Value
	current.Store("")
	prog := a.newProgress(out, len(cases) > 1, "selftest", len(cases), func() string { return current.Load().(string) })
	var results []caseResult
	var stopped *interruptedError
	for _, c := range cases {
		current.Store(c.Name)
		began := time.Now()
		err := runInterruptible(ctx, stop.halt, func() error {
			_, err := b.Run(c.Program)
			return err
		})
		if stopped = interruption(ctx); stopped != nil {
			break // the case did not finish: no verdict
		}
		results = append(results, caseResult{name: c.Name, elapsed: time.Since(began), err: err})
		prog.increment()
	}
	prog.done()
	who := "all ranks"
	if r := b.Rank(); r >= 0 {
		who = fmt.Sprintf("rank %d", r)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "case\tmode\tworld\tchecked by\ttime\tresult\n")
	failed := 0
	for _, r := range results {
		status := "ok"
		if r.err != nil {
			failed++
			status = "FAIL: " + strings.ReplaceAll(r.err.Error(), "\n", "; ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%v\t%s\n", r.name, mode, world, who, r.elapsed.Round(time.Millisecond), status)
	}
	tw.Flush()
	took := time.Since(start).Round(time.Millisecond)
	switch {
	case stopped != nil:
		fmt.Fprintf(out, "selftest: %s after %d of %d cases (%d failed) in %v\n", stopped, len(results), len(cases), failed, took)
		return stopped
	case failed > 0:
		fmt.Fprintf(out, "selftest: %d of %d cases failed in %v\n", failed, len(cases), took)
		return fmt.Errorf("selftest: %d of %d cases failed", failed, len(results))
	}
	fmt.Fprintf(out, "selftest: %d cases ok in %v\n", len(cases), took)
	return nil
}
