package actor

import (
	"fmt"
	"time"
)

// Runtime is what rank programs, services and simulated devices run on. The
// simulator's [Scheduler] and the goroutine-based [Live] implement it.
//
// Wait is the only blocking primitive: it blocks the calling task until ready
// reports true or timeout passes (timeout <= 0 waits forever). In a
// [Scheduler] ready is evaluated by the scheduler while no task runs, so it may
// read shared simulation state freely; in [Live] it is polled from the waiting
// goroutine and must be safe for concurrent use.
type Runtime interface {
	// Go starts a task running fn.
	Go(name string, fn func())
	// Yield marks a scheduling point named point.
	Yield(point string)
	// Wait blocks until ready() is true. It returns a [*TimeoutError] naming
	// what when timeout passes first.
	Wait(what string, ready func() bool, timeout time.Duration) error
	// WaitBell is Wait for a condition that can change only where bell
	// rings: a [Scheduler] asks it again only after a ring; [Live], which
	// polls, ignores the bell.
	WaitBell(what string, ready func() bool, bell *Bell, timeout time.Duration) error
	// Sleep blocks the calling task for d.
	Sleep(d time.Duration)
	// After runs fn in a new task once d has passed, unless the returned
	// cancel function is called first.
	After(name string, d time.Duration, fn func()) (cancel func())
	// Now is the time since the runtime started (virtual in simulation).
	Now() time.Duration
	// Record appends an interaction to the trace (a no-op in Live).
	Record(kind, detail string)
	// Recordf is Record with the detail format applied to args, formatted
	// only when it is shown (see [Trace.Addf] for the argument types).
	Recordf(kind, format string, args ...any)
	// Simulated reports whether this runtime is the deterministic simulator.
	Simulated() bool
}

// TimeoutError reports a Wait that ran out of time.
type TimeoutError struct {
	Task  string        // the waiting task
	What  string        // what it waited for
	After time.Duration // the timeout
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("%s: timed out after %v waiting for %s", e.Task, e.After, e.What)
}
