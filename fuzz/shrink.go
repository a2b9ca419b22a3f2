package fuzz

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/symmem/symmem/actor"
)

// DefaultShrinkRuns bounds the cases one shrink runs.
const DefaultShrinkRuns = 400

// Shrunk is the smallest failing case a shrink found.
type Shrunk struct {
	Outcome   Outcome // the minimal failing run, with its trace events
	Runs      int     // cases run while shrinking
	Faults    int     // faults that fired in the original run
	Decisions int     // decisions recorded in the original run
}

// Shrink removes faults and scheduling decisions from a failing outcome
// while the failure (its kind) persists, by delta debugging: first over the
// faults that fired, then over the recorded decisions, each candidate run
// with a [Replay] of the decisions kept. budget bounds the runs (0:
// DefaultShrinkRuns). The result is re-run with its trace kept; its case
// uses the replay strategy, so [Case.Command] prints it in full.
func Shrink(o Outcome, budget int) (Shrunk, error) {
	if !o.Failed() {
		return Shrunk{}, fmt.Errorf("shrink: the case passed (seed %d)", o.Case.Seed)
	}
	if budget <= 0 {
		budget = DefaultShrinkRuns
	}
	base := o.Case
	base.Strategy = StrategyReplay
	base.Depth = 0
	kind := o.Failure.Kind
	s := Shrunk{Faults: len(o.Fired), Decisions: len(o.Schedule)}
	plan, sched := o.Case.Plan, o.Schedule

	try := func(c Case) (Outcome, bool) {
		if s.Runs >= budget {
			return Outcome{}, false
		}
		s.Runs++
		r, err := Run(c)
		return r, err == nil && r.Failed() && r.Failure.Kind == kind
	}
	fails := func(p Plan, d Schedule) bool {
		c := base
		c.Plan, c.Schedule = p, d
		_, ok := try(c)
		return ok
	}
	// Faults: a candidate plan keeps the failure if the recorded decisions
	// still produce it, or if the original strategy does with that plan (a
	// removed delay shifts the run, which a seeded strategy absorbs better).
	// Delta debugging keeps the last candidate that failed, so its
	// decisions go on to the next phase.
	kept := sched
	plan = ddmin(plan, func(p Plan) bool {
		if fails(p, sched) {
			kept = sched
			return true
		}
		if o.Case.Strategy == StrategyReplay {
			return false
		}
		c := o.Case
		c.Plan = p
		r, ok := try(c)
		if ok {
			kept = r.Schedule
		}
		return ok
	})
	sched = kept
	// Decisions after the failure do not matter, and dropping late ones
	// disturbs the run least: cut the tail first, then minimise.
	sched = shortestPrefix(sched, func(d Schedule) bool { return fails(plan, d) })
	sched = ddmin(sched, func(d Schedule) bool { return fails(plan, d) })

	c := base
	c.Plan, c.Schedule = plan, sched
	if c.Schedule == nil {
		c.Schedule = Schedule{}
	}
	final, err := RunTraced(c)
	if err != nil {
		return s, err
	}
	s.Runs++
	if !final.Failed() {
		// Cannot happen for a deterministic run; report rather than hide it.
		return s, fmt.Errorf("shrink: the minimal case of seed %d passed when run again", o.Case.Seed)
	}
	// The decisions the final run recorded are the ones that took effect:
	// print and save those.
	final.Case.Schedule = final.Schedule
	s.Outcome = final
	return s, nil
}

// shortestPrefix returns the shortest prefix of items for which fails
// holds, by bisection (fails(items) is assumed, and taken to be monotone).
func shortestPrefix[S ~[]T, T any](items S, fails func(S) bool) S {
	lo, hi := 0, len(items) // fails(items[:hi]) holds
	for lo < hi {
		mid := (lo + hi) / 2
		if fails(items[:mid:mid]) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return items[:hi:hi]
}

// ddmin is Zeller's delta debugging minimisation: it returns a subsequence
// of items for which fails still holds and from which no single chunk at
// the finest granularity tried can be removed. fails(items) is assumed.
func ddmin[S ~[]T, T any](items S, fails func(S) bool) S {
	if len(items) == 0 {
		return items
	}
	if fails(items[:0:0]) {
		return items[:0:0]
	}
	n := 2
	for len(items) >= 2 {
		chunk := (len(items) + n - 1) / n
		reduced := false
		// Later chunks first: removing them perturbs the run least.
		for end := len(items); end > 0; end -= chunk {
			start := max(end-chunk, 0)
			rest := append(append(make(S, 0, len(items)-(end-start)), items[:start]...), items[end:]...)
			if fails(rest) {
				items = rest
				n = max(n-1, 2)
				reduced = true
				break
			}
		}
		if !reduced {
			if n >= len(items) {
				break
			}
			n = min(2*n, len(items))
		}
	}
	if len(items) == 1 && fails(items[:0:0]) {
		return items[:0:0]
	}
	return items
}

// Describe writes what a traced outcome did: its case as a replay command,
// the faults that fired, each decision that differs from the default policy
// (which task ran, at which point), and the failure.
func Describe(w io.Writer, o Outcome) error {
	names := map[int]string{}
	type quantum struct{ task, run int }
	at := map[quantum]actor.Event{}
	runs := runCounts{}
	var faults []string
	for _, e := range o.Events {
		switch e.Kind {
		case "spawn":
			id, name, _ := strings.Cut(e.Detail, " ")
			if n, err := strconv.Atoi(id); err == nil {
				names[n] = name
			}
		case "run":
			at[quantum{e.Task, runs.of(e.Task)}] = e
			runs.ran(e.Task)
		case "fault", "halt":
			faults = append(faults, fmt.Sprintf("step %d: %s %s", e.Step, e.Kind, e.Detail))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "case:    %s\n", o.Case.Command())
	fmt.Fprintf(&b, "trace:   %s (%d steps, %v virtual)\n", o.Trace, o.Steps, o.VirtualTime)
	for _, f := range faults {
		fmt.Fprintf(&b, "  %s\n", f)
	}
	fmt.Fprintf(&b, "decisions that differ from the default policy: %d\n", len(o.Schedule))
	for _, d := range o.Schedule {
		e := at[quantum{d.Task, d.Run}]
		fmt.Fprintf(&b, "  step %d: task %d (%s) runs, at %s\n", d.Step, d.Task, names[d.Task], e.Detail)
	}
	for r, err := range o.Errs {
		switch {
		case err != nil:
			fmt.Fprintf(&b, "rank %d: %v\n", r, err)
		case r < len(o.Returned) && !o.Returned[r]:
			fmt.Fprintf(&b, "rank %d: did not return\n", r)
		default:
			fmt.Fprintf(&b, "rank %d: ok\n", r)
		}
	}
	if len(o.Races) > 0 && (o.Failure == nil || o.Failure.Kind != DataRace) {
		fmt.Fprintf(&b, "%d data races, not judged (a rank or the run failed first)\n", len(o.Races))
	}
	if o.Failure != nil {
		fmt.Fprintf(&b, "FAILED %v\n", o.Failure)
	} else {
		fmt.Fprintln(&b, "passed")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
