package actor

import "slices"

// Helpers for strategies, over the runnable lists a [Scheduler] shows them:
// in ID order, each task showing up at its first step after it started
// (after every task started before it) and never once halted.

// IndexOf is the index of the task numbered id in the ID-ordered list l
// and true, or where it would go and false.
func IndexOf(l []*Task, id int) (int, bool) {
	// A binary search written out: through slices.BinarySearchFunc each
	// probe was a call of the comparison (1% of a PTX run's instructions).
	lo, hi := 0, len(l)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if l[m].id < id {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(l) && l[lo].id == id
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

// removeAt removes l[i], keeping the order, and returns the shorter list.
// It moves the elements on the shorter side of i: those after it, as
// slices.Delete does, or those before it, one place up, the list then
// starting one element later in its array. Task lists lose their first
// tasks most often (the highest ranked, the lowest IDs), and every move of
// a pointer costs a write barrier while the collector marks.
func removeAt[T any](l []T, i int) []T {
	if i >= len(l)/2 {
		return slices.Delete(l, i, i+1)
	}
	copy(l[1:i+1], l[:i])
	var zero T
	l[0] = zero
	return l[1:]
}
