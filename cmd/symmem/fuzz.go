package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

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
	maxSteps   int64
	race       bool
	kernels    string
	shrink     bool
	shrinkRuns int
	saveDir    string
	progress   bool
}

func newFuzzCmd(_ *app) *cobra.Command {
	f := &fuzzFlags{}
	cmd := &cobra.Command{
		Use:   "fuzz",
		Short: "Fuzz the all-reduce protocol on the simulator: many schedules, sizes and faults",
		Long: `Run one checked all-reduce per seed on the deterministic simulator, each seed
drawing its world size, size, algorithm, dtype, reduction and offset, its
schedule strategy and its faults, and judge every run:

  --faults none    liveness: every rank finishes with the right result;
  --faults safety  crashes, delays, lost and corrupt signal writes, lost
                   messages, lost and wrong fds, slow and failing Store
                   requests: a rank may fail, but only with an error, never
                   with a wrong result, a panic or a hang;
  --faults all     safety plus duplicated signal writes, which the pad
                   protocol cannot tell from real ones (expect wrong results).

With --race the happens-before race detector watches every memory access
and a data race fails the case (in a run with faults, only when every rank
succeeded: after a failure the protocol orders nothing).

Prints schedules per second and each distinct failure once, with the replay
command that reproduces it exactly and, by default, its shrunk form. Exits
non-zero when any case fails.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runFuzz(cmd.Context(), f, cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.seeds, "seeds", 1000, "number of seeds to run (0: until --time passes)")
	fl.Uint64Var(&f.first, "first-seed", 0, "the first seed")
	fl.DurationVar(&f.time, "time", 0, "start no case after this long (0: no limit)")
	fl.StringVar(&f.strategy, "strategy", "portfolio", "schedule strategy: random, pct or portfolio")
	fl.IntVar(&f.depth, "depth", fuzz.DefaultDepth, "PCT depth (strategy pct)")
	fl.StringVar(&f.faults, "faults", "safety", "faults: none, safety or all")
	fl.IntVarP(&f.jobs, "jobs", "j", runtime.NumCPU(), "cases run at once")
	fl.StringVar(&f.worlds, "worlds", "2-8", "world sizes: a range (2-8) or a list (2,4,8)")
	fl.StringSliceVar(&f.sizes, "sizes", nil, "tensor sizes (default 4,16,64,260,1KiB,4KiB,8196,16KiB,64KiB)")
	fl.StringSliceVar(&f.algos, "algos", []string{"one-shot", "two-shot", "auto"}, "algorithms")
	fl.DurationVar(&f.timeout, "timeout", fuzz.DefaultTimeout, "timeout of every rank wait (virtual time)")
	fl.Int64Var(&f.maxSteps, "max-steps", fuzz.DefaultMaxSteps, "scheduling steps after which a run counts as livelocked")
	fl.BoolVar(&f.race, "race", false, "run every schedule with the happens-before race detector; a data race is a failure")
	kernelsFlag(fl, &f.kernels)
	fl.BoolVar(&f.shrink, "shrink", true, "shrink the first case of each distinct failure")
	fl.IntVar(&f.shrinkRuns, "shrink-runs", fuzz.DefaultShrinkRuns, "runs one shrink may take")
	fl.StringVar(&f.saveDir, "save-dir", "", "write each failure's (shrunk) case to this directory")
	fl.BoolVar(&f.progress, "progress", true, "show a progress bar (only when stdout is a terminal)")
	return cmd
}

func (f *fuzzFlags) config() (fuzz.Config, error) {
	set, err := fuzz.ParseFaultSet(f.faults)
	if err != nil {
		return fuzz.Config{}, fmt.Errorf("--faults: %w", err)
	}
	worlds, err := parseWorlds(f.worlds)
	if err != nil {
		return fuzz.Config{}, fmt.Errorf("--worlds: %w", err)
	}
	kern, err := parseKernels(f.kernels)
	if err != nil {
		return fuzz.Config{}, err
	}
	cfg := fuzz.Config{
		Seeds: f.seeds, First: f.first, Time: f.time, Strategy: f.strategy, Depth: f.depth,
		Faults: set, Workers: f.jobs, Worlds: worlds, Timeout: f.timeout, MaxSteps: f.maxSteps, Race: f.race,
		Shrink: f.shrink, Budget: f.shrinkRuns, Kernels: kern,
	}
	for _, s := range f.sizes {
		n, err := parseBytes(s)
		if err != nil {
			return cfg, fmt.Errorf("--sizes: %w", err)
		}
		cfg.Sizes = append(cfg.Sizes, n)
	}
	for _, s := range f.algos {
		a, err := workload.ParseAlgo(s)
		if err != nil {
			return cfg, fmt.Errorf("--algos: %w", err)
		}
		cfg.Algos = append(cfg.Algos, a)
	}
	if f.jobs < 1 {
		return cfg, fmt.Errorf("-j %d: want at least 1", f.jobs)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	return cfg, nil
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

func runFuzz(ctx context.Context, f *fuzzFlags, out io.Writer) error {
	cfg, err := f.config()
	if err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	finish := func() {}
	if f.progress && out == io.Writer(os.Stdout) && isTerminal(os.Stdout) {
		cfg.Progress, finish = fuzzProgress(cfg)
	}
	rep, err := fuzz.Fuzz(ctx, cfg)
	finish()
	if err != nil {
		return err
	}
	if err := printReport(out, cfg, f, rep); err != nil {
		return err
	}
	if rep.Failed > 0 {
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

func printReport(w io.Writer, cfg fuzz.Config, f *fuzzFlags, rep fuzz.Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "fuzz: %d schedules in %v: %.0f schedules/s on %d workers, %d steps, %d distinct traces\n",
		rep.Cases, rep.Elapsed.Round(time.Millisecond), rep.SchedulesPerSecond(), max(cfg.Workers, 1), rep.Steps, rep.Traces)
	var kinds []string
	total := 0
	for k, n := range rep.Fired {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
		total += n
	}
	slices.Sort(kinds)
	fmt.Fprintf(&b, "strategy %s, faults %s", cfg.Strategy, cfg.Faults)
	if cfg.Race {
		b.WriteString(", race detector on")
	}
	fmt.Fprintf(&b, ": %d faults fired", total)
	if len(kinds) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(kinds, ", "))
	}
	fmt.Fprintf(&b, "; %d schedules had ranks fail cleanly\n", rep.Crashed)
	fmt.Fprintf(&b, "failures: %d cases, %d distinct\n", rep.Failed, len(rep.Failures))
	for i, fr := range rep.Failures {
		o := fr.First
		fmt.Fprintf(&b, "\nFAIL %d/%d (%d cases, first seed %d): %v\n", i+1, len(rep.Failures), fr.Count, o.Case.Seed, o.Failure)
		if len(o.Fired) > 0 {
			fmt.Fprintf(&b, "  faults fired: %s\n", o.Fired)
		}
		fmt.Fprintf(&b, "  replay: %s --expect-trace %s\n", o.Case.Command(), shortHash(o.Trace))
		if s := fr.Shrunk; s != nil {
			m := s.Outcome
			fmt.Fprintf(&b, "  shrunk in %d runs: %d of %d faults, %d of %d decisions: %v\n",
				s.Runs, len(m.Fired), s.Faults, len(m.Schedule), s.Decisions, m.Failure)
			if f.saveDir != "" {
				path := filepath.Join(f.saveDir, fmt.Sprintf("fuzz-seed-%d.json", o.Case.Seed))
				if err := os.MkdirAll(f.saveDir, 0o755); err != nil {
					return fmt.Errorf("--save-dir: %w", err)
				}
				if err := fuzz.Save(path, m); err != nil {
					return err
				}
				fmt.Fprintf(&b, "  minimal case: symmem replay --schedule %s\n", path)
			} else if len(m.Schedule) <= maxInlineDecisions {
				fmt.Fprintf(&b, "  minimal case: %s --expect-trace %s\n", m.Case.Command(), shortHash(m.Trace))
			} else {
				fmt.Fprintf(&b, "  minimal case: %d decisions; keep it with --save-dir, or shrink it again with: %s --shrink --save FILE\n",
					len(m.Schedule), o.Case.Command())
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// maxInlineDecisions is the longest shrunk schedule printed as a command
// line; longer ones go to schedule files.
const maxInlineDecisions = 40

// shortHash is the prefix of a trace hash that replay --expect-trace takes.
func shortHash(h string) string { return h[:min(16, len(h))] }
