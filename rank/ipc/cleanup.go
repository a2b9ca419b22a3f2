//go:build linux

package ipc

import (
	"errors"
	"io/fs"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// exitSignals are the signals whose default action ends a Go program and on
// which open sockets remove their files before the process ends.
var exitSignals = []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP}

// openSockets is the registry of the process's open sockets. While it is
// not empty (and cleanup is enabled), a handler for exitSignals is
// installed: it removes every registered socket's file, and each job
// directory left empty, then ends the process with the signal's default
// action, so the exit status still says which signal killed it.
var openSockets = struct {
	mu       sync.Mutex
	sockets  map[*Socket]struct{}
	disabled bool           // SetSignalCleanup(false) was called
	notify   chan os.Signal // non-nil while the handler is installed
	stop     chan struct{}  // closed to end the handler's goroutine
}{sockets: map[*Socket]struct{}{}}

// SetSignalCleanup sets whether open sockets remove their files when the
// process gets SIGTERM, SIGINT or SIGHUP (the default is on). While it is on
// and a socket is open, the package handles those signals: it removes the
// socket files (and job directories left empty) and then ends the process
// with the signal, as an unhandled signal would. A program that handles
// these signals itself turns it off and closes its sockets from its
// handler. Signals that were ignored when the program started stay ignored.
func SetSignalCleanup(on bool) {
	openSockets.mu.Lock()
	defer openSockets.mu.Unlock()
	openSockets.disabled = !on
	updateHandlerLocked()
}

// registerLocked adds s to the registry. The caller holds openSockets.mu.
func registerLocked(s *Socket) {
	openSockets.sockets[s] = struct{}{}
	updateHandlerLocked()
}

// unregister removes s from the registry.
func unregister(s *Socket) {
	openSockets.mu.Lock()
	defer openSockets.mu.Unlock()
	delete(openSockets.sockets, s)
	updateHandlerLocked()
}

// updateHandlerLocked installs the handler when it is wanted and missing,
// and removes it when it is installed and no longer wanted.
func updateHandlerLocked() {
	want := !openSockets.disabled && len(openSockets.sockets) > 0
	switch {
	case want && openSockets.notify == nil:
		var sigs []os.Signal
		for _, sig := range exitSignals {
			if !signal.Ignored(sig) { // Notify would stop ignoring it
				sigs = append(sigs, sig)
			}
		}
		if len(sigs) == 0 {
			return
		}
		openSockets.notify = make(chan os.Signal, 1)
		openSockets.stop = make(chan struct{})
		signal.Notify(openSockets.notify, sigs...)
		go handleExitSignal(openSockets.notify, openSockets.stop)
	case !want && openSockets.notify != nil:
		signal.Stop(openSockets.notify)
		close(openSockets.stop)
		openSockets.notify, openSockets.stop = nil, nil
	}
}

// handleExitSignal waits for an exit signal, removes the registered
// sockets' files and re-raises the signal with its default action. It
// returns when stop is closed first.
func handleExitSignal(notify <-chan os.Signal, stop <-chan struct{}) {
	select {
	case <-stop:
		return
	case sig := <-notify:
		// Keep the registry locked until the process ends: a socket opened
		// from now on would outlive the cleanup.
		openSockets.mu.Lock()
		removeSocketFilesLocked()
		signal.Reset(sig)
		if s, ok := sig.(syscall.Signal); ok {
			_ = syscall.Kill(os.Getpid(), s)
		}
		// The signal ends the process as soon as it is delivered; should it
		// be blocked or ignored meanwhile, end the process as the shell
		// reports a death by that signal.
		time.Sleep(5 * time.Second)
		code := 1
		if s, ok := sig.(syscall.Signal); ok {
			code = 128 + int(s)
		}
		os.Exit(code)
	}
}

// removeSocketFilesLocked removes every registered socket's file, then
// each of their job directories that is left empty.
func removeSocketFilesLocked() {
	dirs := map[string]bool{}
	for s := range openSockets.sockets {
		if err := os.Remove(s.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			continue // nothing more can be done while the process ends
		}
		dirs[s.dir] = true
	}
	for dir := range dirs {
		_ = unix.Rmdir(dir) // fails while other channels of the job are bound
	}
}
