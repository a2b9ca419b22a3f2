package fuzz

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/workload"
)

// small keeps the suites fast: few ranks, small tensors.
func small(faults FaultSet, seeds int) Config {
	return Config{
		Seeds: seeds, Strategy: StrategyPortfolio, Faults: faults, Workers: 2,
		Worlds: []int{2, 3, 4}, Sizes: []uint64{16, 64, 260, 1024},
	}
}

func TestLivenessModeAllPass(t *testing.T) {
	rep, err := Fuzz(context.Background(), small(FaultsNone, 300))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Cases != 300 {
		t.Fatalf("ran %d cases, want 300", rep.Cases)
	}
	for _, f := range rep.Failures {
		t.Errorf("%d cases: %v\n  %s", f.Count, f.First.Failure, f.First.Case.Command())
	}
	if rep.Crashed != 0 || len(rep.Fired) != 0 {
		t.Fatalf("liveness run injected faults (%v) or saw rank errors (%d)", rep.Fired, rep.Crashed)
	}
	if rep.Traces < 290 {
		t.Fatalf("300 seeds gave only %d distinct traces", rep.Traces)
	}
}

func TestSafetyModeFindsNoWrongResult(t *testing.T) {
	rep, err := Fuzz(context.Background(), small(FaultsSafety, 300))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Failures {
		t.Errorf("%d cases: %v\n  faults %v\n  %s", f.Count, f.First.Failure, f.First.Fired, f.First.Case.Command())
	}
	// The faults must have bitten: most kinds fired, and many runs had
	// ranks fail (cleanly, since no failure was reported).
	for _, k := range FaultsSafety.kinds() {
		if rep.Fired[k] == 0 {
			t.Errorf("no %v fault fired in 300 safety cases", k)
		}
	}
	if rep.Crashed < 100 {
		t.Errorf("only %d of 300 safety cases had a rank fail", rep.Crashed)
	}
}

// TestCrashedRankIsNamed: a rank that dies before joining leaves its peers
// with timeouts that name it, and the case passes (safety holds).
func TestCrashedRankIsNamed(t *testing.T) {
	c := Case{
		Spec: workload.Spec{World: 3, Bytes: 64, DType: device.Float32, Op: device.Sum, Algo: workload.OneShot, Seed: 1},
		Seed: 1, Strategy: StrategyRandom, Faults: FaultsSafety,
		Plan: Plan{{Kind: Crash, Rank: 2, At: 0}},
	}
	o, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	if o.Failed() {
		t.Fatalf("case failed: %v", o.Failure)
	}
	if len(o.Fired) != 1 || o.Returned[2] {
		t.Fatalf("fired %v, rank 2 returned %t: want the crash to stop rank 2", o.Fired, o.Returned[2])
	}
	for r := range 2 {
		if o.Errs[r] == nil || !strings.Contains(o.Errs[r].Error(), "ranks [2]") {
			t.Errorf("rank %d: %v, want a timeout naming rank 2", r, o.Errs[r])
		}
	}
}

// TestReplayReproducesTrace: a case gives the same trace hash when run
// again, when its recorded decisions are replayed, and when it is saved to
// a file and loaded, with faults and without.
func TestReplayReproducesTrace(t *testing.T) {
	spec := workload.Spec{World: 4, Bytes: 260, DType: device.BFloat16, Op: device.Avg, Algo: workload.TwoShot, Offset: 8, Seed: 3}
	plan, err := ParsePlan("signal-lose rank=1 launch=0 after=3 slot=5; delay rank=2 op=4 for=3ms; store-slow rank=0 req=2 for=1ms; crash rank=3 step=230")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]Case{
		"pct, no faults":    {Spec: spec, Seed: 11, Strategy: StrategyPCT, Depth: 2, Steps: 300, Faults: FaultsNone},
		"random, no faults": {Spec: spec, Seed: 12, Strategy: StrategyRandom, Faults: FaultsNone},
		"pct, faults":       {Spec: spec, Seed: 13, Strategy: StrategyPCT, Depth: 3, Steps: 300, Faults: FaultsSafety, Plan: plan},
		"random, faults":    {Spec: spec, Seed: 14, Strategy: StrategyRandom, Faults: FaultsSafety, Plan: plan},
	}
	for name, c := range cases {
		o, err := RunTraced(c)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if c.Faults != FaultsNone && len(o.Fired) < 3 {
			t.Fatalf("%s: only %v fired: the test exercises too little", name, o.Fired)
		}
		again, _ := Run(c)
		replay := c
		replay.Strategy, replay.Schedule = StrategyReplay, o.Schedule
		replayed, err := Run(replay)
		if err != nil {
			t.Fatalf("%s: replay: %v", name, err)
		}
		loaded, want := saveAndLoad(t, o)
		fromFile, _ := Run(loaded)
		for how, got := range map[string]string{"again": again.Trace, "replay": replayed.Trace, "file": fromFile.Trace, "file's record": want} {
			if got != o.Trace {
				t.Errorf("%s: %s gave trace %s, want %s", name, how, got, o.Trace)
			}
		}
		if !reflect.DeepEqual(replayed.Fired, o.Fired) {
			t.Errorf("%s: replay fired %v, the run %v", name, replayed.Fired, o.Fired)
		}
	}
}

// spuriousSignal is a case fuzz --faults all found: a duplicated put lets a
// two-shot rank leave its last barrier before a peer's chunk has landed.
func spuriousSignal(t *testing.T) Case {
	t.Helper()
	plan, err := ParsePlan("signal-dup rank=1 launch=0 after=11 slot=6033924055061957009")
	if err != nil {
		t.Fatal(err)
	}
	return Case{
		Spec: workload.Spec{World: 3, Bytes: 1024, DType: device.Float16, Op: device.Max, Algo: workload.TwoShot, Offset: 16, Seed: 1889},
		Seed: 1889, Strategy: StrategyPCT, Depth: 3, Steps: 197, Faults: FaultsAll, Plan: plan,
	}
}

func TestSpuriousSignalIsAWrongResult(t *testing.T) {
	o, err := Run(spuriousSignal(t))
	if err != nil {
		t.Fatal(err)
	}
	if !o.Failed() || o.Failure.Kind != WrongResult {
		t.Fatalf("outcome %v, want a wrong result", o.Failure)
	}
	if len(o.Fired) != 1 || o.Fired[0].Kind != SignalDup {
		t.Fatalf("fired %v, want the duplicated signal", o.Fired)
	}
	// The same schedule without the duplicate is correct.
	c := spuriousSignal(t)
	c.Strategy, c.Schedule, c.Plan = StrategyReplay, o.Schedule, nil
	clean, _ := Run(c)
	if clean.Failed() {
		t.Fatalf("without the fault the schedule fails too: %v", clean.Failure)
	}
}

// TestRaceDetectorFindsSpuriousSignal: with the race detector on, the
// duplicated put shows as a data race between a peer's write and the read
// it should have waited for, reported before the wrong result it causes;
// the same trace replays from the saved file, which keeps the flag.
func TestRaceDetectorFindsSpuriousSignal(t *testing.T) {
	c := spuriousSignal(t)
	c.Race = true
	o, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	if !o.Failed() || o.Failure.Kind != DataRace || len(o.Races) == 0 {
		t.Fatalf("outcome %v with %d races, want a data race", o.Failure, len(o.Races))
	}
	plain, _ := Run(spuriousSignal(t))
	if plain.Trace != o.Trace {
		t.Fatalf("the detector changed the trace: %s, without it %s", o.Trace, plain.Trace)
	}
	if !strings.Contains(c.Command(), " --race") {
		t.Fatalf("command %q lacks --race", c.Command())
	}
	loaded, want := saveAndLoad(t, o)
	again, _ := Run(loaded)
	if !loaded.Race || again.Trace != want || !again.Failed() || again.Failure.Kind != DataRace {
		t.Fatalf("loaded case (race %t) gave %v, trace %s, want the race and %s", loaded.Race, again.Failure, again.Trace, want)
	}
}

// TestRaceModeLivenessPasses: the protocol is race-free in fault-free
// runs, as the detector sees them.
func TestRaceModeLivenessPasses(t *testing.T) {
	cfg := small(FaultsNone, 60)
	cfg.Race = true
	rep, err := Fuzz(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Cases != 60 {
		t.Fatalf("ran %d cases, want 60", rep.Cases)
	}
	for _, f := range rep.Failures {
		t.Errorf("%d cases: %v\n  %s", f.Count, f.First.Failure, f.First.Case.Command())
	}
}

func TestShrinkReducesFailingSchedule(t *testing.T) {
	c := spuriousSignal(t)
	// Faults that change nothing, for the shrink to remove.
	c.Plan = append(c.Plan, Fault{Kind: StoreSlow, Rank: 0, At: 900, For: time.Millisecond}, Fault{Kind: Delay, Rank: 2, At: 800, For: time.Second})
	o, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	if !o.Failed() {
		t.Fatal("the case no longer fails")
	}
	s, err := Shrink(o, 100)
	if err != nil {
		t.Fatal(err)
	}
	m := s.Outcome
	if !m.Failed() || m.Failure.Kind != o.Failure.Kind {
		t.Fatalf("shrunk outcome %v, want %v", m.Failure, o.Failure)
	}
	if len(m.Case.Plan) != 1 || m.Case.Plan[0].Kind != SignalDup {
		t.Fatalf("shrunk plan %v, want the duplicated signal alone", m.Case.Plan)
	}
	if len(m.Schedule) >= len(o.Schedule) {
		t.Fatalf("shrink kept %d of %d decisions", len(m.Schedule), len(o.Schedule))
	}
	if s.Runs > 101 {
		t.Fatalf("shrink ran %d cases with a budget of 100", s.Runs)
	}
	t.Logf("shrunk in %d runs: %d of %d faults, %d of %d decisions", s.Runs, len(m.Case.Plan), len(c.Plan), len(m.Schedule), len(o.Schedule))
	// The minimal case replays exactly, from its command's pieces.
	again, _ := Run(m.Case)
	if again.Trace != m.Trace {
		t.Fatalf("minimal case gave trace %s, then %s", m.Trace, again.Trace)
	}
	var b strings.Builder
	if err := Describe(&b, m); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--strategy replay", "fault signal-dup", "FAILED wrong-result", "runs, at"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("description lacks %q:\n%s", want, b.String())
		}
	}
}

func TestShrinkRejectsPassingCase(t *testing.T) {
	c := spuriousSignal(t)
	c.Plan, c.Faults = nil, FaultsNone
	o, err := Run(c)
	if err != nil || o.Failed() {
		t.Fatalf("fault-free case: %v %v", err, o.Failure)
	}
	if _, err := Shrink(o, 10); err == nil {
		t.Fatal("Shrink accepted a passing case")
	}
}

func TestGeneratorIsDeterministic(t *testing.T) {
	cfg := small(FaultsSafety, 1)
	g1, g2 := NewGenerator(cfg), NewGenerator(cfg)
	shapes := map[string]bool{}
	for seed := range uint64(40) {
		a, err := g1.Case(seed)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := g2.Case(seed)
		if a.Command() != b.Command() {
			t.Fatalf("seed %d: %s then %s", seed, a.Command(), b.Command())
		}
		if a.Strategy == StrategyPortfolio {
			t.Fatalf("seed %d: portfolio not resolved", seed)
		}
		shapes[a.Spec.Algo.String()+a.Spec.DType.String()] = true
	}
	if len(shapes) < 6 {
		t.Fatalf("40 seeds drew only %d algorithm and dtype pairs", len(shapes))
	}
}

func TestPlanAndScheduleText(t *testing.T) {
	for seed := range uint64(50) {
		p := NewPlan(seed, FaultsAll, 5, 300, time.Second)
		q, err := ParsePlan(p.String())
		if err != nil {
			t.Fatalf("%q: %v", p, err)
		}
		if !reflect.DeepEqual(p, q) {
			t.Fatalf("plan %q read back as %q", p, q)
		}
	}
	s := Schedule{{Step: 3, Task: 5, Run: 0}, {Step: 9, Task: 2, Run: 4}}
	if got, err := ParseSchedule(s.String()); err != nil || !reflect.DeepEqual(got, s) {
		t.Fatalf("schedule %q read back as %v, %v", s, got, err)
	}
	for _, bad := range []string{"crash", "crash rank=1", "crash rank=x step=2", "crash rank=1 step=2 for=1s", "boom rank=1 step=2", "delay rank=1 op=2", "crash rank=1 step=2 rank=3"} {
		if _, err := ParsePlan(bad); err == nil {
			t.Errorf("plan %q accepted", bad)
		}
	}
	for _, bad := range []string{"3", "3:4", "a:1.2", "5:1.2 4:1.0", "1:-1.0"} {
		if _, err := ParseSchedule(bad); err == nil {
			t.Errorf("schedule %q accepted", bad)
		}
	}
}

func TestBadCasesAreRejected(t *testing.T) {
	good := spuriousSignal(t)
	for name, mutate := range map[string]func(*Case){
		"world":     func(c *Case) { c.Spec.World = 0 },
		"strategy":  func(c *Case) { c.Strategy = "dfs" },
		"plan rank": func(c *Case) { c.Plan = Plan{{Kind: Crash, Rank: 7}} },
		"liveness":  func(c *Case) { c.Faults = FaultsNone },
		"alignment": func(c *Case) { c.Spec.Offset = 2 },
	} {
		c := good
		mutate(&c)
		if _, err := Run(c); err == nil {
			t.Errorf("%s: bad case ran", name)
		}
	}
	if _, err := Fuzz(context.Background(), Config{Strategy: StrategyRandom}); err == nil {
		t.Error("Fuzz with neither seeds nor time ran")
	}
	if _, err := Fuzz(context.Background(), Config{Seeds: 1, Strategy: StrategyRandom, Worlds: []int{0}}); err == nil {
		t.Error("Fuzz with world size 0 ran")
	}
}

// TestFuzzReportDoesNotDependOnWorkers: the same seeds give the same
// failures, whatever the number of workers.
func TestFuzzReportDoesNotDependOnWorkers(t *testing.T) {
	cfg := small(FaultsAll, 20)
	cfg.First = 1880
	cfg.Sizes = []uint64{64, 260, 1024}
	var sigs [2]string
	for i, w := range []int{1, 3} {
		cfg.Workers = w
		rep, err := Fuzz(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, f := range rep.Failures {
			b.WriteString(f.First.Case.Command() + " " + f.First.Trace + "\n")
		}
		sigs[i] = b.String()
		if rep.Cases != 20 {
			t.Fatalf("%d workers ran %d cases", w, rep.Cases)
		}
	}
	if sigs[0] != sigs[1] {
		t.Fatalf("1 worker reported\n%s3 workers reported\n%s", sigs[0], sigs[1])
	}
	if sigs[0] == "" {
		t.Fatal("no failure in seeds 1880-1899 with all faults: the test compares nothing")
	}
}

func TestFuzzStopsOnContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, err := Fuzz(ctx, small(FaultsNone, 1000))
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if rep.Cases > 10 {
		t.Fatalf("ran %d cases after the context ended", rep.Cases)
	}
}

// saveAndLoad writes o's case to a file and reads it back: the loaded
// case and the trace the file records.
func saveAndLoad(t *testing.T, o Outcome) (Case, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "case.json")
	if err := Save(path, o); err != nil {
		t.Fatal(err)
	}
	loaded, want, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return loaded, want
}
