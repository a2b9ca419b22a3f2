package fuzz

import (
	"testing"

	"github.com/symmem/symmem/actor"
)

// TestDefaultChoiceHint: the default policy finds the task that ran last
// where the hint says, elsewhere when the list changed before it, and
// falls back to the lowest ID when it is not runnable, whatever the hint.
func TestDefaultChoiceHint(t *testing.T) {
	s := actor.NewScheduler(actor.Config{Seed: 1})
	var ts []*actor.Task
	for range 5 {
		ts = append(ts, s.SpawnLabeled(actor.Label{Kind: actor.ProgramTask}, func() {}))
	}
	last := ts[2].ID()
	for _, c := range []struct {
		name     string
		runnable []*actor.Task
		hint     int
		want     int
	}{
		{"at the hint", ts, 2, 2},
		{"a task before it left", []*actor.Task{ts[0], ts[2], ts[3]}, 2, 1},
		{"a task before it came", ts, 1, 2},
		{"hint past the end", ts[:3], 7, 2},
		{"no hint", ts, -1, 2},
		{"not runnable", []*actor.Task{ts[1], ts[3], ts[4]}, 2, 0},
	} {
		if got := defaultChoice(last, c.runnable, c.hint); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}
