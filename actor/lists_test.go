package actor

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// scanChecker is a strategy that checks every runnable list the scheduler
// shows it against a scan of all its tasks (what the ready and blocked
// lists stand for), halts tasks now and then, and walks at random.
type scanChecker struct {
	t   *testing.T
	s   *Scheduler
	rng *rand.Rand
	bad int
}

func (c *scanChecker) Next(step int64, runnable []*Task) int {
	var want []*Task
	for _, t := range c.s.tasks {
		if !t.halted && (t.state == taskReady || (t.state == taskBlocked && t.ready())) {
			want = append(want, t)
		}
	}
	if !slices.Equal(want, runnable) && c.bad == 0 {
		c.bad++
		c.t.Errorf("step %d: runnable %v, a scan of the tasks gives %v", step, ids(runnable), ids(want))
	}
	if c.rng.IntN(40) == 0 {
		victim := runnable[c.rng.IntN(len(runnable))].id
		c.s.Halt("test", func(t *Task) bool { return t.id == victim })
	}
	return c.rng.IntN(len(runnable))
}

func ids(l []*Task) []int {
	out := make([]int, len(l))
	for i, t := range l {
		out[i] = t.id
	}
	return out
}

// TestRunnableListsMatchAScan: the ready and blocked lists the scheduler
// keeps step by step give the runnable set a scan of every task gives,
// through yields, waits that end, waits that time out, tasks started late
// and tasks halted by the strategy and by other tasks.
func TestRunnableListsMatchAScan(t *testing.T) {
	for seed := range uint64(20) {
		c := &scanChecker{t: t, rng: rand.New(rand.NewPCG(seed, 1))}
		s := NewScheduler(Config{Strategy: c})
		c.s = s
		flags := make([]bool, 8)
		for i := range 8 {
			s.Go(fmt.Sprintf("w%d", i), func() {
				for k := range 10 {
					switch (i + k) % 4 {
					case 0:
						s.Yield("work")
					case 1:
						flags[(i+1)%8] = true
						_ = s.Wait("flag", func() bool { return flags[i] }, time.Millisecond)
						flags[i] = false
					case 2:
						s.Go(fmt.Sprintf("w%d.%d", i, k), func() { s.Yield("child") })
					case 3:
						if i == 3 && k == 3 {
							s.Halt("by a task", func(t *Task) bool { return t.Name() == "w5" })
						}
						s.Sleep(time.Microsecond)
					}
				}
			})
		}
		if err := s.Run(); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if s.Steps() < 50 {
			t.Fatalf("seed %d: %d steps, the workload did not run", seed, s.Steps())
		}
	}
}

// TestRemoveAt: removing any element of a task list keeps the others in
// order, whichever side moves, and leaves no pointer to the removed task
// anywhere in the list's array.
func TestRemoveAt(t *testing.T) {
	for n := 1; n <= 6; n++ {
		for i := range n {
			l := make([]*Task, n)
			for k := range l {
				l[k] = &Task{id: k}
			}
			removed := l[i]
			array := slices.Clone(l)
			got := removeAt(array, i)
			want := slices.Delete(slices.Clone(l), i, i+1)
			if !slices.Equal(got, want) {
				t.Fatalf("n %d, i %d: %v, want %v", n, i, ids(got), ids(want))
			}
			if slices.Contains(array, removed) {
				t.Fatalf("n %d, i %d: the list's array still holds the removed task", n, i)
			}
		}
	}
}

// TestIndexOf checks IndexOf against a scan, for every ID below, at and
// above the tasks of lists of every length up to 9 with gaps between IDs.
func TestIndexOf(t *testing.T) {
	for n := range 10 {
		var l []*Task
		for i := range n {
			l = append(l, &Task{id: 3*i + 1})
		}
		for id := -1; id <= 3*n+1; id++ {
			want := 0
			for want < n && l[want].id < id {
				want++
			}
			found := want < n && l[want].id == id
			if got, ok := IndexOf(l, id); got != want || ok != found {
				t.Fatalf("list of %d, id %d: IndexOf = %d, %v; want %d, %v", n, id, got, ok, want, found)
			}
		}
	}
}
