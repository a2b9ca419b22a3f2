package actor

import "math/rand/v2"

// RandomWalk picks uniformly among runnable tasks with a seeded generator.
type RandomWalk struct {
	rng *rand.Rand
}

// NewRandomWalk returns a uniform random-walk strategy seeded with seed.
func NewRandomWalk(seed uint64) *RandomWalk {
	return &RandomWalk{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Next picks a runnable task uniformly at random.
func (r *RandomWalk) Next(step int64, runnable []*Task) int {
	return r.Pick(step, len(runnable))
}

// Pick is [Picker]: a random walk chooses by position alone.
func (r *RandomWalk) Pick(_ int64, n int) int {
	if n == 1 {
		return 0
	}
	return r.rng.IntN(n)
}
