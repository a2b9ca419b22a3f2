package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// interruptedError is the error of a command that a signal stopped after
// it reported what it had done. Its exit status is the shell's for the
// signal: 130 for SIGINT, 143 for SIGTERM.
type interruptedError struct {
	sig  syscall.Signal
	what string // what was stopped, e.g. "fuzz"
}

func (e *interruptedError) Error() string {
	return fmt.Sprintf("%s interrupted by %s", e.what, signalName(e.sig))
}

// ExitCode is the process's exit status for the error.
func (e *interruptedError) ExitCode() int { return 128 + int(e.sig) }

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// interrupts turns the first SIGINT or SIGTERM into the end of a context.
// After the first, the signals' default action is back: a second one ends
// the process at once.
type interrupts struct {
	mu  sync.Mutex
	sig syscall.Signal
}

// notifyInterrupts returns a context that ends at the first SIGINT or
// SIGTERM, the record of which signal it was, and the function that stops
// listening (call it when the command ends).
func notifyInterrupts(parent context.Context) (context.Context, *interrupts, func()) {
	ctx, cancel := context.WithCancel(parent)
	in := &interrupts{}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			signal.Stop(ch)
			in.mu.Lock()
			in.sig, _ = s.(syscall.Signal)
			in.mu.Unlock()
			cancel()
		case <-done:
		}
	}()
	return ctx, in, func() {
		signal.Stop(ch)
		close(done)
		cancel()
	}
}

// err returns the interruptedError of what, when a signal arrived (else nil).
func (in *interrupts) err(what string) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.sig == 0 {
		return nil
	}
	return &interruptedError{sig: in.sig, what: what}
}

// exitOnInterrupt ends the process with the exit status of an interrupted
// command (130 for SIGINT, 143 for SIGTERM), after printing err to
// stderr as main does; any other error it returns as it is.
func exitOnInterrupt(stderr io.Writer, err error) error {
	var ie *interruptedError
	if errors.As(err, &ie) {
		fmt.Fprintln(stderr, "symmem:", err)
		os.Exit(ie.ExitCode())
	}
	return err
}
