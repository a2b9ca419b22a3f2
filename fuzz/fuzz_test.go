package fuzz

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/internal/barriermut"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/simjob"
	"github.com/symmem/symmem/workload"
)

// small keeps the suites fast: few ranks, small tensors.
func small(faults FaultSet, seeds int) Config {
	return Config{
		Seeds: seeds, Strategy: StrategyPortfolio, Faults: faults, Workers: 2, Race: true,
		Worlds: []int{2, 3, 4}, Sizes: []uint64{16, 64, 260, 1024},
	}
}

func TestLivenessModeAllPass(t *testing.T) {
	rep, err := Fuzz(context.Background(), small(FaultsNone, 120))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Cases != 120 {
		t.Fatalf("ran %d cases, want 120", rep.Cases)
	}
	for _, f := range rep.Failures {
		t.Errorf("%d cases: %v\n  %s", f.Count, f.First.Failure, f.First.Case.Command())
	}
	if rep.Crashed != 0 || len(rep.Fired) != 0 {
		t.Fatalf("liveness run injected faults (%v) or saw rank errors (%d)", rep.Fired, rep.Crashed)
	}
	if rep.Traces < 115 {
		t.Fatalf("120 seeds gave only %d distinct traces", rep.Traces)
	}
}

func TestSafetyModeFindsNoWrongResult(t *testing.T) {
	rep, err := Fuzz(context.Background(), small(FaultsSafety, 150))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Failures {
		t.Errorf("%d cases: %v\n  faults %v\n  %s", f.Count, f.First.Failure, f.First.Fired, f.First.Case.Command())
	}
	// The faults must have bitten: most kinds fired, and many runs had
	// ranks fail (cleanly, since no failure was reported).
	fired := 0
	for _, k := range FaultsSafety.kinds() {
		if rep.Fired[k] > 0 {
			fired++
		}
	}
	if fired < len(FaultsSafety.kinds())-1 {
		t.Errorf("only %d fault kinds fired in 150 safety cases: %v", fired, rep.Fired)
	}
	if rep.Crashed < 40 {
		t.Errorf("only %d of 150 safety cases had a rank fail", rep.Crashed)
	}
}

// oneCollective is the program of one checked all-reduce.
func oneCollective(t *testing.T, spec workload.Spec) Program {
	t.Helper()
	p, err := SpecProgram(spec)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCrashedRankIsNamed: a rank that dies before joining leaves its peers
// with timeouts that name it, and the case passes (safety holds).
func TestCrashedRankIsNamed(t *testing.T) {
	c := Case{
		Program: oneCollective(t, workload.Spec{World: 3, Bytes: 64, DType: device.Float32, Op: device.Sum, Algo: workload.OneShot}),
		Seed:    1, InputSeed: 1, Strategy: StrategyRandom, Faults: FaultsSafety,
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

// TestProgramsCoverEveryFormAndStep: the default generator draws every
// collective form, every step kind, subgroups and groups sharing a
// buffer; every program reads back from its text.
func TestProgramsCoverEveryFormAndStep(t *testing.T) {
	forms, kinds := map[Form]bool{}, map[StepKind]bool{}
	shared := false
	for seed := range uint64(300) {
		p := DrawProgram(seed, nil, nil, nil)
		if err := p.Validate(); err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, p)
		}
		q, err := ParseProgram(p.String())
		if err != nil || !reflect.DeepEqual(p, q) {
			t.Fatalf("seed %d: %s read back as %s (%v)", seed, p, q, err)
		}
		groupsOn := map[int]map[int]bool{}
		for _, s := range p.Steps {
			kinds[s.Kind] = true
			for _, c := range s.Colls {
				forms[c.Form] = true
				if groupsOn[c.Buf] == nil {
					groupsOn[c.Buf] = map[int]bool{}
				}
				groupsOn[c.Buf][c.Group] = true
			}
		}
		for _, gs := range groupsOn {
			shared = shared || len(gs) > 1
		}
	}
	if len(forms) != int(numForms) || len(kinds) != int(numStepKinds) || !shared {
		t.Fatalf("300 programs drew forms %v, steps %v, shared buffers %t", forms, kinds, shared)
	}
	for _, bad := range []string{"", "world=2", "world=2 bufs=64; ll g1 b0@0 16 float32 sum", "world=2 bufs=64; ll g0 b0@60 16 float32 sum",
		"world=2 bufs=64; intra-node g0 b0@0 16 float32 max", "world=2 bufs=64; capture x1 one-shot-copy g0 b0@0 16 float32 sum",
		"world=2 bufs=64; async ll g0 b0@0 16 float32 sum + ll g0 b0@8 16 float32 sum", "world=2 groups=1,1 bufs=64"} {
		if _, err := ParseProgram(bad); err == nil {
			t.Errorf("program %q accepted", bad)
		}
	}
}

// TestReplayReproducesTrace: a case gives the same trace hash when run
// again, when its recorded decisions are replayed, and when it is saved to
// a file and loaded, with faults and without.
func TestReplayReproducesTrace(t *testing.T) {
	prog, err := ParseProgram("world=3 groups=1,2 bufs=2048; two-shot g0 b0@16 260 bfloat16 avg; async ll g1 b0@1040 64 float32 sum + one-shot-copy g0 b0@512 64 float16 max; barrier g1 b0@16 64 ch2")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := ParsePlan("signal-lose rank=1 launch=1 after=3 pad=1 ch=0 src=0; delay rank=2 op=4 for=3ms; store-slow rank=0 req=2 for=1ms")
	if err != nil {
		t.Fatal(err)
	}
	// The crash comes halfway through a fault-free run, whatever its
	// length.
	clean, err := Run(Case{Program: prog, Seed: 13, Strategy: StrategyRandom})
	if err != nil || clean.Failed() {
		t.Fatalf("fault-free run: %v %v", err, clean.Failure)
	}
	plan = append(plan, Fault{Kind: Crash, Rank: 2, At: clean.Steps / 2})
	cases := map[string]Case{
		"pct, no faults":    {Program: prog, Seed: 11, Strategy: StrategyPCT, Depth: 2, Steps: clean.Steps, Faults: FaultsNone, Race: true},
		"random, no faults": {Program: prog, Seed: 12, Strategy: StrategyRandom, Faults: FaultsNone},
		"pct, faults":       {Program: prog, Seed: 13, Strategy: StrategyPCT, Depth: 3, Steps: clean.Steps, Faults: FaultsSafety, Plan: plan},
		"random, faults":    {Program: prog, Seed: 14, Strategy: StrategyRandom, Faults: FaultsSafety, Plan: plan, Race: true},
	}
	for name, c := range cases {
		o, err := RunTraced(c)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if o.Failed() {
			t.Fatalf("%s: %v", name, o.Failure)
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

// firstFailure fuzzes cfg until a case fails and returns it; the test
// fails when none does within cfg.Seeds.
func firstFailure(t *testing.T, cfg Config) Outcome {
	t.Helper()
	cfg.StopOnFailure, cfg.Workers = true, 1
	rep, err := Fuzz(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Failures) == 0 {
		t.Fatalf("no failure in %d seeds from %d", cfg.Seeds, cfg.First)
	}
	return rep.Failures[0].First
}

// TestDuplicatedSignalIsFound: with every fault, the fuzzer finds the
// duplicated put the pad protocol cannot tell from a real one (a wrong
// result or, with the race detector, the race it opens), and the case
// without the fault passes on the same schedule.
func TestDuplicatedSignalIsFound(t *testing.T) {
	cfg := small(FaultsAll, 400)
	o := firstFailure(t, cfg)
	if o.Failure.Kind != WrongResult && o.Failure.Kind != DataRace {
		t.Fatalf("first failure %v, want a wrong result or a race\n%s", o.Failure, o.Case.Command())
	}
	dup := false
	for _, f := range o.Fired {
		dup = dup || f.Kind == SignalDup
	}
	if !dup {
		t.Fatalf("failure %v with faults %v: no duplicated signal fired\n%s", o.Failure, o.Fired, o.Case.Command())
	}
	c := o.Case
	c.Strategy, c.Schedule, c.Plan, c.Faults = StrategyReplay, o.Schedule, nil, FaultsNone
	clean, _ := Run(c)
	if clean.Failed() {
		t.Fatalf("without the fault the schedule fails too: %v", clean.Failure)
	}
}

// TestFaultFreeFailureIsAFinding: a broken protocol that fails every
// fault-free run is reported like any failure, with its replay line and
// its shrunk form, and the session goes on to its last seed.
func TestFaultFreeFailureIsAFinding(t *testing.T) {
	cfg := small(FaultsNone, 6)
	cfg.Shrink, cfg.Budget = true, 60
	cfg.Instrument = func(sc *simjob.Config) {
		sc.Device.WrapBlock = barriermut.Mutation{Kernel: kernels.OneShotAllReduce, Barrier: 1, Skip: true, SkipWait: true}.Wrap
	}
	cfg.Algos = []workload.Algo{workload.OneShot}
	rep, err := Fuzz(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Cases != 6 || rep.Failed == 0 || len(rep.Failures) == 0 {
		t.Fatalf("ran %d cases, %d failed: want all 6 run and failures reported", rep.Cases, rep.Failed)
	}
	f := rep.Failures[0]
	if f.Shrunk == nil || !f.Shrunk.Outcome.Failed() {
		t.Fatalf("failure %v not shrunk", f.First.Failure)
	}
	if !strings.HasPrefix(f.First.Case.Command(), "symmem replay ") {
		t.Fatalf("no replay line: %q", f.First.Case.Command())
	}
}

// TestShrinkReducesFailingCase: a failure found by the fuzzer shrinks to
// fewer steps, faults and decisions, the minimal case fails the same way
// and replays to its own trace, and its description gives each rank's
// verdict and lists decisions only when asked.
func TestShrinkReducesFailingCase(t *testing.T) {
	cfg := small(FaultsAll, 400)
	o := firstFailure(t, cfg)
	c := o.Case
	// Faults that change nothing, for the shrink to remove.
	c.Plan = append(append(Plan{}, c.Plan...), Fault{Kind: StoreSlow, Rank: 0, At: 900, For: time.Millisecond}, Fault{Kind: Delay, Rank: 1, At: 800, For: time.Second})
	o, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	if !o.Failed() {
		t.Fatal("the case no longer fails")
	}
	s, err := Shrink(o, 150)
	if err != nil {
		t.Fatal(err)
	}
	m := s.Outcome
	if !m.Failed() || m.Failure.Kind != o.Failure.Kind {
		t.Fatalf("shrunk outcome %v, want %v", m.Failure, o.Failure)
	}
	if len(m.Case.Plan) > len(o.Fired) || len(m.Case.Program.Steps) > len(o.Case.Program.Steps) || len(m.Schedule) > len(o.Schedule) {
		t.Fatalf("shrink grew the case: %d faults, %d steps, %d decisions from %d, %d, %d",
			len(m.Case.Plan), len(m.Case.Program.Steps), len(m.Schedule), len(o.Fired), len(o.Case.Program.Steps), len(o.Schedule))
	}
	if len(m.Schedule) > 40 && 2*len(m.Schedule) > len(o.Schedule) {
		t.Fatalf("shrink kept %d of %d decisions", len(m.Schedule), len(o.Schedule))
	}
	if s.Runs > 151 {
		t.Fatalf("shrink ran %d cases with a budget of 150", s.Runs)
	}
	t.Logf("shrunk in %d runs: %d of %d steps, %d of %d faults, %d of %d decisions", s.Runs, len(m.Case.Program.Steps), len(o.Case.Program.Steps),
		len(m.Case.Plan), len(c.Plan), len(m.Schedule), len(o.Schedule))
	again, _ := Run(m.Case)
	if again.Trace != m.Trace || !again.Failed() {
		t.Fatalf("minimal case gave trace %s, then %s (%v)", m.Trace, again.Trace, again.Failure)
	}
	var brief, full strings.Builder
	if err := Describe(&brief, m, false); err != nil {
		t.Fatal(err)
	}
	if err := Describe(&full, m, true); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--strategy replay", "FAILED " + string(m.Failure.Kind), "rank 0: ", "--decisions-diff"} {
		if !strings.Contains(brief.String(), want) {
			t.Errorf("description lacks %q:\n%s", want, brief.String())
		}
	}
	if len(m.Schedule) > 0 && (strings.Contains(brief.String(), "runs, at") || !strings.Contains(full.String(), "runs, at")) {
		t.Errorf("decisions listed by default or missing when asked:\n%s\n%s", brief.String(), full.String())
	}
}

// TestVerdictNamesWrongRank: a rank whose result is wrong is called so,
// not "ok".
func TestVerdictNamesWrongRank(t *testing.T) {
	o := Outcome{Errs: make([]error, 2), Returned: []bool{true, true}, Verdicts: []RankVerdict{{Checked: 3}, {Checked: 1, Wrong: "step 1: element 0 differs"}}}
	if v := o.RankVerdict(1, errors.New("wrong result: step 1")); !strings.HasPrefix(v, "WRONG RESULT") {
		t.Fatalf("verdict %q", v)
	}
	if v := o.RankVerdict(0, nil); !strings.Contains(v, "all 3 results") {
		t.Fatalf("verdict %q", v)
	}
}

func TestLivenessUnlessFaultsExplainAFailure(t *testing.T) {
	for _, tc := range []struct {
		fired Plan
		want  bool
	}{
		{nil, false},
		{Plan{{Kind: Delay, For: time.Millisecond}, {Kind: StoreSlow, For: 100 * time.Millisecond}}, false},
		{Plan{{Kind: Delay, For: 600 * time.Millisecond}}, true},
		{Plan{{Kind: StoreFail}}, true},
		{Plan{{Kind: SignalCorrupt}}, true},
	} {
		if got := ExplainsFailure(tc.fired, time.Second); got != tc.want {
			t.Errorf("%v: explains a failure %t, want %t", tc.fired, got, tc.want)
		}
	}
	// A rank error with only a short delay fired fails the case.
	c := Case{
		Program: oneCollective(t, workload.Spec{World: 2, Bytes: 64, DType: device.Float32, Op: device.Sum, Algo: workload.OneShot}),
		Seed:    1, Strategy: StrategyRandom, Faults: FaultsSafety,
		Plan: Plan{{Kind: Delay, Rank: 0, At: 0, For: time.Millisecond}},
		Instrument: func(sc *simjob.Config) {
			wrap := sc.WrapDevice
			sc.WrapDevice = func(r int, d device.Device) device.Device {
				if wrap != nil {
					d = wrap(r, d)
				}
				if r == 1 {
					return failingLaunch{d}
				}
				return d
			}
		},
	}
	o, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Fired) != 1 || o.Failure == nil || o.Failure.Kind != RankError {
		t.Fatalf("fired %v, failure %v: want the delay alone and a rank error", o.Fired, o.Failure)
	}
}

func TestGeneratorIsDeterministic(t *testing.T) {
	cfg := small(FaultsSafety, 1)
	g1, g2 := NewGenerator(cfg), NewGenerator(cfg)
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
	}
}

func TestPlanAndScheduleText(t *testing.T) {
	prog := DrawProgram(3, nil, nil, nil)
	for seed := range uint64(50) {
		p := NewPlan(seed, FaultsAll, prog, 300, time.Second)
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
	good := Case{
		Program: oneCollective(t, workload.Spec{World: 3, Bytes: 64, DType: device.Float32, Op: device.Sum, Algo: workload.OneShot}),
		Seed:    1, Strategy: StrategyRandom, Faults: FaultsSafety, Plan: Plan{{Kind: Crash, Rank: 1, At: 10}},
	}
	for name, mutate := range map[string]func(*Case){
		"world":     func(c *Case) { c.Program.World = 0 },
		"strategy":  func(c *Case) { c.Strategy = "dfs" },
		"plan rank": func(c *Case) { c.Plan = Plan{{Kind: Crash, Rank: 7}} },
		"liveness":  func(c *Case) { c.Faults = FaultsNone },
		"alignment": func(c *Case) { c.Program.Steps[0].Colls[0].Offset = 2 },
	} {
		c := good
		c.Program.Steps = []Step{{Kind: StepColl, Colls: append([]Coll{}, good.Program.Steps[0].Colls...)}}
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
	cfg := small(FaultsAll, 30)
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
		b.WriteString(strings.Repeat("+", rep.Failed))
		sigs[i] = b.String()
		if rep.Cases != 30 {
			t.Fatalf("%d workers ran %d cases", w, rep.Cases)
		}
	}
	if sigs[0] != sigs[1] {
		t.Fatalf("1 worker reported\n%s3 workers reported\n%s", sigs[0], sigs[1])
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

// TestLoadSaysWhere: a case file cut short or edited wrongly is refused
// with the line and column where it goes wrong.
func TestLoadSaysWhere(t *testing.T) {
	prog, err := ParseProgram("world=2 groups=0,1 bufs=2048; one-shot g0 b0@16 64 float32 sum")
	if err != nil {
		t.Fatal(err)
	}
	o, err := Run(Case{Program: prog, Seed: 1, Strategy: StrategyRandom})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "case.json")
	if err := Save(path, o); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Count(b, []byte{'\n'})
	for text, want := range map[string]string{
		string(b[:len(b)/2]): "the JSON ends early, at line ",
		string(bytes.Replace(b, []byte(`"seed": 1`), []byte(`"seed": "one"`), 1)): "column",
		string(b) + "{}": fmt.Sprintf("line %d column 1: text after the JSON value", lines+1),
	} {
		if text == string(b) {
			t.Fatalf("the edit for %q changed nothing in:\n%s", want, b)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, err := Load(path); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "load case "+path) {
			t.Errorf("%v, want an error naming the file and saying %q", err, want)
		}
	}
}

// failingLaunch refuses every kernel launch.
type failingLaunch struct{ device.Device }

func (failingLaunch) Launch(device.Stream, device.Launch) error { return errors.New("launch refused") }
