package actor

import (
	"cmp"
	"slices"
)

// Helpers for strategies, over the runnable lists a [Scheduler] shows them:
// in ID order, each task showing up at its first step after it started
// (after every task started before it) and never once halted.

// IndexOf is the index of the task numbered id in the ID-ordered list l
// and true, or where it would go and false.
func IndexOf(l []*Task, id int) (int, bool) {
	return slices.BinarySearchFunc(l, id, func(t *Task, id int) int { return cmp.Compare(t.id, id) })
}

// Unseen is the tasks of runnable numbered above seen, the highest ID a
// strategy saw before: the tasks it has not seen yet, in the order they
// started.
func Unseen(runnable []*Task, seen int) []*Task {
	i := len(runnable)
	for i > 0 && runnable[i-1].id > seen {
		i--
	}
	return runnable[i:]
}
