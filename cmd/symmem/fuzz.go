package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/symmem/symmem/backend"
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
whose command would be long is saved to a file that symmem replay --case
reads. Exits non-zero when any case fails.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runFuzz(cmd.Context(), f, cmd.OutOrStdout())
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
	fl.IntVarP(&f.jobs, "jobs", "j", d.Workers, "cases run at once")
	fl.StringVar(&f.worlds, "worlds", "2-8", "world sizes: a range (2-8) or a list (2,4,8)")
	fl.StringSliceVar(&f.sizes, "sizes", nil, "tensor sizes (default 4,16,64,260,1KiB,4KiB,8196,16KiB,64KiB)")
	fl.StringSliceVar(&f.algos, "algos", algos, "algorithms: one-shot (and its _out and _copy forms), two-shot (in place and _out), ll, auto (the intra-node service)")
	fl.DurationVar(&f.timeout, "timeout", d.Timeout, "timeout of every rank wait (virtual time)")
	fl.Int64Var(&f.maxSteps, "max-steps", d.MaxSteps, "scheduling steps after which a run counts as livelocked")
	fl.BoolVar(&f.race, "race", d.Race, "run every schedule with the happens-before race detector; a data race is a failure")
	kernelsFlag(fl, &f.kernels)
	fl.BoolVar(&f.shrink, "shrink", d.Shrink, "shrink the first case of each distinct failure")
	fl.IntVar(&f.shrinkRuns, "shrink-runs", d.Budget, "runs one shrink may take")
	fl.StringVar(&f.saveDir, "save-dir", "", "write each failure's case and its shrunk form to this directory (default: long ones to a new temporary directory)")
	fl.BoolVar(&f.progress, "progress", true, "show a progress bar (only when stdout is a terminal)")
	return cmd
}

func (f *fuzzFlags) config() (fuzz.Config, error) {
	errs := []error{checkTimeout(f.timeout)}
	for _, n := range []struct {
		flag string
		v    int64
	}{{"seeds", int64(f.seeds)}, {"jobs", int64(f.jobs)}, {"max-steps", f.maxSteps}, {"depth", int64(f.depth)},
		{"shrink-runs", int64(f.shrinkRuns)}} {
		if n.v < 0 {
			errs = append(errs, fmt.Errorf("--%s %d: want a number >= 0", n.flag, n.v))
		}
	}
	if f.time < 0 {
		errs = append(errs, fmt.Errorf("--time %v: want a duration >= 0", f.time))
	}
	if err := errors.Join(errs...); err != nil {
		return fuzz.Config{}, err
	}
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
	if err := backend.RefuseUnderLaunch("symmem fuzz", "run it without launch"); err != nil {
		return err
	}
	cfg, err := f.config()
	if err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	// An interrupt stops the session: no case starts after it, and the
	// report covers the cases that ran.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	finish := func() {}
	if f.progress && out == io.Writer(os.Stdout) && isTerminal(os.Stdout) {
		cfg.Progress, finish = fuzzProgress(cfg)
	}
	rep, ferr := fuzz.Fuzz(ctx, cfg)
	finish()
	// The cases that ran are reported even when some could not run.
	if err := printReport(out, cfg, f, rep); err != nil {
		return errors.Join(ferr, err)
	}
	if ferr != nil {
		return ferr
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
	saver := &caseSaver{dir: f.saveDir}
	for i, fr := range rep.Failures {
		o := fr.First
		fmt.Fprintf(&b, "\nFAIL %d/%d (%d cases, first seed %d): %s\n", i+1, len(rep.Failures), fr.Count, o.Case.Seed, o.Failure.Summary())
		if len(o.Fired) > 0 {
			fmt.Fprintf(&b, "  faults fired: %s\n", o.Fired)
		}
		line, err := saver.line(o, fmt.Sprintf("fuzz-seed-%d.json", o.Case.Seed))
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "  replay: %s\n", line)
		if fr.ShrinkErr != nil {
			fmt.Fprintf(&b, "  not shrunk: %v\n", fr.ShrinkErr)
		}
		if s := fr.Shrunk; s != nil {
			m := s.Outcome
			fmt.Fprintf(&b, "  shrunk in %d runs: %d of %d steps, %d of %d faults, %d of %d decisions: %s\n",
				s.Runs, len(m.Case.Program.Steps), s.Steps, len(m.Fired), s.Faults, len(m.Schedule), s.Decisions, m.Failure.Summary())
			line, err := saver.line(m, fmt.Sprintf("fuzz-seed-%d-shrunk.json", o.Case.Seed))
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, "  minimal case: %s\n", line)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// maxInlineCommand is the longest replay command printed as it is; longer
// cases are saved to files.
const maxInlineCommand = 400

// caseSaver saves cases to files: every case when a directory was given,
// else only those too long to print, to a temporary directory made on
// first use.
type caseSaver struct {
	dir  string // --save-dir
	temp string // the temporary directory, once made
	made bool
}

// line is the replay command of o: inline, or through the file name it is
// saved to.
func (s *caseSaver) line(o fuzz.Outcome, name string) (string, error) {
	cmd := o.Case.Command() + " --expect-trace " + shortHash(o.Trace)
	dir := s.dir
	switch {
	case dir == "" && len(cmd) <= maxInlineCommand:
		return cmd, nil
	case dir == "" && s.temp == "":
		temp, err := os.MkdirTemp("", "symmem-fuzz-")
		if err != nil {
			return "", fmt.Errorf("save a long case: %w", err)
		}
		s.temp, dir = temp, temp
	case dir == "":
		dir = s.temp
	case !s.made:
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("--save-dir: %w", err)
		}
		s.made = true
	}
	path := filepath.Join(dir, name)
	if err := fuzz.Save(path, o); err != nil {
		return "", err
	}
	return "symmem replay --case " + path, nil
}

// shortHash is the prefix of a trace hash that replay --expect-trace takes.
func shortHash(h string) string { return h[:min(16, len(h))] }
