package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/symmem/symmem/backend"
	"github.com/symmem/symmem/bench"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/workload"
)

// Bounds of bench's counts: a sweep is meant to end.
const (
	maxCalls  = 1_000_000 // --warmup and --iters
	maxLoops  = 1000      // --loops
	maxBlocks = 1 << 16   // --max-blocks
)

// benchDefaults are the per-device defaults of the flags not given: the
// simulator runs every kernel block on the CPU, so it gets a short sweep.
var benchDefaults = map[string]struct {
	max                  string
	warmup, iters, loops int
}{
	"cuda": {max: "256MiB", warmup: 20, iters: 100, loops: 5},
	"sim":  {max: "1MiB", warmup: 1, iters: 2, loops: 3},
}

type benchFlags struct {
	world                int
	dev                  string
	min, max, step       string
	dtypes, ops, algos   []string
	warmup, iters, loops int
	seed                 uint64
	check                bool
	sync                 bool
	graph                bool
	cpuProfile           string
	maxBlocks            int
	timeout              time.Duration
	jsonPath, csvPath    string
	plotPath, title      string
	refs                 []string
	progress             bool

	worldSet bool
	changed  func(name string) bool // whether a flag was given
	bad      []error                // flags whose values did not parse
}

func newBenchCmd(a *app) *cobra.Command {
	f := &benchFlags{}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Time all-reduce over a sweep of sizes, like nccl-tests' all_reduce_perf",
		Long: `Sweep sizes (from --min to --max by --step), element types, reductions and
algorithms; time each case and print an nccl-tests style table: size, count,
type, redop, algorithm, time per call (us), algbw and busbw (GB/s;
busbw = algbw x 2(W-1)/W), #wrong (elements differing bitwise from the
reference when checked) and the host's wall-clock time per call.

Each case: --warmup untimed calls, a barrier, then --loops timed loops of
--iters calls; the median loop is reported, averaged over ranks. Times come
from device events on the rank's stream around a host loop of calls queued
back to back, as PyTorch's and nccl-tests' loops are timed; --sync waits
for every call instead (a blocking caller's time). --graph captures each
loop's calls once into a graph (a CUDA graph on GPUs) and times its
replays, one launch per loop; its rows name the algorithm with "+graph".
On the simulator the device clock is virtual, so times are the host's CPU
time spent simulating: simulator figures, not GPU performance.

On cuda it runs one rank per GPU in this process, or one rank per process
under 'symmem launch --nproc W -- symmem bench --device cuda ...' (rank 0
prints and writes the files).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.worldSet = cmd.Flags().Changed("world")
			f.changed = cmd.Flags().Changed
			f.bad = flagErrors(cmd)
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			return runBench(ctx, a, f, cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.world, "world", 4, "number of ranks (under launch: the launcher's)")
	fl.StringVar(&f.dev, "device", "sim", "device: sim or cuda")
	fl.StringVar(&f.min, "min", "1KiB", "smallest size: 1024 (a number without a unit is bytes), 1KiB, ...")
	fl.StringVar(&f.max, "max", "", "largest size, as --min (default 256MiB on cuda, 1MiB on sim)")
	fl.StringVar(&f.step, "step", "x2", "size step: x2 or x4 (any factor xN)")
	fl.StringSliceVar(&f.dtypes, "dtype", []string{"bf16"}, "element types, comma-separated: bf16, f16, f32")
	fl.StringSliceVar(&f.ops, "op", []string{"sum"}, "reductions, comma-separated: sum, avg, max, min")
	fl.StringSliceVar(&f.algos, "algo", []string{"ll", "one-shot", "two-shot"}, "algorithms, comma-separated: ll (up to 256 KiB), one-shot, two-shot, auto")
	fl.IntVar(&f.warmup, "warmup", 0, "untimed calls before timing each case (default 20 on cuda, 1 on sim)")
	fl.IntVar(&f.iters, "iters", 0, "calls per timed loop (default 100 on cuda, 2 on sim)")
	fl.IntVar(&f.loops, "loops", 0, "timed loops per case; the median is reported (default 5 on cuda, 3 on sim)")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the inputs and of the simulator's schedule")
	fl.IntVar(&f.maxBlocks, "max-blocks", 0, "replace the kernels' limit on blocks per launch (0: their own limits)")
	fl.StringVar(&f.cpuProfile, "cpuprofile", "", "write a Go CPU profile of the run to this file (go tool pprof reads it)")
	fl.BoolVar(&f.graph, "graph", false, "capture each timed loop's calls into a graph (a CUDA graph on GPUs) and time its replays: one launch per loop")
	fl.BoolVar(&f.sync, "sync", false, "wait for every timed call (a blocking caller's time) instead of queueing the loop's calls back to back")
	fl.BoolVar(&f.check, "check", true, "after timing, run each case once on fresh inputs and count wrong elements")
	fl.DurationVar(&f.timeout, "timeout", rank.DefaultTimeout, "timeout of every wait, > 0 (virtual time on sim)")
	fl.StringVar(&f.jsonPath, "json", "", "write the report as JSON to this file")
	fl.StringVar(&f.csvPath, "csv", "", "write the rows as CSV to this file")
	fl.StringVar(&f.plotPath, "plot", "", "draw time and busbw against size into this image (.png, .svg, .jpg or .tiff)")
	fl.StringArrayVar(&f.refs, "ref", nil, "JSON report to overlay on the plot (repeatable)")
	fl.StringVar(&f.title, "title", "", "plot title")
	fl.BoolVar(&f.progress, "progress", true, "show a progress bar (only when stdout is a terminal)")
	cmd.AddCommand(newBenchPlotCmd())
	collectFlagErrors(cmd)
	return cmd
}

// plan turns the flags into a validated plan, reporting every bad flag at
// once, before any work starts.
func (f *benchFlags) plan() (bench.Plan, []bench.Report, error) {
	errs := append(f.bad, checkKernelImage())
	def, ok := benchDefaults[f.dev]
	if !ok {
		errs = append(errs, checkDevice(f.dev))
		def = benchDefaults["sim"]
	}
	p := bench.Plan{Seed: f.seed, Check: f.check, Sync: f.sync, Graph: f.graph, MaxBlocks: f.maxBlocks, Warmup: f.warmup, Iters: f.iters, Loops: f.loops}
	for _, d := range []struct {
		flag             string
		v                *int
		def, least, most int
	}{{"warmup", &p.Warmup, def.warmup, 0, maxCalls}, {"iters", &p.Iters, def.iters, 1, maxCalls}, {"loops", &p.Loops, def.loops, 1, maxLoops}} {
		if f.changed == nil || !f.changed(d.flag) {
			*d.v = d.def
		} else {
			errs = append(errs, checkCount(d.flag, *d.v, d.least, d.most))
		}
	}
	if f.maxBlocks < 0 || f.maxBlocks > maxBlocks {
		errs = append(errs, fmt.Errorf("--max-blocks %d: want 0 (the kernels' own limits) or a count up to %d", f.maxBlocks, maxBlocks))
	}
	if f.graph && f.sync {
		errs = append(errs, errors.New("--graph and --sync together: a graph's calls cannot be waited for one by one"))
	}
	maxS := f.max
	if maxS == "" {
		maxS = def.max
	}
	lo, err := parseBytes(f.min)
	errs = append(errs, flagErr("min", err))
	minOK := err == nil
	if minOK && (lo == 0 || lo > bench.MaxBytes) {
		errs = append(errs, fmt.Errorf("--min %s: want 1 byte to %s", f.min, formatBytes(bench.MaxBytes)))
		minOK = false
	}
	hi, err := parseBytes(maxS)
	errs = append(errs, flagErr("max", err))
	if err == nil && (hi == 0 || hi > bench.MaxBytes) {
		errs = append(errs, fmt.Errorf("--max %s: want 1 byte to %s", maxS, formatBytes(bench.MaxBytes)))
	}
	step, err := bench.ParseStep(f.step)
	errs = append(errs, flagErr("step", err))
	if err := errors.Join(errs...); err == nil {
		p.Sizes, err = bench.Sizes(lo, hi, step)
		if err != nil {
			errs = append(errs, fmt.Errorf("--min %s --max %s: %w", f.min, maxS, err))
		}
	}
	errs = append(errs, checkList("dtype", f.dtypes, "bf16, f16, f32"), checkList("op", f.ops, "sum, avg, max, min"),
		checkList("algo", f.algos, "ll, one-shot, two-shot, auto"))
	for _, s := range f.dtypes {
		dt, err := device.ParseDType(strings.TrimSpace(s))
		errs = append(errs, flagErr("dtype", err))
		p.DTypes = append(p.DTypes, dt)
		if err == nil && minOK {
			// Every size is a multiple of --min: its alignment is theirs.
			if _, err := kernels.CheckAlignment(0, lo, dt); err != nil {
				errs = append(errs, fmt.Errorf("--min %s: %w", f.min, err))
			}
		}
	}
	for _, s := range f.ops {
		op, err := device.ParseReduceOp(strings.TrimSpace(s))
		errs = append(errs, flagErr("op", err))
		p.Ops = append(p.Ops, op)
	}
	for _, s := range f.algos {
		al, err := workload.ParseAlgo(strings.TrimSpace(s))
		errs = append(errs, flagErr("algo", err))
		p.Algos = append(p.Algos, al)
		if err == nil && al == workload.LowLatency && len(p.Sizes) > 0 && slices.Min(p.Sizes) > rank.LowLatencyMaxBytes {
			errs = append(errs, fmt.Errorf("--algo ll: the low-latency all-reduce takes tensors up to %s, and --min is %s: it would measure nothing",
				formatBytes(rank.LowLatencyMaxBytes), formatBytes(slices.Min(p.Sizes))))
		}
	}
	errs = append(errs, checkWorld("world", f.world), checkTimeout(f.timeout))
	if f.plotPath != "" {
		if _, err := bench.PlotFormat(f.plotPath); err != nil {
			errs = append(errs, fmt.Errorf("--plot: %w", err))
		}
	} else if len(f.refs) > 0 {
		errs = append(errs, errors.New("--ref needs --plot"))
	}
	for _, out := range []struct{ flag, path string }{{"json", f.jsonPath}, {"csv", f.csvPath}, {"plot", f.plotPath}, {"cpuprofile", f.cpuProfile}} {
		errs = append(errs, checkWritable(out.flag, out.path))
	}
	refs, err := readReports(f.refs)
	errs = append(errs, flagErr("ref", err))
	if err := errors.Join(errs...); err != nil {
		return p, nil, err
	}
	if err := p.Validate(); err != nil {
		return p, nil, err
	}
	if f.dev == "sim" {
		if err := checkSimMemory(fmt.Sprintf("--world %d --max %s", f.world, formatBytes(p.MaxSize())), f.world, p.MaxSize()); err != nil {
			return p, nil, err
		}
	}
	return p, refs, nil
}

func runBench(ctx context.Context, a *app, f *benchFlags, out io.Writer) error {
	start := time.Now()
	p, refs, err := f.plan()
	if err != nil {
		return err
	}
	rep := bench.Report{
		Schema: bench.Schema, Tool: "symmem bench", Device: f.dev, World: f.world,
		Timer: bench.TimerOf(f.dev == "sim"), Simulated: f.dev == "sim",
		Warmup: p.Warmup, Iters: p.Iters, Loops: p.Loops,
	}
	var stop simStopper
	b, err := backend.Choose(backend.Options{Device: f.dev, World: f.world, WorldSet: f.worldSet, Seed: f.seed,
		Timeout: f.timeout, Logger: a.log, Command: "bench", Sim: stop.adjust})
	if err != nil {
		return err
	}
	rep.World = b.World()
	stopProfile, err := startProfile(f.cpuProfile)
	if err != nil {
		return err
	}
	if b.Rank() > 0 {
		// Rank 0 of a launched job reports for every rank.
		err := runInterruptible(ctx, nil, func() error {
			_, err := b.Run(bench.Program(p, nil))
			return err
		})
		return errors.Join(err, stopProfile(out))
	}
	cases := len(p.Cases())
	prog := a.newProgress(out, f.progress && cases > 1, "bench", cases, nil)
	s := &sink{out: prog.writer(out), rep: rep, prog: prog}
	err = runInterruptible(ctx, stop.halt, func() error {
		_, err := b.Run(s.program(p))
		return err
	})
	summary, err := s.finish(out, f, refs, cases, time.Since(start), err)
	err = errors.Join(err, stopProfile(out))
	fmt.Fprintln(out, summary)
	return err
}

// startProfile starts a Go CPU profile into path (nothing when path is
// empty); stop ends it and prints "wrote PATH" to out.
func startProfile(path string) (stop func(out io.Writer) error, err error) {
	if path == "" {
		return func(io.Writer) error { return nil }, nil
	}
	prof, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(prof); err != nil {
		prof.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func(out io.Writer) error {
		pprof.StopCPUProfile()
		if err := prof.Close(); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		fmt.Fprintf(out, "wrote %s\n", path)
		return nil
	}, nil
}

func readReports(paths []string) ([]bench.Report, error) {
	var reps []bench.Report
	for _, p := range paths {
		rep, err := bench.ReadJSONFile(p)
		if err != nil {
			return nil, err
		}
		reps = append(reps, rep)
	}
	return reps, nil
}

// sink receives rank 0's rows: it prints them as they come (above the
// progress bar, when there is one) and writes the files at the end.
type sink struct {
	mu     sync.Mutex
	out    io.Writer
	rep    bench.Report
	prog   *progress
	wrote  bool // the header
	closed bool // finish ran: rows arriving later are dropped
}

// program is the bench program for rank 0 (every other rank runs
// bench.Program with no sink): it prints the header with the device's name
// first.
func (s *sink) program(p bench.Plan) rank.Program {
	return func(r *rank.Rank) error {
		if r.ID() != 0 {
			return bench.Run(r, p, nil)
		}
		s.mu.Lock()
		if !s.rep.Simulated {
			s.rep.DeviceName = r.Device().Attributes().Name
		}
		s.rep.World = r.World()
		err := bench.WriteHeader(s.out, s.rep)
		s.wrote = true
		s.mu.Unlock()
		if err != nil {
			return fmt.Errorf("write table: %w", err)
		}
		return bench.Run(r, p, s.emit)
	}
}

func (s *sink) emit(row bench.Row) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.rep.Rows = append(s.rep.Rows, row)
	fmt.Fprintln(s.out, bench.FormatRow(row))
	s.prog.increment()
}

// finish stops the progress bar, prints the footer, writes the files with
// whatever rows were measured (also when runErr says the sweep stopped
// early, or was interrupted) and prints "wrote F" for each. It returns the
// command's summary line, and fails on wrong elements.
func (s *sink) finish(out io.Writer, f *benchFlags, refs []bench.Report, cases int, elapsed time.Duration, runErr error) (summary string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.prog.done()
	s.out = out
	errs := []error{runErr}
	if s.wrote {
		errs = append(errs, bench.WriteFooter(out, s.rep.Rows))
	}
	write := func(flag, path string, fn func(io.Writer) error) {
		if path == "" {
			return
		}
		if err := writeFile(path, fn); err != nil {
			errs = append(errs, fmt.Errorf("--%s: %w", flag, err))
			return
		}
		fmt.Fprintf(out, "wrote %s\n", path)
	}
	write("json", f.jsonPath, func(w io.Writer) error { return bench.WriteJSON(w, s.rep) })
	write("csv", f.csvPath, func(w io.Writer) error { return bench.WriteCSV(w, s.rep.Rows) })
	if f.plotPath != "" {
		if len(s.rep.Rows) == 0 {
			fmt.Fprintf(out, "did not write %s: no case was measured\n", f.plotPath)
		} else if err := bench.SavePlot(f.plotPath, f.title, append([]bench.Report{s.rep}, refs...)...); err != nil {
			errs = append(errs, fmt.Errorf("--plot: %w", err))
		} else {
			fmt.Fprintf(out, "wrote %s\n", f.plotPath)
		}
	}
	var wrong int64
	for _, r := range s.rep.Rows {
		wrong += max(r.Wrong, 0)
	}
	if wrong > 0 {
		errs = append(errs, fmt.Errorf("bench: %d elements differ from the reference", wrong))
	}
	took := elapsed.Round(time.Millisecond)
	var ie *interruptedError
	switch {
	case errors.As(runErr, &ie):
		summary = fmt.Sprintf("bench: %s after %d of %d cases (%v)", ie, len(s.rep.Rows), cases, took)
	case runErr != nil:
		summary = fmt.Sprintf("bench: failed after %d of %d cases (%v)", len(s.rep.Rows), cases, took)
	default:
		summary = fmt.Sprintf("bench: %d cases in %v, %d wrong elements", len(s.rep.Rows), took, wrong)
	}
	return summary, errors.Join(errs...)
}

// writeFile creates path and writes it with fn.
func writeFile(path string, fn func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := fn(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func newBenchPlotCmd() *cobra.Command {
	var outPath, title string
	cmd := &cobra.Command{
		Use:   "plot --out FILE.png REPORT.json...",
		Short: "Draw time and busbw against size from JSON reports (ours and the reference scripts')",
		RunE: func(cmd *cobra.Command, args []string) error {
			errs := flagErrors(cmd)
			if len(args) == 0 {
				errs = append(errs, errors.New("no report to draw: want symmem bench plot --out FILE.png REPORT.json [REPORT.json ...]"))
			}
			if outPath == "" {
				errs = append(errs, errors.New("--out is required: the image to write (.png, .svg, .jpg or .tiff)"))
			} else if _, err := bench.PlotFormat(outPath); err != nil {
				errs = append(errs, fmt.Errorf("--out: %w", err))
			} else {
				errs = append(errs, checkWritable("out", outPath))
			}
			reps, err := readReports(args)
			if err := errors.Join(append(errs, err)...); err != nil {
				return err
			}
			if err := bench.SavePlot(outPath, title, reps...); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (%d reports)\n", outPath, len(reps))
			return nil
		},
	}
	cmd.Flags().StringVar(&outPath, "out", "", "image to write (.png, .svg, .jpg or .tiff)")
	cmd.Flags().StringVar(&title, "title", "", "plot title")
	collectFlagErrors(cmd)
	return cmd
}
