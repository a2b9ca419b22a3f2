package actor

import (
	"fmt"
	"testing"
)

// BenchmarkLaunchLanes runs 32,768 tasks shaped as a launch's lanes:
// each yields, meets the 63 others of its group at a barrier twice (a
// WaitBell that the group's last arrival rings) and finishes, so that
// the ready list of tens of thousands of tasks changes at most steps.
func BenchmarkLaunchLanes(b *testing.B) {
	const lanes, group = 32768, 64
	steps := int64(0)
	for b.Loop() {
		s := NewScheduler(Config{Seed: 1})
		arrived := make([]int, lanes/group)
		bells := make([]Bell, lanes/group)
		for i := range lanes {
			g := i / group
			s.Go(fmt.Sprint("lane", i), func() {
				for round := 1; round <= 2; round++ {
					s.Yield("work")
					if arrived[g]++; arrived[g] == round*group {
						bells[g].Ring()
					}
					_ = s.WaitBell("barrier", func() bool { return arrived[g] >= round*group }, &bells[g], 0)
				}
			})
		}
		if err := s.Run(); err != nil {
			b.Fatal(err)
		}
		steps += s.Steps()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(steps), "ns/step")
}
