package fuzz

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/simjob"
	"github.com/symmem/symmem/workload"
)

// DefaultSizes are the tensor sizes, in bytes, the fuzzer draws from: small
// ones mostly (each run is cheap and the protocol is the same), a few that
// span several blocks and vectors, odd ones that exercise the tails.
var DefaultSizes = []uint64{4, 16, 64, 260, 1024, 4096, 8196, 16384, 65536}

// DefaultLargeSizes are the sizes a collective draws, now and then, when no
// sizes are given (see [DrawProgram]): both sides of 256 KiB, where the
// intra-node service and auto switch from one-shot to two-shot and the
// low-latency all-reduce stops, an odd element count past a MiB, and 3 MiB,
// where every kernel runs its largest grid several times over.
var DefaultLargeSizes = []uint64{256<<10 - 4, 256 << 10, 256<<10 + 16, 1<<20 + 12, 3 << 20}

// MaxWorkers bounds Config.Workers: each worker holds a whole simulated
// job in memory.
const MaxWorkers = 256

// Config configures [Fuzz].
type Config struct {
	Seeds    int           // number of seeds to run (0: until Time passes)
	First    uint64        // the first seed
	Time     time.Duration // start no case after this long (0: no limit)
	Strategy string        // random, pct or portfolio
	Depth    int           // PCT depth (0: DefaultDepth)
	Faults   FaultSet
	Workers  int             // goroutines running cases (0: 1)
	Worlds   []int           // world sizes drawn from (nil: 2 to 8)
	Sizes    []uint64        // tensor sizes drawn from (nil: see DrawProgram; with PTX kernels, DefaultSizes)
	Algos    []workload.Algo // algorithms drawn from (nil: DefaultAlgos)
	Timeout  time.Duration   // rank timeout (0: DefaultTimeout)
	MaxSteps int64           // step bound of every case (0: StepBudget of its program)
	Race     bool            // run the race detector; a data race fails a case
	Kernels  sim.Kernels     // what the simulated devices run (zero: the Go twins)
	Shrink   bool            // shrink the first case of each distinct failure
	Budget   int             // runs per shrink (0: DefaultShrinkRuns)
	// ShrinkTime bounds each shrink's time (0: none; see [ShrinkWithin]).
	ShrinkTime time.Duration
	// StopOnFailure starts no case after the first one that failed (with
	// one worker, Report.Cases is then the number of schedules it took).
	StopOnFailure bool
	// Instrument, when set, edits every case's simulator configuration
	// after the case's own hooks are in place (see [Case.Instrument]).
	Instrument func(*simjob.Config)
	// Progress, when set, is called after every case with the cases run
	// and failed so far, from the worker goroutines.
	Progress func(done, failed int)
	// Log, when set, gets a debug line for every case (its seed, world,
	// strategy, faults fired, steps, trace and verdict) and for the start
	// and end of every shrink.
	Log *zap.Logger
}

// Validate checks the configuration.
func (cfg Config) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"seeds", int64(cfg.Seeds)}, {"time", int64(cfg.Time)}, {"workers", int64(cfg.Workers)},
		{"timeout", int64(cfg.Timeout)}, {"step bound", cfg.MaxSteps}, {"depth", int64(cfg.Depth)},
		{"shrink budget", int64(cfg.Budget)},
	} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("fuzz: negative %s (%d)", f.name, f.v))
		}
	}
	if cfg.Workers > MaxWorkers {
		errs = append(errs, fmt.Errorf("fuzz: %d workers: want at most %d", cfg.Workers, MaxWorkers))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if cfg.Seeds == 0 && cfg.Time == 0 {
		return errors.New("fuzz: give a number of seeds or a time limit")
	}
	switch cfg.Strategy {
	case StrategyRandom, StrategyPCT, StrategyPortfolio:
	default:
		return fmt.Errorf("fuzz: unknown strategy %q (want random, pct or portfolio)", cfg.Strategy)
	}
	if cfg.Faults < FaultsNone || cfg.Faults > FaultsAll {
		return fmt.Errorf("fuzz: unknown fault set %v", cfg.Faults)
	}
	for _, w := range cfg.Worlds {
		if w < 1 || w > 72 {
			return fmt.Errorf("fuzz: world size %d out of range [1, 72]", w)
		}
	}
	for _, n := range cfg.Sizes {
		if n == 0 || n%4 != 0 || n > 1<<26 {
			return fmt.Errorf("fuzz: tensor size %d: want a positive multiple of 4 up to 64 MiB", n)
		}
	}
	for _, a := range cfg.Algos {
		if a != workload.Auto && a != workload.OneShot && a != workload.TwoShot && a != workload.LowLatency {
			return fmt.Errorf("fuzz: unknown algorithm %v (want auto, one-shot, two-shot or ll)", a)
		}
	}
	return nil
}

// FailureReport is one distinct failure: its signature, how many cases hit
// it, the first of them (lowest seed) and, when shrinking, its minimal form.
type FailureReport struct {
	Signature string
	Count     int
	First     Outcome
	Shrunk    *Shrunk // nil unless Config.Shrink (and the shrink ran)
	// ShrinkErr is why the shrink could not run, if it could not; the
	// failure is reported all the same.
	ShrinkErr error
}

// Report summarises a fuzzing session.
type Report struct {
	Cases   int           // cases run
	Failed  int           // cases that failed
	Steps   int64         // scheduling steps, over all cases
	Elapsed time.Duration // wall-clock time running cases
	// Shrinking is the wall-clock time spent shrinking failures, after
	// the cases ran.
	Shrinking time.Duration
	// Interrupted reports that the context ended the session: cases cut
	// short are not counted, and failures not shrunk say so.
	Interrupted bool
	Traces      int // distinct trace hashes
	// TraceHashes are the distinct trace hashes, in order: the shards of
	// a campaign count their union.
	TraceHashes []string
	Crashed     int          // cases in which some rank failed cleanly
	Fired       map[Kind]int // faults that fired, by kind
	Failures    []FailureReport
}

// SchedulesPerSecond is the rate at which cases ran.
func (r Report) SchedulesPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Cases) / r.Elapsed.Seconds()
}

// Fuzz runs cfg.Seeds seeds (or seeds until cfg.Time passes or ctx ends),
// each the case [Generator.Case] draws for it, on cfg.Workers goroutines,
// and reports what failed. Each distinct failure is reported once, with its
// lowest seed; the report does not depend on the number of workers. When
// ctx ends, the cases running stop at once (they are not counted), no
// shrink starts and the one running stops; the report covers what ran.
func Fuzz(ctx context.Context, cfg Config) (Report, error) {
	if err := cfg.Validate(); err != nil {
		return Report{}, err
	}
	gen := NewGenerator(cfg)
	workers := max(cfg.Workers, 1)
	start := time.Now()
	var deadline time.Time
	if cfg.Time > 0 {
		deadline = start.Add(cfg.Time)
	}
	seeds := make(chan uint64)
	go func() {
		defer close(seeds)
		for i := 0; cfg.Seeds == 0 || i < cfg.Seeds; i++ {
			if !deadline.IsZero() && time.Now().After(deadline) {
				return
			}
			select {
			case seeds <- cfg.First + uint64(i):
			case <-ctx.Done():
				return
			}
		}
	}()

	var (
		mu       sync.Mutex
		rep      = Report{Fired: map[Kind]int{}}
		traces   = map[string]bool{}
		bySig    = map[string]*FailureReport{}
		firstErr error
	)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seed := range seeds {
				mu.Lock()
				stop := cfg.StopOnFailure && rep.Failed > 0
				mu.Unlock()
				if stop {
					continue
				}
				c, err := gen.Case(seed)
				var o Outcome
				if err == nil {
					o, err = RunContext(ctx, c)
				}
				if err != nil && ctx.Err() != nil {
					continue // cut short by the interrupt
				}
				mu.Lock()
				if err != nil {
					if firstErr == nil {
						firstErr = fmt.Errorf("seed %d: %w", seed, err)
					}
					mu.Unlock()
					continue
				}
				rep.Cases++
				rep.Steps += o.Steps
				traces[o.Trace] = true
				for _, f := range o.Fired {
					rep.Fired[f.Kind]++
				}
				if slices.ContainsFunc(o.Errs, func(e error) bool { return e != nil }) {
					rep.Crashed++
				}
				if o.Failed() {
					rep.Failed++
					sig := o.Failure.Signature()
					fr := bySig[sig]
					if fr == nil {
						fr = &FailureReport{Signature: sig, First: o}
						bySig[sig] = fr
					} else if o.Case.Seed < fr.First.Case.Seed {
						fr.First = o
					}
					fr.Count++
				}
				done, failed := rep.Cases, rep.Failed
				mu.Unlock()
				logCase(cfg.Log, o)
				if cfg.Progress != nil {
					cfg.Progress(done, failed)
				}
			}
		}()
	}
	wg.Wait()
	rep.Elapsed = time.Since(start)
	rep.Interrupted = ctx.Err() != nil
	rep.Traces = len(traces)
	for h := range traces {
		rep.TraceHashes = append(rep.TraceHashes, h)
	}
	slices.Sort(rep.TraceHashes)
	for _, fr := range bySig {
		rep.Failures = append(rep.Failures, *fr)
	}
	sort.Slice(rep.Failures, func(i, j int) bool { return rep.Failures[i].First.Case.Seed < rep.Failures[j].First.Case.Seed })
	if cfg.Shrink {
		shrinkStart := time.Now()
		for i := range rep.Failures {
			if ctx.Err() != nil {
				rep.Failures[i].ShrinkErr = fmt.Errorf("shrink %s: not started: %w", rep.Failures[i].Signature, ctx.Err())
				continue
			}
			if cfg.Log != nil {
				cfg.Log.Debug("shrink", zap.String("failure", rep.Failures[i].Signature), zap.Uint64("seed", rep.Failures[i].First.Case.Seed), zap.Int("budget", cfg.Budget))
			}
			s, err := ShrinkWithin(ctx, rep.Failures[i].First, cfg.Budget, cfg.ShrinkTime, nil)
			if cfg.Log != nil {
				cfg.Log.Debug("shrunk", zap.Uint64("seed", rep.Failures[i].First.Case.Seed), zap.Int("runs", s.Runs), zap.Error(err))
			}
			if err != nil {
				rep.Failures[i].ShrinkErr = fmt.Errorf("shrink %s: %w", rep.Failures[i].Signature, err)
				continue
			}
			rep.Failures[i].Shrunk = &s
		}
		rep.Shrinking = time.Since(shrinkStart)
		rep.Interrupted = ctx.Err() != nil
	}
	return rep, firstErr
}

// logCase writes o's debug line to log (nil: nowhere).
func logCase(log *zap.Logger, o Outcome) {
	if log == nil || !log.Core().Enabled(zap.DebugLevel) {
		return
	}
	verdict := "passed"
	if o.Failure != nil {
		verdict = o.Failure.Summary()
	}
	log.Debug("case", zap.Uint64("seed", o.Case.Seed), zap.Int("world", o.Case.Program.World),
		zap.Int("steps of program", len(o.Case.Program.Steps)), zap.String("strategy", o.Case.Strategy),
		zap.String("faults fired", o.Fired.String()), zap.Int64("steps", o.Steps), zap.Duration("virtual", o.VirtualTime),
		zap.String("trace", o.Trace[:min(16, len(o.Trace))]), zap.String("verdict", verdict))
}

// Generator draws the case of each seed for a [Config]. It is safe for
// concurrent use.
type Generator struct {
	cfg Config
}

// NewGenerator returns the generator of cfg's cases.
func NewGenerator(cfg Config) *Generator { return &Generator{cfg: cfg} }

// Case draws the case of seed: its program (see [DrawProgram]), its
// strategy (resolved when cfg asks for a portfolio) and its fault plan.
func (g *Generator) Case(seed uint64) (Case, error) {
	cfg := g.cfg
	sizes := cfg.Sizes
	if sizes == nil && cfg.Kernels.PTX {
		// Interpreted thread by thread, a MiB costs minutes.
		sizes = DefaultSizes
	}
	p := DrawProgram(seed, cfg.Worlds, sizes, cfg.Algos)
	if cfg.Sizes == nil && cfg.Kernels.PTX {
		// Every word a PTX kernel makes a strong access to costs memory
		// for the whole run: a default worker stays under 1 GB.
		p = fitPTXMemory(p, sizes, MaxPTXCaseMemory)
	}
	c := Case{
		Program: p, InputSeed: seed, Seed: seed, Strategy: cfg.Strategy, Depth: cfg.Depth,
		Steps: EstimateSteps(p), Faults: cfg.Faults, Timeout: cfg.Timeout, MaxSteps: cfg.MaxSteps,
		Race: cfg.Race, Kernels: cfg.Kernels, Instrument: cfg.Instrument,
	}
	c.Plan = NewPlan(seed, cfg.Faults, p, c.Steps, c.timeout())
	return c.Resolved()
}
