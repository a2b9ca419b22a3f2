package ptxcheck

import (
	"strings"
	"testing"
)

// example loads a harness of examples/kernels and its PTX.
func example(t *testing.T, name string) (*Program, *Source) {
	t.Helper()
	p, err := LoadHarness("../examples/kernels/" + name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	return p, load(t, p.PTX)
}

// TestPlanText: a plan's text form reads back; a bad one is named.
func TestPlanText(t *testing.T) {
	plan := Plan{{Kind: Stall, Rank: 1, At: 2, Steps: 100}, {Kind: Die, Rank: 0, At: 3},
		{Kind: LoseWrite, Rank: 2, At: 0}, {Kind: DupWrite, Rank: 1, At: 1}}
	got, err := ParsePlan(plan.String())
	if err != nil || got.String() != plan.String() || len(got) != 4 || got[0].Steps != 100 {
		t.Fatalf("%q read back as %v (%v)", plan, got, err)
	}
	if p, err := ParsePlan(""); err != nil || p == nil || len(p) != 0 {
		t.Errorf("the empty plan: %v %v", p, err)
	}
	for text, want := range map[string]string{
		"die:1":          "want KIND:RANK:AT",
		"stall:0:0":      "want stall:RANK:AT:STEPS",
		"stall:0:0:1s":   `steps "1s"`,
		"boom:0:0":       `unknown fault kind "boom"`,
		"die:-1:0":       `rank "-1"`,
		"lose-write:0:x": `at "x"`,
	} {
		if _, err := ParsePlan(text); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one saying %q", text, err, want)
		}
	}
	if k, err := ParseFaultKinds("all"); err != nil || len(k) != len(FaultKinds) {
		t.Errorf("all: %v %v", k, err)
	}
	if _, err := ParseFaultKinds("stall,crash"); err == nil || !strings.Contains(err.Error(), `"crash"`) {
		t.Errorf("crash: %v", err)
	}
}

// TestDieEndsInHang: a rank that dies before its second launch leaves its
// peer spinning in the barrier: one finding, a hang naming the PTX and
// CUDA lines of the wait, and no wrong result or error besides; a peer
// waiting at a host barrier for it is a hang naming that step.
func TestDieEndsInHang(t *testing.T) {
	p, src := example(t, "cas_exchange")
	rep, err := RunProgram(p, src, Options{Worlds: []int{2}, Vars: map[string]Expr{"n": "64"}, Plan: Plan{{Kind: Die, Rank: 1, At: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Runs[0]; r.Fired != 1 || r.Plan.String() != "die:1:1" {
		t.Errorf("run %+v: the fault did not fire", r)
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Kind != "hang" {
		t.Fatalf("findings %+v, want one hang", rep.Findings)
	}
	f := rep.Findings[0]
	d := strings.Join(f.Details, "\n")
	if !strings.Contains(d, "device 0 cas_exchange#3") || !strings.Contains(d, "PTX line 184") ||
		!strings.Contains(d, "cas_barrier.cu:31") || f.Plan.String() != "die:1:1" {
		t.Errorf("the hang does not name rank 0's wait at PTX line 184 in its third launch:\n%s", d)
	}

	// A peer that waits for the dead rank on the host hangs there too.
	sp := program(t, strings.Replace(stampHarness, `{"sync": true},`, `{"sync": true}, {"barrier": true},`, 1))
	rep, err = RunProgram(sp, load(t, "testdata/stamp.ptx"), Options{Worlds: []int{2}, Plan: Plan{{Kind: Die, Rank: 1, At: 0}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Title != "hang: host waits timed out at step 3" ||
		!strings.Contains(strings.Join(rep.Findings[0].Details, "\n"), `missing keys ["ptxcheck/barrier/1/1"]`) {
		t.Errorf("findings %+v, want one hang at the host barrier waiting for rank 1", rep.Findings)
	}
}

// TestFaultKinds: on a correct kernel, a stall changes nothing but the
// schedule; a lost write is a wrong result; a duplicated write delivered
// after the next launch races with the peers' reads of it. Drawn plans
// are the seed's: the same seeds draw the same faults and traces.
func TestFaultKinds(t *testing.T) {
	p, src := example(t, "twostage_relacq")
	vars := map[string]Expr{"n": "64"}
	run := func(plan Plan) *Report {
		t.Helper()
		rep, err := RunProgram(p, src, Options{Worlds: []int{2}, Vars: vars, Plan: plan})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Runs[0].Fired != len(plan) {
			t.Errorf("%v: %d faults fired", plan, rep.Runs[0].Fired)
		}
		return rep
	}
	clean, stalled := run(Plan{}), run(Plan{{Kind: Stall, Rank: 1, At: 1, Steps: 20000}})
	if len(clean.Findings)+len(stalled.Findings) != 0 || clean.Runs[0].Trace == stalled.Runs[0].Trace {
		t.Errorf("stall: findings %+v %+v, traces %s %s", clean.Findings, stalled.Findings, clean.Runs[0].Trace, stalled.Runs[0].Trace)
	}
	lost := run(Plan{{Kind: LoseWrite, Rank: 0, At: 1}})
	if len(lost.Findings) != 1 || !strings.Contains(lost.Findings[0].Title, "wrong result: rank 0 step 1.3 (check out)") {
		t.Errorf("lose-write: %+v", lost.Findings)
	}
	// The stamp kernel reads its next peer's input: a duplicate of rank
	// 1's write, delivered after its own launch, is ordered with nothing
	// rank 0's kernel does.
	sp := program(t, strings.NewReplacer(`, "init": {"dtype": "f32", "value": "rank*1000 + i"}`, ``,
		`"steps": [`, `"steps": [{"write": {"buffer": "in", "dtype": "f32", "value": "rank*1000 + i"}}, {"sync": true}, {"barrier": true},`,
		`{"sync": true},`, `{"sync": true}, {"barrier": true},`).Replace(stampHarness))
	stamp := load(t, "testdata/stamp.ptx")
	for _, plan := range []Plan{{}, {{Kind: DupWrite, Rank: 1, At: 0}}} {
		rep, err := RunProgram(sp, stamp, Options{Worlds: []int{2}, Plan: plan})
		if err != nil {
			t.Fatal(err)
		}
		raced := len(rep.Findings) > 0
		for _, f := range rep.Findings {
			raced = raced && f.Kind == "race" && strings.Contains(f.Title, "the load at PTX line 46") && strings.Contains(f.Title, "the host's write")
		}
		if raced != (len(plan) == 1) {
			for _, f := range rep.Findings {
				t.Errorf("plan %q: %s", plan, f.Title)
			}
		}
	}

	p, src = example(t, "cas_exchange")
	draw := func() *Report {
		rep, err := RunProgram(p, src, Options{Worlds: []int{2}, Seeds: 4, Vars: vars, Faults: FaultKinds, MaxSteps: 1_000_000})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	a, b := draw(), draw()
	plans := map[string]bool{}
	for i, r := range a.Runs {
		if len(r.Plan) != 1 || r.Plan.String() != b.Runs[i].Plan.String() || r.Trace != b.Runs[i].Trace {
			t.Errorf("seed %d drew %v then %v (traces %s %s)", r.Seed, r.Plan, b.Runs[i].Plan, r.Trace, b.Runs[i].Trace)
		}
		plans[r.Plan.String()] = true
	}
	if len(plans) < 2 {
		t.Errorf("4 seeds drew only %v", plans)
	}
}

// TestShrink: a race found at world 3 with an irrelevant fault and three
// repeats shrinks to world 2, no fault, fewer repeats and fewer
// decisions; the reproduction's options replay it exactly (the same
// trace, the same race).
func TestShrink(t *testing.T) {
	p, src := example(t, "twostage_volatile")
	opts := Options{Worlds: []int{3}, Vars: map[string]Expr{"n": "64"}, Plan: Plan{{Kind: Stall, Rank: 2, At: 0, Steps: 10}}}
	rep, err := RunProgram(p, src, opts)
	if err != nil {
		t.Fatal(err)
	}
	const race = "the store at examples/kernels/twostage_volatile.cu:45 and the load at examples/kernels/twostage_volatile.cu:52"
	var f *Finding
	for _, x := range rep.Findings {
		if strings.Contains(x.Title, race) {
			f = x
		}
	}
	if f == nil {
		t.Fatalf("no race between %s: %+v", race, rep.Findings)
	}
	s, err := Shrink(p, src, opts, f, ShrinkLimits{Runs: 10})
	if err != nil {
		t.Fatal(err)
	}
	o := s.Options
	if s.Finding.Key() != f.Key() || o.Worlds[0] != 2 || len(o.Plan) != 0 || o.Repeats["1"] >= 3 ||
		o.Decisions == nil || len(o.Decisions) >= s.Decisions || s.Runs > 11 {
		t.Errorf("shrunk in %d runs to world %v, plan %v, repeats %v, %d of %d decisions: %s",
			s.Runs, o.Worlds, o.Plan, o.Repeats, len(o.Decisions), s.Decisions, s.Finding.Title)
	}
	for range 2 {
		again, err := RunProgram(p, src, o)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, x := range again.Findings {
			found = found || x.Key() == f.Key()
		}
		if again.Runs[0].Trace != s.Trace || !found {
			t.Errorf("the replay gave trace %s and %d findings, want %s and the race", again.Runs[0].Trace, len(again.Findings), s.Trace)
		}
	}
}

// TestShrinkDeath: the hang a death leaves at world 3 shrinks to world 2,
// the fault moved to a rank the smaller world has, and still replays.
func TestShrinkDeath(t *testing.T) {
	p, src := example(t, "cas_exchange")
	opts := Options{Worlds: []int{3}, Vars: map[string]Expr{"n": "64"}, Plan: Plan{{Kind: Die, Rank: 2, At: 1}}}
	rep, err := RunProgram(p, src, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Kind != "hang" {
		t.Fatalf("findings %+v, want one hang", rep.Findings)
	}
	s, err := Shrink(p, src, opts, rep.Findings[0], ShrinkLimits{Runs: 8})
	if err != nil {
		t.Fatal(err)
	}
	o := s.Options
	if o.Worlds[0] != 2 || o.Plan.String() != "die:0:1" || s.Finding.Key() != rep.Findings[0].Key() {
		t.Fatalf("shrunk to world %v plan %q: %s", o.Worlds, o.Plan, s.Finding.Title)
	}
	again, err := RunProgram(p, src, o)
	if err != nil || again.Runs[0].Trace != s.Trace || len(again.Findings) != 1 {
		t.Fatalf("the replay: %v, trace %s, want %s", err, again.Runs[0].Trace, s.Trace)
	}
}

// TestFaultsAtGraphReplays: a launch captured in a graph counts for the
// fault plan at each replay that enqueues it, not at its capture: rank 1's
// graph replayed 3 times is its launches 0 to 2, a die or stall at launch
// 2 fires (before the third replay), and a drawn plan draws from all
// three. A write delivered again "after the next launch" goes after the
// replay that enqueues it, not into the capture (where the stream refuses
// host writes).
func TestFaultsAtGraphReplays(t *testing.T) {
	const harness = `{"buffers": [
	    {"name": "out", "kind": "plain", "bytes": 64, "init": {"dtype": "u32", "value": 0}},
	    {"name": "in", "kind": "plain", "bytes": 16}],
	  "steps": [
	    {"write": {"buffer": "in", "dtype": "u32", "value": "i"}},
	    {"graph": {"replays": 3, "steps": [
	      {"launch": {"entry": "append", "grid": 1, "block": 1, "params": [{"ptr": "out"}, {"u32": "7"}]}}]}},
	    {"sync": true},
	    {"check": {"buffer": "out", "dtype": "u32", "count": 4, "value": "(i == 0)*3 + (i > 0)*7"}}
	  ]}`
	p, src := program(t, harness), load(t, "testdata/steps.ptx")
	run := func(plan Plan) *Run {
		t.Helper()
		rep, err := RunProgram(p, src, Options{Worlds: []int{2}, Plan: plan})
		if err != nil {
			t.Fatalf("plan %q: %v", plan, err)
		}
		if len(rep.Findings) != 0 {
			for _, f := range rep.Findings {
				t.Errorf("plan %q: %s: %s\n%s", plan, f.Kind, f.Title, strings.Join(f.Details, "\n"))
			}
		}
		return &rep.Runs[0]
	}
	clean := run(Plan{})
	for _, plan := range []Plan{
		{{Kind: Die, Rank: 1, At: 2}},
		{{Kind: Stall, Rank: 0, At: 2, Steps: 1000}},
		{{Kind: DupWrite, Rank: 0, At: 1}}, // write 0 is out's init
	} {
		r := run(plan)
		if r.Fired != 1 {
			t.Errorf("plan %q: %d faults fired, want 1", plan, r.Fired)
		}
		if r.Trace == clean.Trace {
			t.Errorf("plan %q: the trace is the clean run's", plan)
		}
	}
	if r := run(Plan{{Kind: Die, Rank: 1, At: 3}}); r.Fired != 0 {
		t.Errorf("die:1:3 fired: rank 1 has launches 0 to 2 only")
	}

	rep, err := RunProgram(p, src, Options{Worlds: []int{2}, Seeds: 12, Faults: []FaultKind{Die}})
	if err != nil {
		t.Fatal(err)
	}
	at := map[int]bool{}
	for _, r := range rep.Runs {
		for _, f := range r.Plan {
			if f.At > 2 {
				t.Errorf("seed %d drew %v: past the third replay", r.Seed, r.Plan)
			}
			at[f.At] = true
		}
	}
	if !at[2] {
		t.Errorf("12 seeds drew launches %v, never the third replay's", at)
	}
}
