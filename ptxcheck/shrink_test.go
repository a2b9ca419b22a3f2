package ptxcheck

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
)

// raceOf runs opts and returns the first finding, which must be a race.
func raceOf(t *testing.T, p *Program, src *Source, opts Options) *Finding {
	t.Helper()
	rep, err := RunProgram(p, src, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		if f.Kind == "race" {
			return f
		}
	}
	t.Fatalf("no race: %+v", rep.Findings)
	return nil
}

// reproduces checks that the options of s find f again, with the trace
// s names (when it names one).
func reproduces(t *testing.T, p *Program, src *Source, s *Shrunk, f *Finding) {
	t.Helper()
	if s.Finding == nil || s.Finding.Key() != f.Key() {
		t.Fatalf("the shrunk case finds %+v, want %s", s.Finding, f.Key())
	}
	rep, err := RunProgram(p, src, s.Options)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, x := range rep.Findings {
		found = found || x.Key() == f.Key()
	}
	if !found || s.Trace != "" && rep.Runs[0].Trace != s.Trace {
		t.Errorf("the replay of %s found %d findings (the finding: %v), trace %s; want the finding and trace %q",
			s.Size(), len(rep.Findings), found, rep.Runs[0].Trace, s.Trace)
	}
}

// TestShrinkFewRuns: a shrink whose run budget ends before it recorded
// its case's decisions (1 to 3 runs of cas_exchange_relaxed_wait) returns
// the smallest case it has, which replays, instead of failing.
func TestShrinkFewRuns(t *testing.T) {
	p, src := example(t, "cas_exchange_relaxed_wait")
	opts := Options{Worlds: []int{2}, Vars: map[string]Expr{"n": "192"}}
	f := raceOf(t, p, src, opts)
	for runs := 1; runs <= 3; runs++ {
		s, err := Shrink(p, src, opts, f, ShrinkLimits{Runs: runs})
		if err != nil {
			t.Fatalf("%d runs: %v", runs, err)
		}
		if s.Runs > runs || s.Stopped != "runs" {
			t.Errorf("%d runs: took %d, stopped %q", runs, s.Runs, s.Stopped)
		}
		reproduces(t, p, src, s, f)
	}
}

// TestShrinkLaunchFirst: a race of a 3 x 64 launch shrinks to one block
// of one warp before its decisions, and the capped case replays.
func TestShrinkLaunchFirst(t *testing.T) {
	p, src := example(t, "twostage_volatile")
	opts := Options{Worlds: []int{2}, Vars: map[string]Expr{"n": "192"}}
	f := raceOf(t, p, src, opts)
	var stages []string
	s, err := Shrink(p, src, opts, f, ShrinkLimits{Progress: func(p ShrinkProgress) {
		if len(stages) == 0 || stages[len(stages)-1] != p.Stage {
			stages = append(stages, p.Stage)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	o := s.Options
	if o.MaxBlocks != 1 || o.MaxThreads != 32 || s.Stopped != "" {
		t.Errorf("shrunk to %s (stopped %q), want 1 block of 32 threads", s.Size(), s.Stopped)
	}
	if got := strings.Join(stages, " "); !strings.HasPrefix(got, "blocks threads elements") || !strings.HasSuffix(got, "decisions") {
		t.Errorf("stages %q: want the launch and its elements first, the decisions last", got)
	}
	// The race is in the flags: a few elements show it as well as 192.
	if n, err := strconv.Atoi(string(o.Vars["n"])); err != nil || n >= 192 || n < 1 {
		t.Errorf("shrunk to n = %q, want fewer than 192 elements", o.Vars["n"])
	}
	reproduces(t, p, src, s, f)
}

// TestShrinkTimeBound: on a clock that moves a second at every look, a
// shrink of 5 seconds stops early with the smallest case so far.
func TestShrinkTimeBound(t *testing.T) {
	p, src := example(t, "twostage_volatile")
	opts := Options{Worlds: []int{2}, Vars: map[string]Expr{"n": "192"}}
	f := raceOf(t, p, src, opts)
	var clock time.Time
	tick := func() time.Time { clock = clock.Add(time.Second); return clock }
	s, err := Shrink(p, src, opts, f, ShrinkLimits{Time: 5 * time.Second, Now: tick})
	if err != nil {
		t.Fatal(err)
	}
	if s.Stopped != "time" || s.Runs == 0 || s.Runs > 5 {
		t.Errorf("stopped %q after %d runs, want a stop for time within 5 runs", s.Stopped, s.Runs)
	}
	reproduces(t, p, src, s, f)
}

// TestShrinkInterrupted: a shrink whose context ends after its third run
// stops with the smallest case so far, and the checks' runs after it do
// not run: the report says it was interrupted.
func TestShrinkInterrupted(t *testing.T) {
	p, src := example(t, "twostage_volatile")
	opts := Options{Worlds: []int{2}, Vars: map[string]Expr{"n": "192"}}
	f := raceOf(t, p, src, opts)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts.Context = ctx
	s, err := Shrink(p, src, opts, f, ShrinkLimits{Progress: func(p ShrinkProgress) {
		if p.Runs == 3 {
			cancel()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Stopped != "interrupted" || s.Runs != 3 || s.Options.Context != nil {
		t.Errorf("stopped %q after %d runs, want interrupted after 3", s.Stopped, s.Runs)
	}
	reproduces(t, p, src, s, f)
	rep, err := RunProgram(p, src, Options{Worlds: []int{2}, Seeds: 3, Vars: opts.Vars, Context: ctx})
	if err != nil || !rep.Interrupted || len(rep.Runs) != 0 {
		t.Errorf("a check under the ended context: %v, interrupted %v, %d runs; want no run", err, rep.Interrupted, len(rep.Runs))
	}
}
