package memmodel

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// mp is message passing: P0 writes data then a flag, P1 reads the flag then
// the data, with the given semantics.
func mp(flagSt, flagLd Sem, stScope, ldScope Scope, cta1 int) *Program {
	return &Program{
		Init: map[string]int64{"x": 0, "f": 0},
		Threads: []Thread{
			{Name: "P0", Code: []Inst{
				{Op: OpStore, Loc: "x", Args: []Operand{{Imm: 1}}, Scope: Sys},
				{Op: OpStore, Loc: "f", Args: []Operand{{Imm: 1}}, Sem: flagSt, Scope: stScope},
			}},
			{Name: "P1", CTA: cta1, Code: []Inst{
				{Op: OpLoad, Loc: "f", Dst: "r0", Sem: flagLd, Scope: ldScope},
				{Op: OpLoad, Loc: "x", Dst: "r1", Scope: Sys},
			}},
		},
	}
}

var mpObs = []Observable{{Thread: 1, Name: "r0"}, {Thread: 1, Name: "r1"}}

func TestExploreMessagePassing(t *testing.T) {
	stale := []int64{1, 0}
	for _, c := range []struct {
		name       string
		p          *Program
		staleAllow bool
	}{
		{"release/acquire gpu, one CTA", mp(Release, Acquire, GPU, GPU, 0), false},
		{"release/acquire cta, two CTAs", mp(Release, Acquire, CTA, CTA, 1), true},
		{"relaxed flag", mp(Relaxed, Relaxed, Sys, Sys, 0), true},
		{"release, relaxed read", mp(Release, Relaxed, Sys, Sys, 0), true},
	} {
		res, err := Explore(c.p, mpObs, Options{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := slices.ContainsFunc(res.Outcomes, func(o []int64) bool { return slices.Equal(o, stale) })
		if got != c.staleAllow || len(res.Outcomes) < 3 || res.Consistent == 0 || res.Candidates < res.Consistent {
			t.Errorf("%s: stale data allowed = %v, want %v (outcomes %v, %d candidates, %d consistent)",
				c.name, got, c.staleAllow, res.Outcomes, res.Candidates, res.Consistent)
		}
	}
}

func TestExploreCountsCutRuns(t *testing.T) {
	// P0 spins until it reads 1, which nobody writes: every run is cut.
	p := &Program{
		Init: map[string]int64{"f": 0},
		Threads: []Thread{{Name: "P0", Code: []Inst{
			{Op: OpLoad, Loc: "f", Dst: "r0", Sem: Relaxed, Scope: GPU},
			{Op: OpBranch, Cond: "ne", Args: []Operand{{Reg: "r0"}, {Imm: 1}}, Target: 0},
		}}},
	}
	res, err := Explore(p, []Observable{{Thread: 0, Name: "r0"}}, Options{LoopBound: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Outcomes) != 0 || res.CutRuns != 1 {
		t.Fatalf("outcomes %v, %d cut runs; want none and 1", res.Outcomes, res.CutRuns)
	}
}

func TestExploreRefusesBadPrograms(t *testing.T) {
	for _, c := range []struct {
		p    *Program
		obs  []Observable
		want string
	}{
		{&Program{}, nil, "no threads"},
		{&Program{Threads: []Thread{{Name: "P0", Code: []Inst{{Op: OpLoad, Loc: "x", Dst: "r0", Sem: Release, Line: 3}}}}}, nil, "P0 line 3: load cannot be release"},
		{&Program{Threads: []Thread{{Name: "P0", Code: []Inst{{Op: OpAtom, Loc: "x", Dst: "r0", AtomOp: "nand", Sem: Relaxed, Args: []Operand{{Imm: 1}}}}}}}, nil, `unknown atomic operation "nand"`},
		{&Program{Threads: []Thread{{Name: "P0", Code: []Inst{{Op: OpFence, Sem: Relaxed}}}}}, nil, "fence must be sc or acq_rel"},
		{mp(Release, Acquire, GPU, GPU, 0), []Observable{{Thread: -1, Name: "y"}}, `location "y" is not in the program`},
		{mp(Release, Acquire, GPU, GPU, 0), []Observable{{Thread: 5, Name: "r0"}}, "thread 5"},
	} {
		_, err := Explore(c.p, c.obs, Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Explore = %v, want an error containing %q", err, c.want)
		}
	}
}

func TestSimulateIsDeterministicAndSound(t *testing.T) {
	p := mp(Release, Acquire, GPU, GPU, 0)
	exact, err := Explore(p, mpObs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for seed := uint64(0); seed < 100; seed++ {
		a, ok, err := Simulate(p, mpObs, seed, 100)
		if err != nil || !ok {
			t.Fatalf("seed %d: ok %v, %v", seed, ok, err)
		}
		b, _, _ := Simulate(p, mpObs, seed, 100)
		if !slices.Equal(a, b) {
			t.Fatalf("seed %d gave %v then %v", seed, a, b)
		}
		if !slices.ContainsFunc(exact.Outcomes, func(o []int64) bool { return slices.Equal(o, a) }) {
			t.Fatalf("seed %d reached %v, which the model forbids", seed, a)
		}
		seen[fmt.Sprint(a)] = true
	}
	if len(seen) != len(exact.Outcomes) {
		t.Errorf("100 seeds reached %d of the %d allowed outcomes", len(seen), len(exact.Outcomes))
	}
}

func TestExploreRefusesProgramsTooLarge(t *testing.T) {
	// Four threads of ten loads of a location with three values: far too
	// many combinations to enumerate.
	p := &Program{Init: map[string]int64{"x": 0}}
	for i := range 4 {
		th := Thread{Name: fmt.Sprintf("P%d", i), Code: []Inst{{Op: OpStore, Loc: "x", Args: []Operand{{Imm: int64(i + 1)}}, Sem: Relaxed, Scope: Sys}}}
		for k := range 10 {
			th.Code = append(th.Code, Inst{Op: OpLoad, Loc: "x", Dst: fmt.Sprintf("r%d", k), Sem: Relaxed, Scope: Sys})
		}
		p.Threads = append(p.Threads, th)
	}
	_, err := Explore(p, nil, Options{})
	if err == nil || !strings.Contains(err.Error(), "too large for exhaustive exploration") {
		t.Fatalf("Explore = %v, want a refusal", err)
	}
}
