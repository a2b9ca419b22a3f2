package main

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/rank"
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

// spec parses and validates the flags into a spec with input seed seed.
func (f *specFlags) spec(seed uint64) (workload.Spec, error) {
	var errs []error
	n, err := parseBytes(f.bytes)
	errs = append(errs, flagErr("bytes", err))
	dt, err := device.ParseDType(f.dtype)
	errs = append(errs, flagErr("dtype", err))
	op, err := device.ParseReduceOp(f.op)
	errs = append(errs, flagErr("op", err))
	algo, err := workload.ParseAlgo(f.algo)
	errs = append(errs, flagErr("algo", err))
	if err := errors.Join(errs...); err != nil {
		return workload.Spec{}, err
	}
	s := workload.Spec{World: f.world, Bytes: n, DType: dt, Op: op, Algo: algo, Offset: f.offset, Seed: seed}
	if f.world < 1 || f.world > 72 {
		return s, fmt.Errorf("--world %d: want 1..72", f.world)
	}
	if err := s.Validate(); err != nil {
		return s, fmt.Errorf("invalid all-reduce: %w", err)
	}
	return s, nil
}

type allReduceFlags struct {
	specFlags
	seed    uint64
	dev     string
	timeout time.Duration

	worldSet bool
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
			return runAllReduce(a, f, cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.world, "world", 4, "number of ranks")
	fl.StringVar(&f.bytes, "bytes", "64KiB", "tensor size in bytes (8196, 64KiB, 1MiB, ...)")
	fl.StringVar(&f.dtype, "dtype", "bf16", "element type: float32|f32, bfloat16|bf16, float16|f16")
	fl.StringVar(&f.op, "op", "sum", "reduction: sum, avg, max, min")
	fl.StringVar(&f.algo, "algo", "auto", "algorithm: auto (one-shot up to 256KiB, else two-shot), one-shot, two-shot, ll (the low-latency one-shot, up to 256KiB)")
	fl.Uint64Var(&f.offset, "offset", 0, "byte offset of the tensor inside the symmetric buffer")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the inputs and of the simulator's schedule")
	fl.StringVar(&f.dev, "device", "sim", "device: sim or cuda")
	fl.DurationVar(&f.timeout, "timeout", rank.DefaultTimeout, "timeout of every wait, > 0 (virtual time on sim)")
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
	errs := []error{err, checkTimeout(f.timeout), checkDevice(f.dev), checkSimUnderLaunch("allreduce", f.dev)}
	if err == nil && s.Algo == workload.LowLatency && s.Bytes > rank.LowLatencyMaxBytes {
		errs = append(errs, fmt.Errorf("--algo ll --bytes %s: the low-latency all-reduce takes tensors up to %s; use one-shot, two-shot or auto",
			formatBytes(s.Bytes), formatBytes(rank.LowLatencyMaxBytes)))
	}
	if err == nil && f.dev == "sim" {
		errs = append(errs, checkSimMemory(fmt.Sprintf("--world %d --bytes %s", s.World, formatBytes(s.Bytes)), s.World, s.Offset+s.Bytes))
	}
	fault, faulty, err := parseFaultKill(os.Getenv)
	errs = append(errs, err)
	if _, launched, _ := rank.ProcessEnvFromOS(); err == nil && faulty && (f.dev != "cuda" || !launched) {
		errs = append(errs, fmt.Errorf("%s works only under symmem launch with --device cuda", faultKillEnv))
	}
	return s, fault, errors.Join(errs...)
}

func runAllReduce(a *app, f *allReduceFlags, out io.Writer) error {
	s, fault, err := f.validate()
	if err != nil {
		return err
	}
	inputs := s.Inputs()
	results := make([]workload.RankResult, s.World)
	var trace string
	switch f.dev {
	case "sim":
		res, err := rank.Simulate(rank.SimConfig{World: s.World, Seed: s.Seed, Timeout: f.timeout, Logger: a.log}, s.Program(inputs, results))
		if err != nil {
			return fmt.Errorf("simulation failed (replay with --seed %d): %w", s.Seed, err)
		}
		if err := res.Err(); err != nil {
			return err
		}
		trace = res.Trace
	case "cuda":
		env, launched, err := rank.ProcessEnvFromOS()
		if err != nil {
			return err
		}
		if launched {
			return runAllReduceProcess(a, f, s, env, inputs, fault, out)
		}
		if err := checkCUDA(s.World); err != nil {
			return err
		}
		if err := errors.Join(rank.RunInProcess(rank.LiveConfig{
			World: s.World, Open: openCUDA, Logger: a.log, Timeout: f.timeout,
			AllowOverlappingDevices: rank.AllowOverlappingFromEnv(),
		}, s.Program(inputs, results))...); err != nil {
			return err
		}
	default:
		return fmt.Errorf("--device %q: want sim or cuda", f.dev)
	}
	v := s.Check(inputs, results)
	printSummary(out, s, results, v)
	if trace != "" {
		fmt.Fprintf(out, "trace %s\n", trace)
	}
	if !v.OK() {
		return fmt.Errorf("all-reduce check failed: %d problems", len(v.Problems))
	}
	return nil
}

// runAllReduceProcess runs this process's rank of a job started by
// `symmem launch` and checks its own result.
func runAllReduceProcess(a *app, f *allReduceFlags, s workload.Spec, env rank.ProcessEnv, inputs [][]byte, fault faultKill, out io.Writer) error {
	if env.World != s.World {
		if f.worldSet {
			return fmt.Errorf("--world %d but the launcher started %d ranks", s.World, env.World)
		}
		s.World = env.World
		inputs = s.Inputs()
	}
	dev, err := openCUDA(env.LocalRank)
	if err != nil {
		return fmt.Errorf("rank %d: %w", env.Rank, err)
	}
	defer dev.Close()
	results := make([]workload.RankResult, s.World)
	program, rdev := s.Program(inputs, results), dev
	if fault.point != "" {
		if fault.rank >= env.World {
			return fmt.Errorf("%s: rank %d out of range [0, %d)", faultKillEnv, fault.rank, env.World)
		}
		program, rdev = fault.apply(env.Rank, program, dev)
	}
	if err := rank.RunProcess(env, rdev, a.log, f.timeout, program); err != nil {
		return err
	}
	v := s.CheckRank(inputs, env.Rank, results[env.Rank])
	fmt.Fprintf(out, "rank %d: ", env.Rank)
	printSummary(out, s, results[env.Rank:env.Rank+1], v)
	if !v.OK() {
		return fmt.Errorf("rank %d: all-reduce check failed: %d problems", env.Rank, len(v.Problems))
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
