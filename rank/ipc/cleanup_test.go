//go:build linux

package ipc

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperWaitSignal opens two channels of one job (its own pid and another
// id), prints "ready <path> <path> ignored=<signals>" and waits for a
// signal; it fails when none comes. With helperKeep set it turns signal
// cleanup off first.
func helperWaitSignal(opts Options) error {
	if os.Getenv(helperKeep) == "1" {
		SetSignalCleanup(false)
	}
	own, err := Open([]int{os.Getpid()}, opts)
	if err != nil {
		return err
	}
	opts.Pid = fakePids(1)[0]
	other, err := Open([]int{os.Getpid()}, opts)
	if err != nil {
		return err
	}
	var ignored []string
	for _, sig := range exitSignals {
		if signal.Ignored(sig) {
			ignored = append(ignored, fmt.Sprint(int(sig)))
		}
	}
	fmt.Printf("ready %s %s ignored=%s\n", own.Path(), other.Path(), strings.Join(ignored, ","))
	time.Sleep(testTimeout) // a signal ends the process before this returns
	return errors.New("no signal came")
}

// waitSignalChild starts a helper that waits for a signal and returns it
// with its channels' socket paths and the signals it inherited as ignored.
func waitSignalChild(t *testing.T, base string, env ...string) (cmd *exec.Cmd, paths []string, ignored string) {
	t.Helper()
	cmd = helperCmd(t, "wait-signal", base, env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill() // fails harmlessly once it has been waited for
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("helper did not get ready: %v", err)
	}
	f := strings.Fields(line)
	if len(f) != 4 || f[0] != "ready" {
		t.Fatalf("helper printed %q, want ready <path> <path> ignored=...", line)
	}
	return cmd, f[1:3], strings.TrimPrefix(f[3], "ignored=")
}

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Lstat(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

// TestExitSignalRemovesSocketFiles: a process with open channels that gets
// SIGTERM, SIGINT or SIGHUP removes its socket files, and the job
// directory when no other channel is bound in it, and still dies of the
// signal.
func TestExitSignalRemovesSocketFiles(t *testing.T) {
	cases := []struct {
		name string
		sig  syscall.Signal
		peer bool // another process's channel stays bound in the job directory
		keep bool // the child turned signal cleanup off
	}{
		{name: "SIGTERM", sig: syscall.SIGTERM},
		{name: "SIGINT with a peer", sig: syscall.SIGINT, peer: true},
		{name: "SIGHUP", sig: syscall.SIGHUP},
		{name: "SIGTERM with cleanup off", sig: syscall.SIGTERM, keep: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := testOptions(t)
			opts.JobID = "proc"
			var peer *Socket
			if tc.peer {
				peer = openAs(t, os.Getpid(), []int{os.Getpid()}, opts)
			}
			var env []string
			if tc.keep {
				env = append(env, helperKeep+"=1")
			}
			cmd, paths, ignored := waitSignalChild(t, opts.BaseDir, env...)
			if strings.Contains(","+ignored+",", fmt.Sprintf(",%d,", int(tc.sig))) {
				t.Skipf("%v is ignored in this environment (inherited), so it cannot end the helper", tc.sig)
			}
			for _, p := range paths {
				if !exists(t, p) {
					t.Fatalf("socket %s missing while the helper runs", p)
				}
			}
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("helper ended with %v, want death by %v", err, tc.sig)
			}
			if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != tc.sig {
				t.Fatalf("helper ended with status %v, want death by %v", ee, tc.sig)
			}
			dir, err := JobDir(nil, opts)
			if err != nil {
				t.Fatal(err)
			}
			if tc.keep {
				for _, p := range paths {
					if !exists(t, p) {
						t.Fatalf("socket %s removed with cleanup off", p)
					}
				}
				return
			}
			for _, p := range paths {
				if exists(t, p) {
					t.Fatalf("socket %s left behind after %v", p, tc.sig)
				}
			}
			if got := exists(t, dir); got != tc.peer {
				t.Fatalf("job directory exists = %v after %v, want %v (a peer bound in it: %v)", got, tc.sig, tc.peer, tc.peer)
			}
			if peer != nil {
				// The peer's channel is untouched and still receives.
				if err := peer.SendFD(peer.Pid(), -1, []byte("still here")); err != nil {
					t.Fatal(err)
				}
				if _, p, _, err := peer.RecvFD(testTimeout); err != nil || string(p) != "still here" {
					t.Fatalf("the peer's channel after the helper's death: %q, %v", p, err)
				}
			}
		})
	}
}

// registered reports whether s is in the registry and whether the signal
// handler is installed.
func registered(s *Socket) (in, handler bool) {
	openSockets.mu.Lock()
	defer openSockets.mu.Unlock()
	_, in = openSockets.sockets[s]
	return in, openSockets.notify != nil
}

// TestRegistryFollowsOpenSockets: a socket is registered from Open to
// Close, the signal handler is installed while any is registered and
// cleanup is on, and SetSignalCleanup switches it.
func TestRegistryFollowsOpenSockets(t *testing.T) {
	opts := testOptions(t)
	pids := fakePids(2)
	a := openAs(t, pids[0], pids, opts)
	b := openAs(t, pids[1], pids, opts)
	if in, h := registered(a); !in || !h {
		t.Fatalf("open socket: registered %v, handler %v; want both", in, h)
	}
	SetSignalCleanup(false)
	if in, h := registered(a); !in || h {
		t.Fatalf("cleanup off: registered %v, handler %v; want registered without a handler", in, h)
	}
	SetSignalCleanup(true)
	if _, h := registered(a); !h {
		t.Fatal("cleanup back on: no handler")
	}
	a.Close()
	if in, h := registered(a); in || !h {
		t.Fatalf("after closing one of two: registered %v, handler %v; want unregistered, handler kept", in, h)
	}
	b.Close()
	openSockets.mu.Lock()
	left, handler := len(openSockets.sockets), openSockets.notify != nil
	openSockets.mu.Unlock()
	if left == 0 && handler {
		t.Fatal("no socket open, yet the signal handler is installed")
	}
	if in, _ := registered(b); in {
		t.Fatal("closed socket still registered")
	}
}
