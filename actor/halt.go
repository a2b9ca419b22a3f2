package actor

import (
	"errors"
	"fmt"
)

// ErrAborted is returned (wrapped) by Wait in code that runs while
// [Scheduler.Run] unwinds a task that never finished: its deferred calls
// run, but nothing waits any more.
var ErrAborted = errors.New("task aborted at the end of the run")

// Halt stops, for good, every live task that match selects and every task
// started later that it selects, as the threads of a process that died: they
// never run again, and what they did so far stays done. Run returns once
// every task that is not halted has finished; halted tasks are unwound then,
// like any task left over (see [Scheduler.Run]). A halted task that is
// running stops at its next scheduling point.
//
// Halt may be called from a task or from a [Strategy]'s Next (the scheduler
// then skips a halted choice and asks again). Each halted task is recorded
// in the trace (kind "halt") with reason; Halt returns how many live tasks
// it stopped.
func (s *Scheduler) Halt(reason string, match func(*Task) bool) int {
	s.halts = append(s.halts, match)
	n := 0
	for _, t := range s.tasks {
		if t.state != taskDone && !t.halted && match(t) {
			s.halt(t, reason)
			n++
		}
	}
	return n
}

// Halted reports whether t was stopped by [Scheduler.Halt].
func (t *Task) Halted() bool { return t.halted }

func (s *Scheduler) halt(t *Task, reason string) {
	if s.choosing {
		s.haltedInNext = append(s.haltedInNext, t)
	} else {
		s.delist(t)
	}
	t.halted = true
	s.trace.Add(s.steps, t.id, "halt", fmt.Sprintf("%s: %s", t.label.Name, reason))
}

// haltNew halts a task just started, before it is listed as ready, when
// an earlier Halt selects it, and reports whether it did.
func (s *Scheduler) haltNew(t *Task) bool {
	for _, match := range s.halts {
		if match(t) {
			s.halt(t, "started after its halt") // not listed yet: nothing to take off a list
			return true
		}
	}
	return false
}
