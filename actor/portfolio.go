package actor

import (
	"errors"
	"fmt"
)

// PortfolioEntry is one strategy of a [Portfolio]: a name that identifies
// it (as a replay names it), a weight, and how to build it for a seed.
type PortfolioEntry struct {
	Name   string
	Weight int
	New    func(seed uint64) Strategy
}

// Portfolio mixes strategies across seeds: each seed runs one entry, chosen
// from the seed in proportion to the weights, so a search over many seeds
// spends its runs on every entry and any one run is reproduced by its seed
// alone.
type Portfolio []PortfolioEntry

// DefaultPortfolio is the mix the fuzzer uses: a uniform random walk and PCT
// of depths 1, 2 and 3 whose change points are spread over steps (the
// estimated length of a run). Depths 2 and 3 get the most weight: they find
// the ordering bugs a random walk almost never reaches, while the walk keeps
// the schedules varied.
func DefaultPortfolio(steps int64) Portfolio {
	pct := func(d int) func(uint64) Strategy {
		return func(seed uint64) Strategy { return NewPCT(seed, d, steps) }
	}
	return Portfolio{
		{Name: "random", Weight: 3, New: func(seed uint64) Strategy { return NewRandomWalk(seed) }},
		{Name: "pct1", Weight: 1, New: pct(1)},
		{Name: "pct2", Weight: 3, New: pct(2)},
		{Name: "pct3", Weight: 2, New: pct(3)},
	}
}

// Validate reports an empty portfolio, a missing constructor or a weight
// below 1.
func (p Portfolio) Validate() error {
	if len(p) == 0 {
		return errors.New("portfolio: no strategies")
	}
	for i, e := range p {
		if e.New == nil {
			return fmt.Errorf("portfolio: entry %d (%q) has no constructor", i, e.Name)
		}
		if e.Weight < 1 {
			return fmt.Errorf("portfolio: entry %d (%q) has weight %d, want at least 1", i, e.Name, e.Weight)
		}
	}
	return nil
}

// Pick returns the entry that seed runs. The choice depends on the seed
// only (a mix of its bits, so consecutive seeds spread over the entries).
func (p Portfolio) Pick(seed uint64) (PortfolioEntry, error) {
	if err := p.Validate(); err != nil {
		return PortfolioEntry{}, err
	}
	total := 0
	for _, e := range p {
		total += e.Weight
	}
	x := int(mix64(seed) % uint64(total))
	for _, e := range p {
		if x < e.Weight {
			return e, nil
		}
		x -= e.Weight
	}
	return p[len(p)-1], nil // unreachable
}

// New returns the strategy seed runs and its entry's name.
func (p Portfolio) New(seed uint64) (string, Strategy, error) {
	e, err := p.Pick(seed)
	if err != nil {
		return "", nil, err
	}
	return e.Name, e.New(seed), nil
}

// mix64 is splitmix64's finaliser.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
