package ptxcheck

import (
	"fmt"
	"strings"
	"testing"

	"github.com/symmem/symmem/internal/longtest"
)

// verdicts are the examples' expected verdicts: the race each must show
// (the sites of its two accesses), or "" for none.
var verdicts = []struct {
	harness string
	race    string
}{
	{"onestage_byteflags", "the strong store at examples/kernels/onestage_byteflags.cu:31 and the strong load at examples/kernels/onestage_byteflags.cu:39"},
	{"twostage_volatile", "the store at examples/kernels/twostage_volatile.cu:45 and the load at examples/kernels/twostage_volatile.cu:52"},
	{"twostage_relacq", ""},
	{"cas_exchange", ""},
	{"cas_exchange_relaxed_wait", "the store at examples/kernels/cas_barrier.cu:54 and the load at examples/kernels/cas_barrier.cu:58"},
	{"onestage_bf16", ""},
}

// TestExamples: the example kernels of examples/kernels, built by nvcc
// from CUDA, give their verdicts at world 2 on 192 elements (their
// harnesses' 1024 elements at worlds 2 to 8 and 5 seeds with
// SYMMEM_LONG=1; at worlds 2 and 3 and 2 seeds under the race detector,
// which makes the whole sweep take many minutes and gigabytes): the racy
// ones a race between the named CUDA lines, the others no finding at all.
func TestExamples(t *testing.T) {
	worlds, seeds, vars := []int{2}, 1, map[string]Expr{"n": "192"}
	switch {
	case longtest.Enabled() && raceOn:
		worlds, seeds, vars = []int{2, 3}, 2, nil
		t.Log("the race detector is on: worlds 2 and 3, 2 seeds (the whole sweep runs without -race)")
	case longtest.Enabled():
		worlds, seeds, vars = []int{2, 3, 4, 5, 6, 7, 8}, 5, nil
	}
	for _, v := range verdicts {
		t.Run(v.harness, func(t *testing.T) {
			p, err := LoadHarness("../examples/kernels/" + v.harness + ".json")
			if err != nil {
				t.Fatal(err)
			}
			src := load(t, p.PTX)
			rep, err := RunProgram(p, src, Options{Worlds: worlds, Seeds: seeds, Vars: vars})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Notes) > 0 {
				t.Errorf("notes on PTX built with -lineinfo: %q", rep.Notes)
			}
			found := false
			for _, f := range rep.Findings {
				if f.Runs < 1 || f.Runs > len(rep.Runs) {
					t.Errorf("%s: found in %d of %d runs", f.Title, f.Runs, len(rep.Runs))
				}
				switch {
				case v.race != "" && f.Kind == "race" && strings.Contains(f.Title, v.race):
					found = true
				case v.race == "" || f.Kind != "race":
					t.Errorf("unexpected finding: %s\n%s", f.Title, strings.Join(f.Details, "\n"))
				}
			}
			if v.race != "" && !found {
				t.Errorf("no race between %s", v.race)
			}
		})
	}
}

// TestSameSeedSameTrace: a seed fixes the schedule, with either strategy:
// the same seed gives the same trace hash and the same findings, another
// seed another trace; PCT finds the relaxed wait's race too.
func TestSameSeedSameTrace(t *testing.T) {
	p, err := LoadHarness("../examples/kernels/cas_exchange_relaxed_wait.json")
	if err != nil {
		t.Fatal(err)
	}
	src := load(t, p.PTX)
	run := func(strategy string, seed uint64) *Report {
		rep, err := RunProgram(p, src, Options{Worlds: []int{2}, Seeds: 1, FirstSeed: seed, Strategy: strategy, Vars: map[string]Expr{"n": "64"}})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	for _, strategy := range []string{"random", "pct"} {
		a, b, c := run(strategy, 3), run(strategy, 3), run(strategy, 4)
		if a.Runs[0].Trace != b.Runs[0].Trace || len(a.Findings) != len(b.Findings) {
			t.Errorf("%s: seed 3 gave traces %s and %s", strategy, a.Runs[0].Trace, b.Runs[0].Trace)
		}
		if a.Runs[0].Trace == c.Runs[0].Trace {
			t.Errorf("%s: seeds 3 and 4 gave the same trace", strategy)
		}
		if len(a.Findings) == 0 || a.Findings[0].Kind != "race" {
			t.Errorf("%s: no race found: %+v", strategy, a.Findings)
		}
	}
}

// TestJobsGiveTheSameReport: runs made several at a time give the report
// one at a time gives (runs, findings with their first world, seed and
// count, shapes) and call Progress in the same order.
func TestJobsGiveTheSameReport(t *testing.T) {
	p, err := LoadHarness("../examples/kernels/twostage_volatile.json")
	if err != nil {
		t.Fatal(err)
	}
	src := load(t, p.PTX)
	report := func(jobs int) (string, []Run) {
		var progress []Run
		rep, err := RunProgram(p, src, Options{Worlds: []int{2, 3}, Seeds: 3, Vars: map[string]Expr{"n": "64"}, Jobs: jobs,
			Progress: func(r Run) { progress = append(progress, r) }})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, r := range rep.Runs {
			fmt.Fprintf(&b, "run %d %d %s %d %d\n", r.World, r.Seed, r.Trace, r.Steps, r.Findings)
		}
		for _, f := range rep.Findings {
			fmt.Fprintf(&b, "finding %s world %d seed %d schedules %d runs %d\n", f.Title, f.World, f.Seed, f.Schedules, f.Runs)
		}
		fmt.Fprintf(&b, "shapes %v\n", rep.Shapes)
		return b.String(), progress
	}
	one, p1 := report(1)
	four, p4 := report(4)
	if one != four {
		t.Fatalf("one run at a time:\n%s\nfour:\n%s", one, four)
	}
	if !strings.Contains(one, "finding") || len(p1) != 6 || fmt.Sprint(p1) != fmt.Sprint(p4) {
		t.Fatalf("progress one at a time %v, four at a time %v; report:\n%s", p1, p4, one)
	}
}
