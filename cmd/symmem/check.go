package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/symmem/symmem/ptxcheck"
)

// checkFlags are the flags of symmem check.
type checkFlags struct {
	ptx        string
	listUnsupp bool
	seeds      int
	firstSeed  uint64
	seed       int64
	worlds     string
	strategy   string
	depth      int
	maxThreads int
	maxBlocks  int
	maxSteps   int64
	race       bool
	showRuns   bool
	vars       []string
}

func newCheckCmd() *cobra.Command {
	f := &checkFlags{}
	cmd := &cobra.Command{
		Use:   "check HARNESS.json | --ptx FILE --list-unsupported",
		Short: "Run any PTX kernel from a harness file on simulated GPUs and report races, hangs, failures and wrong results",
		Long: `check runs the program of a harness file (docs/check.md) on simulated GPUs:
every rank allocates the buffers, launches the PTX entry points with the
grids and parameters it gives, and checks the results, under the seeded
scheduler and the race detector, at every world and over --seeds seeds.
Each distinct finding is printed once, with the PTX lines (and CUDA lines,
for PTX built with nvcc -lineinfo) of a race's two accesses or of a hang's
spinning threads, and the command that replays it. It exits non-zero when
it found anything.

With --list-unsupported it prints every line of --ptx that the simulator
cannot run, and runs nothing.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCheck(cmd.OutOrStdout(), f, args, cmd.Flags().Changed("seed"))
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.ptx, "ptx", "", "PTX file (with --list-unsupported; a harness names its own)")
	fl.BoolVar(&f.listUnsupp, "list-unsupported", false, "print every line of --ptx the simulator cannot run, run nothing")
	fl.IntVar(&f.seeds, "seeds", 20, "seeds to run at each world")
	fl.Uint64Var(&f.firstSeed, "first-seed", 0, "the first seed")
	fl.Int64Var(&f.seed, "seed", 0, "run this one seed (the replay of a finding)")
	fl.StringVar(&f.worlds, "worlds", "", "world sizes, 2-8 or 2,4,8 (default: the harness's)")
	fl.StringVar(&f.strategy, "strategy", "random", "schedule: random or pct")
	fl.IntVar(&f.depth, "depth", 3, "PCT depth")
	fl.IntVar(&f.maxThreads, "max-threads", 0, "cap every launch's threads per block (0: the launch's own)")
	fl.IntVar(&f.maxBlocks, "max-blocks", 0, "cap every launch's blocks (0: the launch's own)")
	fl.Int64Var(&f.maxSteps, "max-steps", ptxcheck.DefaultMaxSteps, "scheduling steps a run may take before it counts as a hang")
	fl.BoolVar(&f.race, "race", true, "run the race detector")
	fl.BoolVar(&f.showRuns, "runs", false, "print every run's world, seed, steps and trace hash")
	fl.StringArrayVar(&f.vars, "var", nil, "NAME=EXPR: replace (or add) a var of the harness (repeatable)")
	return cmd
}

// runCheck runs symmem check.
func runCheck(out io.Writer, f *checkFlags, args []string, oneSeed bool) error {
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
		MaxThreads: f.maxThreads, MaxBlocks: f.maxBlocks, MaxSteps: f.maxSteps, NoRace: !f.race, Vars: vars}
	if oneSeed {
		opts.Seeds, opts.FirstSeed = 1, uint64(f.seed)
	}
	rep, err := ptxcheck.RunProgram(prog, src, opts)
	if err != nil {
		return err
	}
	printCheck(out, rep, f, harness, oneSeed || f.showRuns)
	if n := len(rep.Findings); n > 0 {
		return fmt.Errorf("check %s: %d findings", harness, n)
	}
	return nil
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
func printCheck(out io.Writer, rep *ptxcheck.Report, f *checkFlags, harness string, runs bool) {
	worlds := make([]string, len(rep.Worlds))
	for i, w := range rep.Worlds {
		worlds[i] = fmt.Sprint(w)
	}
	fmt.Fprintf(out, "check %s: PTX %s, worlds %s, %d seeds each, strategy %s, launch shape cap: %s\n",
		harness, rep.Source, strings.Join(worlds, ","), rep.Seeds, f.strategy, rep.Cap)
	for _, s := range rep.Shapes {
		fmt.Fprintf(out, "launch %s\n", s)
	}
	if runs {
		for _, r := range rep.Runs {
			fmt.Fprintf(out, "world %d seed %d: %d steps, %d findings, trace %s\n", r.World, r.Seed, r.Steps, r.Findings, r.Trace)
		}
	}
	fmt.Fprintf(out, "%d runs, %d distinct findings\n", len(rep.Runs), len(rep.Findings))
	for i, x := range rep.Findings {
		fmt.Fprintf(out, "\n%d. %s\n", i+1, x.Title)
		fmt.Fprintf(out, "   found at world %d seed %d, after %d schedules of that world; in %d of %d runs\n",
			x.World, x.Seed, x.Schedules, x.Runs, len(rep.Runs))
		for _, d := range x.Details {
			fmt.Fprintf(out, "   %s\n", strings.ReplaceAll(d, "\n", "\n   "))
		}
		fmt.Fprintf(out, "   replay: %s\n", replayCommand(harness, f, x))
	}
}

// replayCommand is the symmem check command that reruns a finding's run.
func replayCommand(harness string, f *checkFlags, x *ptxcheck.Finding) string {
	args := []string{"symmem", "check", harness, "--worlds", fmt.Sprint(x.World), "--seed", fmt.Sprint(x.Seed)}
	if f.strategy != "random" {
		args = append(args, "--strategy", f.strategy, "--depth", fmt.Sprint(f.depth))
	}
	if f.maxThreads > 0 {
		args = append(args, "--max-threads", fmt.Sprint(f.maxThreads))
	}
	if f.maxBlocks > 0 {
		args = append(args, "--max-blocks", fmt.Sprint(f.maxBlocks))
	}
	if f.maxSteps != ptxcheck.DefaultMaxSteps {
		args = append(args, "--max-steps", fmt.Sprint(f.maxSteps))
	}
	if !f.race {
		args = append(args, "--race=false")
	}
	for _, v := range f.vars {
		args = append(args, "--var", v)
	}
	for i, a := range args {
		if strings.ContainsAny(a, " '\"*()%$") {
			args[i] = "'" + a + "'"
		}
	}
	return strings.Join(args, " ")
}
