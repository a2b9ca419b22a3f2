package actor

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
	"time"
)

// mixedWorkload adds to spinWorkload tasks that wait with a timeout,
// sleep, wait without a bell, start tasks and halt one: every kind of
// step a trace records.
func mixedWorkload(s *Scheduler) {
	spinWorkload(s, 40, 12)
	flags := make([]bool, 6)
	for i := range 6 {
		s.Go(fmt.Sprintf("w%d", i), func() {
			for k := range 8 {
				switch (i + k) % 4 {
				case 0:
					s.Yield("work")
				case 1:
					flags[(i+1)%6] = true
					_ = s.Wait("flag", func() bool { return flags[i] }, time.Millisecond)
					flags[i] = false
				case 2:
					s.Go(fmt.Sprintf("w%d.%d", i, k), func() { s.Yield("child") })
				case 3:
					if i == 3 && k == 4 {
						s.Halt("by a task", func(t *Task) bool { return t.Name() == "w5" })
					}
					s.Sleep(time.Microsecond)
				}
				s.Recordf("step", "w%d k%d %s %v", i, k, "x", k%2 == 0)
			}
		})
	}
}

// TestTracesStayTheSame: the trace hashes of fixed workloads, seeds and
// strategies are those the scheduler gave before its steps were made
// cheaper (the lists, the trace records, the hand-off between tasks).
// A change of the scheduler that changes which task runs at a step, or
// what a trace hashes, changes them; such a change must say so and
// update the figures here.
func TestTracesStayTheSame(t *testing.T) {
	cases := []struct {
		name     string
		strategy func(seed uint64) Strategy
		workload func(*Scheduler)
		want     string
	}{
		{"waking/random", func(seed uint64) Strategy { return NewRandomWalk(seed) }, func(s *Scheduler) { wakingWorkload(s) }, "3c5797e25d4e96912a669079ec367a600bb0ee044e49e5e571e68d478a54edf3"},
		{"waking/next", func(seed uint64) Strategy { return nextOnly{NewRandomWalk(seed)} }, func(s *Scheduler) { wakingWorkload(s) }, "3c5797e25d4e96912a669079ec367a600bb0ee044e49e5e571e68d478a54edf3"},
		{"waking/pct", func(seed uint64) Strategy { return NewPCT(seed, 3, 2000) }, func(s *Scheduler) { wakingWorkload(s) }, "569067b2a9f95aed1453a8649a24a2a66b3f8b5c05005c5aada8f273fa7c14bf"},
		{"mixed/random", func(seed uint64) Strategy { return NewRandomWalk(seed) }, mixedWorkload, "1f2983e8473f5d174ba8436b782f0b392f862c2dcde766081063e0e956a621b9"},
		{"mixed/pct", func(seed uint64) Strategy { return NewPCT(seed, 2, 5000) }, mixedWorkload, "dc65ac374f3ef43bf142ee8d8a5475fd952d7c4fea829e6b58b2fbcfe40f5ddb"},
	}
	for _, c := range cases {
		h := sha256.New()
		for seed := range uint64(30) {
			s := NewScheduler(Config{Seed: seed, Strategy: c.strategy(seed)})
			c.workload(s)
			if err := s.Run(); err != nil {
				t.Fatalf("%s, seed %d: %v", c.name, seed, err)
			}
			fmt.Fprintf(h, "%d %s %d\n", seed, s.Trace().Hash(), s.Steps())
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != c.want {
			t.Errorf("%s: the traces of seeds 0-29 hash to %s, want %s", c.name, got, c.want)
		}
	}
}
