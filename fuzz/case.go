package fuzz

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/simjob"
)

// Defaults of a [Case].
const (
	// DefaultTimeout bounds every wait of a fuzzed rank, in virtual time.
	DefaultTimeout = time.Second
	// DefaultMaxSteps is the least step bound of a fuzzed run (see
	// [StepBudget]); reaching the bound is a failure (a livelock).
	DefaultMaxSteps = 2_000_000
	// DefaultDepth is the PCT depth when none is given.
	DefaultDepth = 3
)

// The strategy names a case accepts.
const (
	StrategyRandom    = "random"
	StrategyPCT       = "pct"
	StrategyPortfolio = "portfolio"
	// StrategyReplay follows the case's Schedule with a [Replay].
	StrategyReplay = "replay"
)

// Case is everything that determines one fuzzed run; running the same case
// gives the same trace.
type Case struct {
	Program   Program  // what every rank runs
	InputSeed uint64   // seeds the inputs of every collective
	Seed      uint64   // seeds the strategy
	Strategy  string   // random, pct, portfolio (resolved per seed) or replay
	Depth     int      // PCT depth (0: DefaultDepth)
	Steps     int64    // estimated run length: PCT's change points are drawn below it
	Faults    FaultSet // how the run is judged
	Plan      Plan     // the faults to inject
	// Schedule is what the replay strategy follows (other strategies
	// ignore it).
	Schedule Schedule
	Timeout  time.Duration // every rank wait (0: DefaultTimeout)
	MaxSteps int64         // 0: StepBudget of the program
	// Race runs the happens-before race detector over every simulated
	// memory access; a data race fails the case (see the package doc).
	Race bool
	// Kernels is what the simulated devices run: the Go twins (the zero
	// value) or the kernels' PTX.
	Kernels sim.Kernels
	// Instrument, when set, edits the simulator configuration after the
	// case's own hooks (fault injection) are in place: observers, test
	// doubles of a device or Store. It is not part of the case's command.
	Instrument func(*simjob.Config)
}

// Validate checks the case before it runs.
func (c Case) Validate() error {
	if err := c.Program.Validate(); err != nil {
		return fmt.Errorf("case: %w", err)
	}
	if _, _, err := c.resolve(); err != nil {
		return err
	}
	var errs []error
	for _, f := range []struct {
		name string
		v    int64
	}{{"depth", int64(c.Depth)}, {"estimated steps", c.Steps}, {"timeout", int64(c.Timeout)}, {"step bound", c.MaxSteps}} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("case: negative %s (%d)", f.name, f.v))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if c.Faults < FaultsNone || c.Faults > FaultsAll {
		return fmt.Errorf("case: unknown fault set %v", c.Faults)
	}
	if err := c.Plan.Validate(c.Program.World); err != nil {
		return fmt.Errorf("case: %w", err)
	}
	if c.Faults == FaultsNone && len(c.Plan) > 0 {
		return fmt.Errorf("case: a plan of %d faults with fault set none (liveness runs inject nothing)", len(c.Plan))
	}
	return nil
}

func (c Case) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

// StepBound is the step bound the case runs under: MaxSteps, or the
// [StepBudget] of its program.
func (c Case) StepBound() int64 { return c.maxSteps() }

func (c Case) maxSteps() int64 {
	if c.MaxSteps > 0 {
		return c.MaxSteps
	}
	return StepBudget(c.Program, c.Kernels.PTX)
}

// resolve turns the strategy name into the concrete strategy the seed runs:
// "random", or "pct" with its depth.
func (c Case) resolve() (string, int, error) {
	depth := c.Depth
	if depth == 0 {
		depth = DefaultDepth
	}
	switch c.Strategy {
	case StrategyRandom, StrategyReplay:
		return c.Strategy, 0, nil
	case StrategyPCT:
		return StrategyPCT, depth, nil
	case StrategyPortfolio:
		e, err := actor.DefaultPortfolio(c.Steps).Pick(c.Seed)
		if err != nil {
			return "", 0, err
		}
		if e.Name == "random" {
			return StrategyRandom, 0, nil
		}
		var d int
		if _, err := fmt.Sscanf(e.Name, "pct%d", &d); err != nil {
			return "", 0, fmt.Errorf("portfolio entry %q: %w", e.Name, err)
		}
		return StrategyPCT, d, nil
	}
	return "", 0, fmt.Errorf("unknown strategy %q (want random, pct, portfolio or replay)", c.Strategy)
}

// Resolved returns the case with a portfolio strategy replaced by the
// concrete strategy its seed runs, so that its command names it.
func (c Case) Resolved() (Case, error) {
	name, depth, err := c.resolve()
	if err != nil {
		return c, err
	}
	c.Strategy, c.Depth = name, depth
	return c, nil
}

// strategy builds the case's strategy.
func (c Case) strategy() (actor.Strategy, error) {
	name, depth, err := c.resolve()
	if err != nil {
		return nil, err
	}
	switch name {
	case StrategyPCT:
		return actor.NewPCT(c.Seed, depth, c.Steps), nil
	case StrategyReplay:
		return NewReplay(c.Schedule), nil
	}
	return actor.NewRandomWalk(c.Seed), nil
}

// Command is the symmem replay command line that runs the case again. The
// program, the plan and a replay strategy's decisions are given
// explicitly, so the command does not depend on how cases are drawn.
func (c Case) Command() string {
	r, err := c.Resolved()
	if err != nil {
		r = c
	}
	var b strings.Builder
	fmt.Fprintf(&b, "symmem replay --seed %d --strategy %s", r.Seed, r.Strategy)
	switch r.Strategy {
	case StrategyPCT:
		fmt.Fprintf(&b, " --depth %d --steps %d", r.Depth, r.Steps)
	case StrategyReplay:
		fmt.Fprintf(&b, " --decisions '%s'", r.Schedule)
	}
	fmt.Fprintf(&b, " --program '%s'", r.Program)
	if r.InputSeed != r.Seed {
		fmt.Fprintf(&b, " --input-seed %d", r.InputSeed)
	}
	fmt.Fprintf(&b, " --faults %s", r.Faults)
	switch {
	case len(r.Plan) > 0:
		fmt.Fprintf(&b, " --plan '%s'", r.Plan)
	case r.Faults != FaultsNone:
		b.WriteString(" --plan none") // not one drawn from the seed
	}
	if r.Timeout != 0 && r.Timeout != DefaultTimeout {
		fmt.Fprintf(&b, " --timeout %v", r.Timeout)
	}
	if r.MaxSteps != 0 && r.MaxSteps != StepBudget(r.Program, r.Kernels.PTX) {
		fmt.Fprintf(&b, " --max-steps %d", r.MaxSteps)
	}
	if !r.Race {
		b.WriteString(" --race=false")
	}
	if r.Kernels.PTX {
		b.WriteString(" --kernels ptx")
	}
	return b.String()
}

// simConfig is the simulator configuration of the case, hooked to in
// when its plan has faults, run by strategy st.
func (c Case) simConfig(st actor.Strategy, in *injector, keep bool) simjob.Config {
	cfg := simjob.Config{
		World:        c.Program.World,
		Seed:         c.Seed,
		Strategy:     st,
		MaxSteps:     c.maxSteps(),
		Timeout:      c.timeout(),
		KeepTrace:    keep,
		RaceDetector: c.Race,
		Device:       sim.Config{Kernels: sweepShape(c.Kernels)},
	}
	if len(in.plan) > 0 { // hooks with nothing to inject would only cost time
		cfg.Setup, cfg.WrapDevice, cfg.WrapStore = in.setup, in.wrapDevice, in.wrapStore
	}
	if c.Instrument != nil {
		c.Instrument(&cfg)
	}
	return cfg
}

// sweepShape caps the PTX launches of a case that names no cap at the
// suite's sweep shape (sim.SweepBlocks blocks of sim.SweepThreads
// threads: two warps and three blocks), so that every case, and its
// replay, runs the code of a second warp and a third block at a cost a
// sweep of many seeds affords.
func sweepShape(k sim.Kernels) sim.Kernels {
	if k.PTX && k.MaxThreads == 0 && k.MaxBlocks == 0 {
		k.MaxThreads, k.MaxBlocks = sim.SweepThreads, sim.SweepBlocks
	}
	return k
}
