//go:build linux

package ipc

import (
	"testing"

	"golang.org/x/sys/unix"
)

// FuzzParseControl: the control-message parser a Socket applies to every
// received datagram never panics, whatever the kernel (or a corrupted
// buffer) hands it, and on success reports credentials only when an
// SCM_CREDENTIALS message parsed. The fds it returns are numbers read from
// the buffer, never opened, so nothing is closed here. The seed corpus is
// in testdata/fuzz/FuzzParseControl.
func FuzzParseControl(f *testing.F) {
	f.Add(unix.UnixRights(3))
	f.Add(unix.UnixRights(3, 4, 5))
	f.Add(unix.UnixCredentials(&unix.Ucred{Pid: 1000, Uid: 1, Gid: 1}))
	f.Add(append(unix.UnixRights(7), unix.UnixCredentials(&unix.Ucred{Pid: 1, Uid: 0, Gid: 0})...))
	f.Fuzz(func(t *testing.T, oob []byte) {
		fds, cred, err := parseControl(oob)
		if err == nil && len(fds) > len(oob)/4 {
			t.Fatalf("%d fds from %d bytes", len(fds), len(oob))
		}
		if cred != nil && len(oob) < unix.CmsgLen(unix.SizeofUcred) {
			t.Fatalf("credentials from %d bytes", len(oob))
		}
	})
}
