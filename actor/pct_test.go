package actor

import (
	"errors"
	"fmt"
	"testing"
)

// orderingBug runs a toy program with a depth-2 ordering bug: writer sets
// x = 1 and then x = 2; reader observes x observations times and fails when
// it saw 1 every time, which needs the reader to run entirely between the
// writer's two writes (the writer first, then a preemption).
func orderingBug(st Strategy, observations int, spinner bool) (bug bool, steps int64, err error) {
	s := NewScheduler(Config{Strategy: st, MaxSteps: 100000})
	x, seen, done := 0, 0, false
	s.Go("writer", func() {
		x = 1
		s.Yield("between writes")
		x = 2
	})
	s.Go("reader", func() {
		for i := range observations {
			s.Yield(fmt.Sprintf("observe %d", i))
			if x == 1 {
				seen++
			}
		}
		done = true
	})
	if spinner {
		s.Go("spinner", func() {
			for !done {
				s.Yield("spin")
			}
		})
	}
	err = s.Run()
	return seen == observations, s.Steps(), err
}

func TestPCTDeterministic(t *testing.T) {
	hashes := map[string]bool{}
	for seed := uint64(0); seed < 50; seed++ {
		run := func() (string, []int64) {
			p := NewPCT(seed, 3, 40)
			s := NewScheduler(Config{Strategy: p})
			racyWorkload(s)
			if err := s.Run(); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			return s.Trace().Hash(), p.ChangePoints()
		}
		h1, c1 := run()
		h2, c2 := run()
		if h1 != h2 || fmt.Sprint(c1) != fmt.Sprint(c2) {
			t.Fatalf("seed %d: trace %s then %s, change points %v then %v", seed, h1, h2, c1, c2)
		}
		if len(c1) != 2 {
			t.Fatalf("seed %d: depth 3 gave %d change points, want 2", seed, len(c1))
		}
		hashes[h1] = true
	}
	if len(hashes) < 10 {
		t.Fatalf("50 PCT seeds gave only %d distinct schedules", len(hashes))
	}
}

func TestPCTFindsDepthTwoBugBeforeRandomWalk(t *testing.T) {
	const seeds, observations = 400, 16
	first := func(name string, mk func(seed uint64) Strategy) (int, int) {
		firstHit, hits := -1, 0
		for seed := range uint64(seeds) {
			bug, _, err := orderingBug(mk(seed), observations, false)
			if err != nil {
				t.Fatalf("%s seed %d: %v", name, seed, err)
			}
			if bug {
				hits++
				if firstHit < 0 {
					firstHit = int(seed)
				}
			}
		}
		return firstHit, hits
	}
	pctFirst, pctHits := first("pct", func(seed uint64) Strategy { return NewPCT(seed, 2, observations+4) })
	rwFirst, rwHits := first("random", func(seed uint64) Strategy { return NewRandomWalk(seed) })
	t.Logf("pct: first at seed %d, %d hits; random walk: first at seed %d, %d hits (of %d seeds)", pctFirst, pctHits, rwFirst, rwHits, seeds)
	if pctFirst < 0 {
		t.Fatalf("PCT depth 2 never found the depth-2 bug in %d seeds", seeds)
	}
	if rwFirst >= 0 && rwFirst <= pctFirst {
		t.Fatalf("random walk found the bug at seed %d, PCT only at %d", rwFirst, pctFirst)
	}
	if pctHits <= 2*rwHits {
		t.Fatalf("PCT found the bug in %d runs, random walk in %d: want PCT far ahead", pctHits, rwHits)
	}
}

// TestPCTDemotesSpinners: a task spinning on Yield while it waits for
// another would keep the highest priority forever; PCT demotes it, so every
// seed finishes well inside the step bound.
func TestPCTDemotesSpinners(t *testing.T) {
	for seed := range uint64(100) {
		_, steps, err := orderingBug(NewPCT(seed, 2, 40), 16, true)
		if errors.Is(err, ErrStepLimit) {
			t.Fatalf("seed %d: spinner livelocked the search: %v", seed, err)
		}
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if steps > 2000 {
			t.Fatalf("seed %d: %d steps for a 20-step program", seed, steps)
		}
	}
	// Without demotion the same search does livelock on some seed.
	livelocked := false
	for seed := range uint64(100) {
		p := NewPCT(seed, 2, 40)
		p.spin = 1 << 30
		if _, _, err := orderingBug(p, 16, true); errors.Is(err, ErrStepLimit) {
			livelocked = true
			break
		}
	}
	if !livelocked {
		t.Fatal("the spinner never livelocked a PCT without demotion: the test proves nothing")
	}
}

// TestPCTDepthOneIsPriorityOrder: with no change points and no spinning,
// the highest-priority task runs to completion before any other.
func TestPCTDepthOneIsPriorityOrder(t *testing.T) {
	for seed := range uint64(20) {
		s := NewScheduler(Config{Strategy: NewPCT(seed, 1, 100)})
		var order []int
		for i := range 3 {
			s.Go(fmt.Sprintf("t%d", i), func() {
				for j := range 3 {
					s.Yield(fmt.Sprintf("step %d", j))
					order = append(order, i)
				}
			})
		}
		if err := s.Run(); err != nil {
			t.Fatal(err)
		}
		for k := 0; k < len(order); k += 3 {
			if order[k] != order[k+1] || order[k] != order[k+2] {
				t.Fatalf("seed %d: order %v interleaves tasks", seed, order)
			}
		}
	}
}

func TestPortfolioMixesStrategies(t *testing.T) {
	p := DefaultPortfolio(100)
	counts := map[string]int{}
	for seed := range uint64(900) {
		e, err := p.Pick(seed)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := p.Pick(seed)
		if again.Name != e.Name {
			t.Fatalf("seed %d picked %s then %s", seed, e.Name, again.Name)
		}
		counts[e.Name]++
	}
	total := 0
	for _, e := range p {
		total += e.Weight
	}
	for _, e := range p {
		want := 900 * e.Weight / total
		if got := counts[e.Name]; got < want/2 || got > want*3/2 {
			t.Errorf("%s ran %d of 900 seeds, want about %d", e.Name, got, want)
		}
	}
	// The strategy a seed gets is the entry's own for that seed.
	name, st, err := p.New(7)
	if err != nil {
		t.Fatal(err)
	}
	s1 := NewScheduler(Config{Strategy: st})
	racyWorkload(s1)
	if err := s1.Run(); err != nil {
		t.Fatal(err)
	}
	e, _ := p.Pick(7)
	s2 := NewScheduler(Config{Strategy: e.New(7)})
	racyWorkload(s2)
	if err := s2.Run(); err != nil {
		t.Fatal(err)
	}
	if s1.Trace().Hash() != s2.Trace().Hash() {
		t.Fatalf("portfolio seed 7 (%s) is not reproduced by its entry", name)
	}
}

func TestPortfolioRejectsBadEntries(t *testing.T) {
	for _, p := range []Portfolio{
		nil,
		{{Name: "x", Weight: 1}},
		{{Name: "x", Weight: 0, New: func(uint64) Strategy { return NewRandomWalk(0) }}},
	} {
		if _, err := p.Pick(1); err == nil {
			t.Errorf("portfolio %+v: Pick succeeded", p)
		}
	}
}

// scanPCT is PCT as first written: it scans every runnable task at every
// step. TestPCTRankingMatchesScan holds the ranked PCT to its choices.
type scanPCT struct {
	PCT
}

func (p *scanPCT) Next(step int64, runnable []*Task) int {
	best, top := 0, int64(0)
	for i, t := range runnable {
		if t.id >= len(p.prio) {
			p.prio = append(p.prio, make([]int64, t.id+1-len(p.prio))...)
		}
		if p.prio[t.id] == 0 {
			p.prio[t.id] = initialBase + p.rng.Int64N(initialBase)
		}
		if pr := p.prio[t.id]; i == 0 || pr > top {
			best, top = i, pr
		}
	}
	highest := func() int {
		b := 0
		for i, t := range runnable[1:] {
			if p.prio[t.id] > p.prio[runnable[b].id] {
				b = i + 1
			}
		}
		return b
	}
	for p.next < len(p.changes) && p.changes[p.next].step <= step {
		p.prio[runnable[best].id] = p.changes[p.next].prio
		p.next++
		best = highest()
	}
	t := runnable[best]
	if t.id == p.last && t.point == p.lastPt {
		p.repeats++
	} else {
		p.last, p.lastPt, p.repeats = t.id, t.point, 1
	}
	if p.repeats >= p.spin && len(runnable) > 1 {
		p.lowest--
		p.prio[t.id] = p.lowest
		p.repeats = 0
		best = highest()
		t = runnable[best]
		p.last, p.lastPt, p.repeats = t.id, t.point, 1
	}
	return best
}

// TestPCTRankingMatchesScan: the PCT that keeps its tasks ranked chooses
// what a scan of every runnable task chooses, on a workload with spins,
// waits and tasks that start and finish throughout, at depths 1 to 3.
func TestPCTRankingMatchesScan(t *testing.T) {
	run := func(st Strategy) string {
		s := NewScheduler(Config{Strategy: st, MaxSteps: 20000})
		flag := 0
		for i := range 6 {
			s.Go(fmt.Sprintf("w%d", i), func() {
				for k := range 12 {
					if k%3 == 0 {
						s.Go(fmt.Sprintf("c%d.%d", i, k), func() { s.Yield("child") })
					}
					if i == 0 && k%4 == 0 {
						for flag < k {
							s.Yield("spin") // demoted as spinning
						}
					}
					flag++
					s.Yield("work")
				}
			})
		}
		if err := s.Run(); err != nil {
			t.Fatal(err)
		}
		return s.Trace().Hash()
	}
	for seed := range uint64(40) {
		for depth := 1; depth <= 3; depth++ {
			ranked := run(NewPCT(seed, depth, 300))
			scanned := run(&scanPCT{*NewPCT(seed, depth, 300)})
			if ranked != scanned {
				t.Fatalf("seed %d depth %d: trace %s, the scanning PCT's %s", seed, depth, ranked, scanned)
			}
		}
	}
}
