package fuzz

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	pa "github.com/asynkron/protoactor-go/actor"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/device/sim/race"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/simjob"
)

// FailureKind classifies a failed case.
type FailureKind string

// The failure kinds.
const (
	// WrongResult: a rank returned success with a wrong result (or, in a
	// liveness run, ranks disagree or guard bytes were overwritten).
	WrongResult FailureKind = "wrong-result"
	// RankError: a rank failed in a run where nothing was injected.
	RankError FailureKind = "rank-error"
	// Deadlock: every remaining task waited with no timeout.
	Deadlock FailureKind = "deadlock"
	// Panic: a task panicked.
	Panic FailureKind = "panic"
	// StepLimit: the run did not finish within its step bound (a livelock).
	StepLimit FailureKind = "step-limit"
	// SimError: the simulation could not run the case at all.
	SimError FailureKind = "sim-error"
	// DataRace: the race detector (Case.Race) found two accesses to the
	// same bytes that nothing orders.
	DataRace FailureKind = "race"
)

// Failure is why a case failed.
type Failure struct {
	Kind   FailureKind
	Detail string
}

func (f *Failure) Error() string { return fmt.Sprintf("%s: %s", f.Kind, f.Detail) }

// Summary is the failure's kind and the first line of its detail.
func (f *Failure) Summary() string {
	line, _, _ := strings.Cut(f.Detail, "\n")
	return fmt.Sprintf("%s: %s", f.Kind, line)
}

// Signature identifies a failure up to its numbers (ranks, steps,
// addresses), so that the fuzzer reports each distinct failure once.
func (f *Failure) Signature() string {
	line, _, _ := strings.Cut(f.Detail, "\n")
	return string(f.Kind) + ": " + digits.ReplaceAllString(line, "N")
}

var digits = regexp.MustCompile(`0x[0-9a-f]+|[0-9]+`)

// Outcome is the result of running a [Case].
type Outcome struct {
	Case        Case
	Trace       string        // the trace hash
	Steps       int64         // scheduling steps
	VirtualTime time.Duration // virtual time at the end
	Errs        []error       // each rank's error (nil: success, or it never returned)
	Returned    []bool        // whether each rank's program returned
	Verdicts    []RankVerdict // what each rank's checks found
	Fired       Plan          // the faults that fired, in the order they did
	Schedule    Schedule      // the run's decisions that differ from the default policy
	Events      []actor.Event // every trace event, when kept
	// Races are the data races the detector found (Case.Race), but for
	// those with an injected signal write on one side, which are stray by
	// design.
	Races   []race.Race
	Failure *Failure // nil when the case passed
}

// Failed reports whether the case failed.
func (o Outcome) Failed() bool { return o.Failure != nil }

// Run runs a case and judges it (see the package doc). The error reports
// a case that is not valid; everything that goes wrong while it runs is in
// the outcome's Failure.
func Run(c Case) (Outcome, error) { return run(context.Background(), c, false) }

// RunTraced is [Run] keeping every trace event in the outcome.
func RunTraced(c Case) (Outcome, error) { return run(context.Background(), c, true) }

// RunContext is [Run] that gives up when ctx ends: the run stops within a
// few hundred scheduling steps and RunContext returns ctx's error, with no
// outcome.
func RunContext(ctx context.Context, c Case) (Outcome, error) { return run(ctx, c, false) }

// RunTracedContext is [RunTraced] that gives up when ctx ends, as
// [RunContext] does.
func RunTracedContext(ctx context.Context, c Case) (Outcome, error) { return run(ctx, c, true) }

func run(ctx context.Context, c Case, keep bool) (Outcome, error) {
	if err := ctx.Err(); err != nil {
		return Outcome{}, err
	}
	if err := c.Validate(); err != nil {
		return Outcome{}, err
	}
	st, err := c.strategy()
	if err != nil {
		return Outcome{}, err
	}
	w := c.Program.World
	verdicts := make([]RankVerdict, w)
	returned := make([]bool, w)
	prog := c.Program.program(c.InputSeed, verdicts)
	program := func(r *rank.Rank) error {
		err := prog(r)
		returned[r.ID()] = true
		return err
	}
	in := newInjector(c.Plan, w)
	if c.Strategy != StrategyReplay {
		st = in.promptly(st, c.Seed)
	}
	rec := newPooledRecorder(st)
	stop := &stopStrategy{inner: in.crashes(rec), done: ctx.Done()}
	cfg := c.simConfig(stop, in, keep)
	var world *sim.World
	setup := cfg.Setup
	cfg.Setup = func(job simjob.Job) error {
		world, stop.sched = job.World, job.Scheduler
		if setup != nil {
			return setup(job)
		}
		return nil
	}
	var res simjob.Result
	var simErr error
	withSystem(func(sys *pa.ActorSystem) {
		cfg.System = sys
		res, simErr = simjob.Simulate(cfg, program)
	})
	if world != nil {
		world.Release() // the memory that ranks which failed never freed
	}
	sched := rec.done()
	if stop.stopped {
		return Outcome{}, fmt.Errorf("seed %d stopped after %d steps: %w", c.Seed, res.Steps, ctx.Err())
	}
	o := Outcome{
		Case: c, Trace: res.Trace, Steps: res.Steps, VirtualTime: res.VirtualTime,
		Errs: res.Errs, Returned: returned, Verdicts: verdicts, Fired: in.order, Schedule: sched, Events: res.Events,
	}
	if res.Races != nil {
		for _, r := range res.Races.Races {
			if !in.ownLabel(r.FirstTask) && !in.ownLabel(r.SecondTask) {
				o.Races = append(o.Races, r)
			}
		}
	}
	if o.Errs == nil {
		o.Errs = make([]error, w)
	}
	o.Failure = judge(c, o, simErr)
	return o, nil
}

// stopEvery is how many scheduling steps pass between two looks at the
// run's context.
const stopEvery = 256

// stopStrategy halts every task of a run once its context ends, which ends
// the run; until then it is the strategy it wraps.
type stopStrategy struct {
	inner   actor.Strategy
	done    <-chan struct{}
	sched   *actor.Scheduler
	n       int
	stopped bool
}

func (s *stopStrategy) Next(step int64, runnable []*actor.Task) int {
	if s.done != nil && !s.stopped {
		if s.n++; s.n%stopEvery == 0 {
			select {
			case <-s.done:
				s.stopped = true
				s.sched.Halt("the run was interrupted", func(*actor.Task) bool { return true })
			default:
			}
		}
	}
	return s.inner.Next(step, runnable)
}

// judge applies the case's checks: a wrong result fails any case; a run
// whose faults cannot explain a hang or a failed rank is judged for
// liveness, the others for safety (see the package doc).
func judge(c Case, o Outcome, simErr error) *Failure {
	for r, v := range o.Verdicts {
		if v.Wrong != "" {
			return &Failure{Kind: WrongResult, Detail: fmt.Sprintf("rank %d: %s", r, v.Wrong)}
		}
	}
	if simErr != nil {
		var pe *actor.PanicError
		var de *actor.DeadlockError
		switch {
		case errors.As(simErr, &pe):
			return &Failure{Kind: Panic, Detail: simErr.Error()}
		case errors.As(simErr, &de):
			return &Failure{Kind: Deadlock, Detail: simErr.Error()}
		case errors.Is(simErr, actor.ErrStepLimit):
			return &Failure{Kind: StepLimit, Detail: simErr.Error()}
		}
		return &Failure{Kind: SimError, Detail: simErr.Error()}
	}
	if !ExplainsFailure(o.Fired, c.timeout()) {
		// Liveness: every rank finishes, and no race.
		for r, err := range o.Errs {
			if err != nil {
				return &Failure{Kind: RankError, Detail: fmt.Sprintf("rank %d: %v", r, err)}
			}
			if !o.Returned[r] {
				return &Failure{Kind: RankError, Detail: fmt.Sprintf("rank %d never returned", r)}
			}
		}
		if len(o.Races) > 0 {
			return raceFailure(o.Races)
		}
		return nil
	}
	// Safety: a race counts when every rank succeeded; once a rank has
	// failed, the protocol promises its peers no ordering.
	for r := range o.Errs {
		if o.Errs[r] != nil || !o.Returned[r] {
			return nil
		}
	}
	if len(o.Races) > 0 {
		return raceFailure(o.Races)
	}
	return nil
}

// ExplainsFailure reports whether the faults that fired can explain a
// rank's failure or a hang: every kind can but delays, and delays can when
// together they reach half the ranks' timeout.
func ExplainsFailure(fired Plan, timeout time.Duration) bool {
	var delayed time.Duration
	for _, f := range fired {
		switch f.Kind {
		case Delay, StoreSlow:
			delayed += f.For
		default:
			return true
		}
	}
	return 2*delayed >= timeout
}

// raceFailure reports races. Its first line names the two code sites of
// the first race, so that the fuzzer tells distinct races apart; the rest
// lists every race.
func raceFailure(races []race.Race) *Failure {
	r := races[0]
	first := fmt.Sprintf("%s vs %s", race.Describe(r.First, ""), race.Describe(r.Second, ""))
	err := &race.Error{Races: races}
	for _, r := range races {
		err.Total += 1 + r.Repeats
	}
	return &Failure{Kind: DataRace, Detail: first + "\n" + err.Error()}
}
