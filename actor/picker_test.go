package actor

import (
	"fmt"
	"testing"
)

// nextOnly hides a strategy's Pick: the scheduler then builds every
// step's runnable list and asks Next.
type nextOnly struct{ s Strategy }

func (n nextOnly) Next(step int64, runnable []*Task) int { return n.s.Next(step, runnable) }

// wakingWorkload starts tasks that yield, wait on conditions with and
// without bells, and ring bells, so that steps see ready, loud and
// steady tasks in every mix: the runnable lists a Picker's choice is
// found in without being built.
func wakingWorkload(s *Scheduler) *[]int {
	order := &[]int{}
	var bells [3]Bell
	flags := [3]int{}
	ringing := 6 // tasks that ring, until they finish
	for i := range 24 {
		s.Go(fmt.Sprintf("task%d", i), func() {
			for k := range 6 {
				b := (i + k) % 3
				switch {
				case i%4 == 0:
					flags[b]++
					bells[b].Ring()
				case i%4 == 1:
					want := flags[b]
					_ = s.WaitBell("flag", func() bool { return flags[b] != want || k%2 == 0 || ringing == 0 }, &bells[b], 0)
				case i%4 == 2:
					_ = s.Wait("even", func() bool { return (flags[0]+flags[1]+flags[2])%2 == 0 || k == 5 }, 0)
				}
				s.Yield("step")
				*order = append(*order, i)
			}
			if i%4 == 0 {
				if ringing--; ringing == 0 {
					for b := range bells {
						bells[b].Ring()
					}
				}
			}
		})
	}
	return order
}

// TestPickerChoosesAsNext: a random walk choosing by position (Pick, the
// runnable list never built) gives the same run, seed by seed, as the
// same walk choosing from the list (Next).
func TestPickerChoosesAsNext(t *testing.T) {
	for seed := uint64(0); seed < 100; seed++ {
		run := func(st Strategy) (string, string) {
			s := NewScheduler(Config{Seed: seed, Strategy: st})
			order := wakingWorkload(s)
			if err := s.Run(); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			return s.Trace().Hash(), fmt.Sprint(*order)
		}
		h1, o1 := run(NewRandomWalk(seed))
		h2, o2 := run(nextOnly{NewRandomWalk(seed)})
		if h1 != h2 || o1 != o2 {
			t.Fatalf("seed %d: Pick gave trace %s (order %s), Next %s (order %s)", seed, h1, o1, h2, o2)
		}
	}
}
