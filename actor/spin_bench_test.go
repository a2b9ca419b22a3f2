package actor

import (
	"fmt"
	"testing"
)

// spinWorkload starts tasks shaped as the lanes of a PTX launch that
// make strong accesses and spin on flags: each of n tasks makes rounds
// accesses, a Yield each, parked some frames deep (as an interpreter
// parks) and recorded in the trace as the simulator records a lane's
// access (a format and typed arguments). The tasks form groups of 8:
// the last of a group sets its group's flag to the round it reached
// and rings the flag's bell; every fourth round, the others wait (a
// WaitBell) until the flag reached their round. It returns the
// workload's flags, for the caller to check once the run is over.
func spinWorkload(s *Scheduler, n, rounds int) []int {
	const group = 8
	flags := make([]int, (n+group-1)/group)
	bells := make([]Bell, len(flags))
	for i := range n {
		g := i / group
		setter := i%group == group-1 || i == n-1
		s.Go(fmt.Sprint("lane", i), func() {
			for r := 1; r <= rounds; r++ {
				deep(8, func() {
					s.Yield("strong")
					s.Recordf("signal", "dev%d %s#%d block %d thread %d ld.acquire %#x", i%4, "kernel", 1, g, i, uint64(0x1000+8*g))
				})
				switch {
				case setter:
					flags[g] = r
					bells[g].Ring()
				case r%4 == 0:
					_ = s.WaitBell("flag", func() bool { return flags[g] >= r }, &bells[g], 0)
					s.Recordf("signal", "dev%d %s#%d block %d thread %d spin on %#x", i%4, "kernel", 1, g, i, uint64(0x1000+8*g))
				}
			}
		})
	}
	return flags
}

// deep calls f depth frames down, each frame holding some words, as
// the lanes of an interpreter call their scheduling points.
func deep(depth int, f func()) int {
	var frame [32]byte
	if depth == 0 {
		f()
		return 0
	}
	frame[depth%32] = byte(depth)
	return deep(depth-1, f) + int(frame[(depth+1)%32])
}

// BenchmarkSpinningLanes runs spinWorkload: a step is a random walk's
// choice among hundreds or thousands of runnable tasks, a hand-off to
// the task chosen and the trace record of its access, with some tasks
// waiting on bells and woken. With 384 tasks the tasks' memory stays in
// the processor's caches; with 4,096 (as the lanes of a launch) the
// task chosen at a step mostly is not.
func BenchmarkSpinningLanes(b *testing.B) {
	for _, size := range []struct{ tasks, rounds int }{{384, 100}, {4096, 25}} {
		b.Run(fmt.Sprintf("tasks=%d", size.tasks), func(b *testing.B) {
			steps := int64(0)
			for b.Loop() {
				s := NewScheduler(Config{Seed: 1})
				flags := spinWorkload(s, size.tasks, size.rounds)
				if err := s.Run(); err != nil {
					b.Fatal(err)
				}
				for g, f := range flags {
					if f != size.rounds {
						b.Fatalf("group %d's flag is %d, want %d", g, f, size.rounds)
					}
				}
				steps += s.Steps()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(steps), "ns/step")
		})
	}
}
