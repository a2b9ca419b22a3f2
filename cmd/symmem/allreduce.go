package main

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"strconv"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/symmem/symmem/backend"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/launch"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/simjob"
	"github.com/symmem/symmem/workload"
)

// specFlags are the flags that describe one all-reduce (allreduce, replay).
type specFlags struct {
	world  int
	bytes  string
	dtype  string
	op     string
	algo   string
	offset uint64
}

// spec parses and validates the flags into a spec with input seed seed,
// reporting every bad flag at once, each named with its value.
func (f *specFlags) spec(seed uint64) (workload.Spec, error) {
	s := workload.Spec{World: f.world, Offset: f.offset, Seed: seed}
	parsed := map[string]bool{}
	var errs []error
	note := func(flag string, err error) {
		parsed[flag] = err == nil
		errs = append(errs, flagErr(flag, err))
	}
	var err error
	s.Bytes, err = parseBytes(f.bytes)
	note("bytes", err)
	if err == nil && s.Bytes == 0 {
		errs = append(errs, errors.New("--bytes 0: want a positive size"))
	}
	s.DType, err = device.ParseDType(f.dtype)
	note("dtype", err)
	s.Op, err = device.ParseReduceOp(f.op)
	note("op", err)
	s.Algo, err = workload.ParseAlgo(f.algo)
	note("algo", err)
	errs = append(errs, checkWorld("world", f.world))
	parsed["offset"] = true
	values := map[string]string{"bytes": f.bytes, "offset": strconv.FormatUint(f.offset, 10)}
	var fe *workload.FieldError
	for _, err := range unjoin(s.Validate()) {
		if !errors.As(err, &fe) || fe.Field == "world" || !parsed[fe.Field] || !parsed["dtype"] {
			continue // named above, or a consequence of a flag named above
		}
		errs = append(errs, fmt.Errorf("--%s %s: %w", fe.Field, values[fe.Field], fe.Err))
	}
	return s, errors.Join(errs...)
}

// unjoin returns the errors that errors.Join joined into err (err itself
// when it was not joined, nothing when it is nil).
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

type allReduceFlags struct {
	specFlags
	seed    uint64
	dev     string
	timeout time.Duration
	kernels string

	worldSet bool
	bad      []error // flags whose values did not parse
}

func newAllReduceCmd(a *app) *cobra.Command {
	f := &allReduceFlags{}
	cmd := &cobra.Command{
		Use:   "allreduce",
		Short: "Run one checked all-reduce (simulator by default)",
		Long: `Fill each rank's input with seeded random values, all-reduce them, check every
rank's result against a float64 reference and that all ranks agree bitwise,
and print a summary and the trace hash. Exits non-zero on any mismatch.

Testing aid: under symmem launch with --device cuda, SYMMEM_FAULT_KILL=R:POINT
makes rank R SIGKILL itself at POINT: "rendezvous" (before its rendezvous, so
the others wait for it in the Store) or "allreduce" (after the rendezvous,
right before its all-reduce kernel's launch, so the others' kernels wait for
it). The other ranks should then fail with an error naming rank R, and
launch should exit non-zero with rank R's status.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.worldSet = cmd.Flags().Changed("world")
			f.bad = flagErrors(cmd)
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			return runAllReduce(ctx, a, f, cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.world, "world", 4, "number of ranks")
	fl.StringVar(&f.bytes, "bytes", "64KiB", "tensor size: 8196 (a number without a unit is bytes), 64KiB, 1MiB, ...")
	fl.StringVar(&f.dtype, "dtype", "bf16", "element type: float32|f32, bfloat16|bf16, float16|f16")
	fl.StringVar(&f.op, "op", "sum", "reduction: sum, avg, max, min")
	fl.StringVar(&f.algo, "algo", "auto", "algorithm: auto (ll up to 256KiB on up to 4 ranks, 64KiB above, else two-shot), one-shot, two-shot, ll (the low-latency one-shot, up to 256KiB)")
	fl.Uint64Var(&f.offset, "offset", 0, "byte offset of the tensor inside the symmetric buffer")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the inputs and of the simulator's schedule")
	fl.StringVar(&f.dev, "device", "sim", "device: sim or cuda")
	fl.DurationVar(&f.timeout, "timeout", rank.DefaultTimeout, "timeout of every wait, > 0 (virtual time on sim)")
	kernelsFlag(fl, &f.kernels)
	collectFlagErrors(cmd)
	return cmd
}

func flagErr(name string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("--%s: %w", name, err)
}

// validate checks every flag (and SYMMEM_FAULT_KILL) before any work
// starts, reporting every problem at once.
func (f *allReduceFlags) validate() (workload.Spec, faultKill, error) {
	s, err := f.spec(f.seed)
	errs := append(f.bad, err, checkTimeout(f.timeout), checkDevice(f.dev), checkKernels(f.kernels), checkKernelImage())
	if err == nil && s.Algo == workload.LowLatency && s.Bytes > rank.LowLatencyMaxBytes {
		errs = append(errs, fmt.Errorf("--algo ll --bytes %s: the low-latency all-reduce takes tensors up to %s; use one-shot, two-shot or auto",
			formatBytes(s.Bytes), formatBytes(rank.LowLatencyMaxBytes)))
	}
	if err == nil && f.dev == "sim" {
		flags := fmt.Sprintf("--world %d --bytes %s", s.World, formatBytes(s.Bytes))
		if s.Offset > 0 {
			flags += fmt.Sprintf(" --offset %d", s.Offset)
		}
		need, _ := s.BufferBytes() // Validate bounded both below 2^33
		errs = append(errs, checkSimMemory(flags, s.World, need))
	}
	fault, faulty, err := parseFaultKill(os.Getenv)
	errs = append(errs, err)
	if _, launched, _ := launch.ProcessEnvFromOS(); err == nil && faulty && (f.dev != "cuda" || !launched) {
		errs = append(errs, fmt.Errorf("%s works only under symmem launch with --device cuda", faultKillEnv))
	}
	return s, fault, errors.Join(errs...)
}

// progressBytes is the size from which allreduce shows progress on a
// terminal: world x bytes above it take seconds on the simulator.
const progressBytes = 16 << 20

func runAllReduce(ctx context.Context, a *app, f *allReduceFlags, out io.Writer) error {
	start := time.Now()
	s, fault, err := f.validate()
	if err != nil {
		return err
	}
	kern, err := simKernels(f.kernels)
	if err != nil {
		return err
	}
	var stop simStopper
	o := backend.Options{Device: f.dev, World: s.World, WorldSet: f.worldSet, Seed: s.Seed, Timeout: f.timeout,
		Logger: a.log, Command: "allreduce", Sim: func(c *simjob.Config) { kern(c); stop.adjust(c) }}
	if fault.point != "" {
		o.WrapProcess = fault.apply
	}
	b, err := backend.Choose(o)
	if err != nil {
		return err
	}
	if fault.point != "" && fault.rank >= b.World() {
		return fmt.Errorf("%s: rank %d out of range [0, %d)", faultKillEnv, fault.rank, b.World())
	}
	s.World = b.World()
	phase := atomic.Value{}
	phase.Store("inputs")
	status := func() string {
		if b.Simulated() && phase.Load() == "running" {
			return fmt.Sprintf("simulating, %d scheduling steps", stop.steps.Load())
		}
		return phase.Load().(string)
	}
	what := fmt.Sprintf("allreduce %d x %s", s.World, formatBytes(s.Bytes))
	prog := a.newProgress(out, uint64(s.World)*s.Bytes >= progressBytes, what, 0, status)
	var (
		results []workload.RankResult
		res     backend.Outcome
		v       workload.Verdict
	)
	err = runInterruptible(ctx, stop.halt, func() error {
		inputs := s.Inputs()
		results = make([]workload.RankResult, s.World)
		phase.Store("running")
		var err error
		if res, err = b.Run(s.Program(inputs, results)); err != nil {
			return err
		}
		phase.Store("checking")
		if r := b.Rank(); r >= 0 {
			// A launched rank process checks its own result.
			v, results = s.CheckRank(inputs, r, results[r]), results[r:r+1]
		} else {
			v = s.Check(inputs, results)
		}
		return nil
	})
	prog.done()
	if ie := interruption(ctx); ie != nil {
		fmt.Fprintf(out, "allreduce: %s after %v; no result\n", ie, time.Since(start).Round(time.Millisecond))
		return ie
	}
	if err != nil {
		return err
	}
	if r := b.Rank(); r >= 0 {
		fmt.Fprintf(out, "rank %d: ", r)
		printSummary(out, s, results, v)
		if !v.OK() {
			return fmt.Errorf("rank %d: all-reduce check failed: %d problems", r, len(v.Problems))
		}
		return nil
	}
	printSummary(out, s, results, v)
	if res.Trace != "" {
		fmt.Fprintf(out, "trace %s\n", res.Trace)
	}
	if !v.OK() {
		return fmt.Errorf("all-reduce check failed: %d problems", len(v.Problems))
	}
	return nil
}

func printSummary(out io.Writer, s workload.Spec, results []workload.RankResult, v workload.Verdict) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "world\tbytes\tcount\ttype\tredop\talgo\toffset\tmax|err|\tranks agree\tresult")
	status := "ok"
	if !v.OK() {
		status = "FAIL"
	}
	algo := workload.Auto
	if len(results) > 0 {
		algo = results[0].Algo
	}
	fmt.Fprintf(tw, "%d\t%s\t%d\t%v\t%v\t%v\t%d\t%.3g\t%v\t%s\n",
		s.World, formatBytes(s.Bytes), s.Numel(), s.DType, s.Op, algo, s.Offset, v.MaxAbsErr, v.Agree, status)
	tw.Flush()
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "rank\tfnv64 of result\tfirst elements")
	for r, res := range results {
		vals, _ := kernels.Decode(s.DType, res.Output)
		h := fnv.New64a()
		h.Write(res.Output)
		fmt.Fprintf(tw, "%d\t%016x\t%v\n", r, h.Sum64(), vals[:min(4, len(vals))])
	}
	tw.Flush()
	for _, p := range v.Problems {
		fmt.Fprintln(out, "  ", p)
	}
}
