package fuzz

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/internal/minimize"
)

// DefaultShrinkRuns bounds the cases one shrink runs.
const DefaultShrinkRuns = 400

// DefaultShrinkTime bounds the time one shrink takes: no candidate starts
// after it.
const DefaultShrinkTime = 60 * time.Second

// Shrunk is the smallest failing case a shrink found.
type Shrunk struct {
	Outcome   Outcome // the minimal failing run, with its trace events
	Runs      int     // cases run while shrinking
	Faults    int     // faults that fired in the original run
	Steps     int     // program steps of the original case
	Decisions int     // decisions recorded in the original run
	// TimedOut says the shrink reached its time bound: Outcome is the
	// smallest failing case it found before.
	TimedOut bool
}

// Shrink removes faults, program steps, collectives and scheduling
// decisions from a failing outcome while the failure (its kind) persists,
// by delta debugging, each candidate replaying the decisions kept with a
// [Replay] or, where a smaller program cannot follow them, running the
// original seeded strategy. budget bounds the runs (0: DefaultShrinkRuns).
// The result is re-run with its trace kept; its case uses the replay
// strategy with the decisions its run took.
func Shrink(o Outcome, budget int) (Shrunk, error) {
	return ShrinkContext(context.Background(), o, budget)
}

// ShrinkContext is [Shrink] that gives up when ctx ends: the run in
// progress stops (see [RunContext]) and ShrinkContext returns an error
// wrapping ctx's, with the runs it took.
func ShrinkContext(ctx context.Context, o Outcome, budget int) (Shrunk, error) {
	return ShrinkWithin(ctx, o, budget, 0, nil)
}

// ShrinkWithin is [ShrinkContext] bounded in time too: no candidate starts
// once limit (0: none) has passed on the clock now (nil: time.Now); the
// smallest failing case found by then is the result, run once more with
// its trace kept, and TimedOut is set.
func ShrinkWithin(ctx context.Context, o Outcome, budget int, limit time.Duration, now func() time.Time) (Shrunk, error) {
	if now == nil {
		now = time.Now
	}
	start := now()
	if !o.Failed() {
		return Shrunk{}, fmt.Errorf("shrink: the case passed (seed %d)", o.Case.Seed)
	}
	if budget <= 0 {
		budget = DefaultShrinkRuns
	}
	kind := o.Failure.Kind
	s := Shrunk{Faults: len(o.Fired), Steps: len(o.Case.Program.Steps), Decisions: len(o.Schedule)}
	cur := o.Case
	cur.Strategy, cur.Depth, cur.Plan, cur.Schedule = StrategyReplay, 0, o.Fired, o.Schedule
	seeded := o.Case.Strategy != StrategyReplay

	try := func(c Case) (Outcome, bool) {
		if s.Runs >= budget || ctx.Err() != nil || s.TimedOut {
			return Outcome{}, false
		}
		if limit > 0 && now().Sub(start) >= limit {
			s.TimedOut = true
			return Outcome{}, false
		}
		s.Runs++
		r, err := RunContext(ctx, c)
		return r, err == nil && r.Failed() && r.Failure.Kind == kind
	}
	// attempt runs a candidate with the current decisions, then (when the
	// case had a seeded strategy) with that strategy; the first that fails
	// becomes the current case, with the decisions its run took.
	attempt := func(edit func(*Case)) bool {
		c := cur
		edit(&c)
		if r, ok := try(c); ok {
			cur.Plan, cur.Program, cur.Schedule = c.Plan, c.Program, r.Schedule
			return true
		}
		if !seeded {
			return false
		}
		c2 := o.Case
		c2.Plan, c2.Program = c.Plan, c.Program
		if r, ok := try(c2); ok {
			cur.Plan, cur.Program, cur.Schedule = c.Plan, c.Program, r.Schedule
			return true
		}
		return false
	}
	minimize.DDMin(cur.Plan, func(p Plan) bool { return attempt(func(c *Case) { c.Plan = p }) })
	steps := make([]int, len(cur.Program.Steps))
	for i := range steps {
		steps[i] = i
	}
	whole := cur.Program
	minimize.DDMin(steps, func(keep []int) bool {
		return attempt(func(c *Case) { c.Program = whole.keep(keep) })
	})
	for i := range cur.Program.Steps {
		colls := cur.Program.Steps[i].Colls
		if len(colls) < 2 {
			continue
		}
		minimize.DDMin(colls, func(cs []Coll) bool {
			return len(cs) > 0 && attempt(func(c *Case) {
				c.Program = c.Program.withColls(i, cs)
			})
		})
	}
	// Smaller tensors: each collective at the smallest size that keeps the
	// failure.
	for i := range cur.Program.Steps {
		for j := range cur.Program.Steps[i].Colls {
			for _, n := range []uint64{16, 64, 260, 1024} {
				c := cur.Program.Steps[i].Colls[j]
				if n >= c.Bytes || n%uint64(c.DType.Size()) != 0 {
					continue
				}
				c.Bytes = n
				if attempt(func(k *Case) { k.Program = k.Program.withColl(i, j, c) }) {
					break
				}
			}
		}
	}
	// Groups and buffers no step uses.
	if p, ok := cur.Program.tidy(); ok {
		attempt(func(k *Case) { k.Program = p })
	}
	// Decisions after the failure do not matter, and dropping late ones
	// disturbs the run least: cut the tail first, then minimise.
	fails := func(d Schedule) bool {
		c := cur
		c.Schedule = d
		r, ok := try(c)
		if ok && len(r.Schedule) <= len(d) {
			cur.Schedule = r.Schedule
		}
		return ok
	}
	fails(minimize.ShortestPrefix(cur.Schedule, fails))
	minimize.DDMin(cur.Schedule, fails)

	if err := ctx.Err(); err != nil {
		return s, fmt.Errorf("shrink interrupted after %d runs: %w", s.Runs, err)
	}
	c := cur
	if c.Schedule == nil {
		c.Schedule = Schedule{}
	}
	final, err := RunTracedContext(ctx, c)
	if err != nil {
		return s, fmt.Errorf("shrink: %w", err)
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

// Describe writes what a traced outcome did: its case as a replay command,
// the faults that fired, with decisions set each scheduling decision that
// differs from the default policy (which task ran, at which point), each
// rank's verdict and the failure.
func Describe(w io.Writer, o Outcome, decisions bool) error {
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
			if decisions {
				at[quantum{e.Task, runs.of(e.Task)}] = e
				runs.ran(e.Task)
			}
		case "fault", "halt":
			faults = append(faults, fmt.Sprintf("step %d: %s %s", e.Step, e.Kind, e.Detail))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "case:    %s\n", briefCommand(o.Case))
	fmt.Fprintf(&b, "trace:   %s (%d steps, %v virtual)\n", o.Trace, o.Steps, o.VirtualTime)
	for _, f := range faults {
		fmt.Fprintf(&b, "  %s\n", f)
	}
	if decisions {
		fmt.Fprintf(&b, "decisions that differ from the default policy: %d\n", len(o.Schedule))
		for _, d := range o.Schedule {
			e := at[quantum{d.Task, d.Run}]
			fmt.Fprintf(&b, "  step %d: task %d (%s) runs, at %s\n", d.Step, d.Task, names[d.Task], e.Detail)
		}
	} else {
		fmt.Fprintf(&b, "decisions that differ from the default policy: %d (list them with --decisions-diff)\n", len(o.Schedule))
	}
	for r, err := range o.Errs {
		fmt.Fprintf(&b, "rank %d: %s\n", r, o.RankVerdict(r, err))
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

// maxDescribedCommand is the longest case command [Describe] prints as it
// is; a longer one is printed with its decisions counted, not listed.
const maxDescribedCommand = 1000

// briefCommand is c's command, its decisions summarised when the command
// would be long.
func briefCommand(c Case) string {
	cmd := c.Command()
	if len(cmd) <= maxDescribedCommand || len(c.Schedule) == 0 {
		return cmd
	}
	n := len(c.Schedule)
	c.Schedule = nil
	return strings.Replace(c.Command(), " --decisions ''",
		fmt.Sprintf(" --decisions <%d decisions: --decisions-diff lists them, --save writes them to a case file>", n), 1)
}

// RankVerdict says how rank r's program ended: a wrong result, an error,
// no return (stopped by a crash or the end of the run), or every result
// checked right.
func (o Outcome) RankVerdict(r int, err error) string {
	checked := 0
	if r < len(o.Verdicts) {
		checked = o.Verdicts[r].Checked
		if w := o.Verdicts[r].Wrong; w != "" {
			return fmt.Sprintf("WRONG RESULT (%d results right before it): %s", checked, w)
		}
	}
	switch {
	case err != nil:
		return fmt.Sprintf("failed with an error after %d results checked right: %v", checked, err)
	case r < len(o.Returned) && !o.Returned[r]:
		return fmt.Sprintf("did not return (%d results checked right)", checked)
	}
	if checked == 0 {
		return "returned, with no result of its own to check"
	}
	return fmt.Sprintf("right: all %d results checked", checked)
}
