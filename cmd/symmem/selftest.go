package main

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/symmem/symmem/conformance"
	"github.com/symmem/symmem/rank"
)

type selftestFlags struct {
	world   int
	dev     string
	cases   string
	cycles  int
	seed    uint64
	timeout time.Duration
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
outcome. Exits non-zero if any case fails.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSelftest(a, f, cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.world, "world", 2, "number of ranks (under launch: the launcher's)")
	fl.StringVar(&f.dev, "device", "sim", "device: sim or cuda")
	fl.StringVar(&f.cases, "cases", ".", "regular expression selecting cases by name")
	fl.IntVar(&f.cycles, "cycles", 500, "alloc/rendezvous/all-reduce/free cycles of the leak case, >= 1")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of inputs and schedules")
	fl.DurationVar(&f.timeout, "timeout", rank.DefaultTimeout, "timeout of every wait, > 0 (virtual time on sim)")
	return cmd
}

type caseResult struct {
	name    string
	elapsed time.Duration
	err     error
}

// selftestLargest is the largest tensor a conformance case reduces (the
// intra-node-comm case's 10 MiB), for the simulator's memory check.
const selftestLargest = 10 << 20

// validate checks every flag before any work starts.
func (f *selftestFlags) validate() error {
	errs := []error{checkDevice(f.dev), checkTimeout(f.timeout), checkSimUnderLaunch("selftest", f.dev)}
	if _, launched, _ := rank.ProcessEnvFromOS(); !launched || f.dev != "cuda" {
		errs = append(errs, checkWorld("world", f.world))
	}
	if f.cycles < 1 {
		errs = append(errs, fmt.Errorf("--cycles %d: want at least 1", f.cycles))
	}
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

func runSelftest(a *app, f *selftestFlags, out io.Writer) error {
	if err := f.validate(); err != nil {
		return err
	}
	env, launched, err := rank.ProcessEnvFromOS()
	if err != nil {
		return err
	}
	world, mode := f.world, f.dev
	switch {
	case f.dev == "sim":
	case f.dev == "cuda" && launched:
		world, mode = env.World, "cuda multi-process"
	case f.dev == "cuda":
		if err := checkCUDA(world); err != nil {
			return err
		}
		mode = "cuda in-process"
	default:
		return fmt.Errorf("--device %q: want sim or cuda", f.dev)
	}
	cases, err := conformance.Select(conformance.Options{Cycles: f.cycles, Seed: f.seed}, f.cases, world)
	if err != nil {
		return err
	}
	if len(cases) == 0 {
		return fmt.Errorf("no case matches %q on %d ranks", f.cases, world)
	}
	var results []caseResult
	for _, c := range cases {
		start := time.Now()
		var errs []error
		switch {
		case f.dev == "sim":
			res, err := rank.Simulate(rank.SimConfig{World: world, Seed: f.seed, Timeout: f.timeout, Logger: a.log}, c.Program)
			errs = append(errs, err, res.Err())
		case launched:
			dev, err := openCUDA(env.LocalRank)
			if err == nil {
				err = rank.RunProcess(env, dev, a.log, f.timeout, c.Program)
				dev.Close()
			}
			errs = append(errs, err)
		default:
			errs = rank.RunInProcess(rank.LiveConfig{World: world, Open: openCUDA, Logger: a.log, Timeout: f.timeout,
				AllowOverlappingDevices: rank.AllowOverlappingFromEnv()}, c.Program)
		}
		results = append(results, caseResult{name: c.Name, elapsed: time.Since(start), err: errors.Join(errs...)})
	}
	who := "all ranks"
	if launched {
		who = fmt.Sprintf("rank %d", env.Rank)
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
	if failed > 0 {
		return fmt.Errorf("selftest: %d of %d cases failed", failed, len(results))
	}
	return nil
}
