package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/simjob"
)

// Interrupts. A long command runs under a context that the first SIGINT
// or SIGTERM cancels with an [*interruptedError] as its cause (see
// [signalContext]; the other commands keep the default handling, which
// ends the process at once); it stops its work within a second or two
// (on the simulator by halting the simulation, see [simStopper]), prints
// what it has, writes the files it was asked for, and returns the
// interruption, which main turns into exit status 130 (SIGINT) or 143
// (SIGTERM). A second signal ends the process at once.

// interruptedError is the error of a command stopped by a signal.
type interruptedError struct {
	sig syscall.Signal
}

func (e *interruptedError) Error() string {
	return fmt.Sprintf("interrupted by %s", signalName(e.sig))
}

// ExitCode is the shell's convention for a process ended by a signal:
// 128 plus the signal's number (130 for SIGINT, 143 for SIGTERM).
func (e *interruptedError) ExitCode() int { return 128 + int(e.sig) }

// signalName names the signals a command handles.
func signalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

// signalContext returns a context that the first SIGINT or SIGTERM
// cancels, with an [*interruptedError] as its cause. After that signal the
// default handling is back, so a second one ends the process. stop
// releases the signals.
func signalContext(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case s := <-sigs:
			signal.Stop(sigs)
			cancel(&interruptedError{sig: s.(syscall.Signal)})
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		cancel(nil)
		<-done
	}
}

// interruption returns the [*interruptedError] that ended ctx, or nil
// while ctx is not done or ended for another reason.
func interruption(ctx context.Context) *interruptedError {
	var ie *interruptedError
	if errors.As(context.Cause(ctx), &ie) {
		return ie
	}
	return nil
}

// interruptErr returns the interruption that ended ctx as the error of
// what ("fuzz interrupted by SIGINT"), or nil.
func interruptErr(ctx context.Context, what string) error {
	if ie := interruption(ctx); ie != nil {
		return fmt.Errorf("%s %w", what, ie)
	}
	return nil
}

// exitCode is the process's exit status for a command's error: 0 for
// none, the signal's status for an interruption, an [*exitError]'s own
// (symmem merge's), 1 otherwise.
func exitCode(err error) int {
	var ie *interruptedError
	var ee *exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ie):
		return ie.ExitCode()
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	return 1
}

// interruptGrace is how long an interrupted command waits for work that
// cannot be halted (ranks on GPUs) before it reports what it has.
const interruptGrace = time.Second

// runInterruptible runs work and returns its error, or, when ctx is
// interrupted first, stops it: it calls halt (when not nil), waits for
// work at most interruptGrace, and returns the interruption. Work left
// running then ends with the process.
func runInterruptible(ctx context.Context, halt func(), work func() error) error {
	done := make(chan error, 1)
	go func() { done <- work() }()
	select {
	case err := <-done:
		if ie := interruption(ctx); ie != nil {
			return ie // work stopped because of the interruption
		}
		return err
	case <-ctx.Done():
	}
	ie := interruption(ctx)
	if ie == nil {
		return <-done // canceled for another reason: work sees it too
	}
	if halt != nil {
		halt()
	}
	select {
	case <-done:
	case <-time.After(interruptGrace):
	}
	return ie
}

// simStopper halts a simulated job when asked to, and counts its
// scheduling steps for progress reports. [simStopper.adjust] installs it
// in a job's configuration; a stopper serves one job at a time.
type simStopper struct {
	stop  atomic.Bool
	steps atomic.Int64
}

// adjust makes the job's scheduler consult s at every step. The schedule
// is the one the job would have had: the job's own strategy (a random walk
// from its seed by default) still decides every step.
func (s *simStopper) adjust(cfg *simjob.Config) {
	inner := cfg.Strategy
	if inner == nil {
		inner = actor.NewRandomWalk(cfg.Seed)
	}
	w := &stoppingStrategy{inner: inner, s: s}
	cfg.Strategy = w
	if p, ok := inner.(actor.Picker); ok {
		cfg.Strategy = &stoppingPicker{w, p}
	}
	setup := cfg.Setup
	cfg.Setup = func(j simjob.Job) error {
		w.sched = j.Scheduler
		if setup != nil {
			return setup(j)
		}
		return nil
	}
}

// halt asks the job to stop at its next scheduling step.
func (s *simStopper) halt() { s.stop.Store(true) }

// stoppingStrategy is a job's strategy that halts every task once its
// stopper asks for it.
type stoppingStrategy struct {
	inner actor.Strategy
	s     *simStopper
	sched *actor.Scheduler
}

// Next implements actor.Strategy.
func (w *stoppingStrategy) Next(step int64, runnable []*actor.Task) int {
	w.step(step)
	return w.inner.Next(step, runnable)
}

// step notes the step and halts every task once the stopper asks for it.
func (w *stoppingStrategy) step(step int64) {
	w.s.steps.Store(step)
	if w.s.stop.Load() && w.sched != nil {
		w.sched.Halt("interrupted", func(*actor.Task) bool { return true })
	}
}

// stoppingPicker is a stoppingStrategy whose inner strategy chooses by
// position alone, and so does it (actor.Picker: the scheduler then does
// not build each step's runnable list).
type stoppingPicker struct {
	*stoppingStrategy
	inner actor.Picker
}

// Pick implements actor.Picker.
func (w *stoppingPicker) Pick(step int64, n int) int {
	w.step(step)
	return w.inner.Pick(step, n)
}
