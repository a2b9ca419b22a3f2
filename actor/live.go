package actor

import (
	"sync/atomic"
	"time"
)

// Live runs tasks on goroutines against the wall clock. Its zero value is
// not ready; use [NewLive].
type Live struct {
	start time.Time
}

// NewLive returns a live runtime whose clock starts now.
func NewLive() *Live { return &Live{start: time.Now()} }

// Go runs fn on a new goroutine.
func (l *Live) Go(_ string, fn func()) { go fn() }

// Yield does nothing: the Go scheduler interleaves goroutines itself.
func (l *Live) Yield(string) {}

// Wait polls ready with a backoff from 1µs to 1ms until it is true or timeout
// passes (timeout <= 0 waits forever).
func (l *Live) Wait(what string, ready func() bool, timeout time.Duration) error {
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	backoff := time.Microsecond
	for !ready() {
		if timeout > 0 && time.Now().After(deadline) {
			return &TimeoutError{Task: "live", What: what, After: timeout}
		}
		time.Sleep(backoff)
		if backoff < time.Millisecond {
			backoff *= 2
		}
	}
	return nil
}

// WaitBell is Wait: polling asks the condition whatever the bell does.
func (l *Live) WaitBell(what string, ready func() bool, _ *Bell, timeout time.Duration) error {
	return l.Wait(what, ready, timeout)
}

// Sleep sleeps for d.
func (l *Live) Sleep(d time.Duration) { time.Sleep(d) }

// After runs fn on its own goroutine after d unless cancelled first.
func (l *Live) After(_ string, d time.Duration, fn func()) (cancel func()) {
	var stopped atomic.Bool
	t := time.AfterFunc(d, func() {
		if !stopped.Load() {
			fn()
		}
	})
	return func() { stopped.Store(true); t.Stop() }
}

// Now is the wall-clock time since NewLive.
func (l *Live) Now() time.Duration { return time.Since(l.start) }

// Record does nothing: live runs have no trace.
func (l *Live) Record(string, string) {}

// Recordf does nothing: live runs have no trace.
func (l *Live) Recordf(string, string, ...any) {}

// Simulated reports false.
func (l *Live) Simulated() bool { return false }
