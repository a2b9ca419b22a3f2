//go:build linux

package ipc

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// testTimeout bounds every wait in these tests; it only matters when a test
// is about to fail.
const testTimeout = 20 * time.Second

// testOptions returns options for a fresh job under a short private base
// directory (Unix socket paths are limited to 107 bytes).
func testOptions(t *testing.T) Options {
	t.Helper()
	base, err := os.MkdirTemp("", "ipct")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	return Options{BaseDir: base, JobID: "test"}
}

// fakePids returns n channel ids for in-process channels that are unlikely
// to be real pids (the ids are only names inside the private job directory).
func fakePids(n int) []int {
	pids := make([]int, n)
	for i := range pids {
		pids[i] = 5_000_001 + i
	}
	return pids
}

func openAs(t *testing.T, pid int, group []int, opts Options) *Socket {
	t.Helper()
	opts.Pid = pid
	s, err := Open(group, opts)
	if err != nil {
		t.Fatalf("Open(%d): %v", pid, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func memfd(t testing.TB, name, content string) int {
	t.Helper()
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatalf("memfd_create: %v", err)
	}
	if _, err := unix.Pwrite(fd, []byte(content), 0); err != nil {
		t.Fatalf("write memfd: %v", err)
	}
	return fd
}

func readFD(fd int) (string, error) {
	buf := make([]byte, 256)
	n, err := unix.Pread(fd, buf, 0)
	if err != nil {
		return "", fmt.Errorf("read fd %d: %w", fd, err)
	}
	return string(buf[:n]), nil
}

// openFDs lists the targets of this process's open fds.
func openFDs(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		target, _ := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		out = append(out, target)
	}
	return out
}

func TestSendRecvMemfdSharesTheFile(t *testing.T) {
	opts := testOptions(t)
	pids := fakePids(2)
	a := openAs(t, pids[0], pids, opts)
	b := openAs(t, pids[1], pids, opts)

	fd := memfd(t, "ipc-send", "hello")
	defer unix.Close(fd)
	if err := a.SendFD(b.Pid(), fd, []byte("meta")); err != nil {
		t.Fatal(err)
	}
	got, payload, from, err := b.RecvFD(testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(got)
	if got < 0 || got == fd {
		t.Fatalf("received fd %d, want a new fd (sent %d)", got, fd)
	}
	if from != a.Pid() || string(payload) != "meta" {
		t.Fatalf("from %d payload %q, want %d %q", from, payload, a.Pid(), "meta")
	}
	if s, err := readFD(got); err != nil || s != "hello" {
		t.Fatalf("read through received fd = %q, %v", s, err)
	}
	// Both fds name the same file: a write through one shows through the other.
	if _, err := unix.Pwrite(fd, []byte("HELLO"), 0); err != nil {
		t.Fatal(err)
	}
	if s, _ := readFD(got); s != "HELLO" {
		t.Fatalf("after writing through the sender's fd the receiver reads %q", s)
	}
	flags, err := unix.FcntlInt(uintptr(got), unix.F_GETFD, 0)
	if err != nil || flags&unix.FD_CLOEXEC == 0 {
		t.Fatalf("received fd flags %#x, %v: want close-on-exec", flags, err)
	}
}

func TestSendWithoutFD(t *testing.T) {
	opts := testOptions(t)
	pids := fakePids(2)
	a := openAs(t, pids[0], pids, opts)
	b := openAs(t, pids[1], pids, opts)
	if err := a.SendFD(b.Pid(), -1, []byte("no fd")); err != nil {
		t.Fatal(err)
	}
	fd, payload, from, err := b.RecvFD(testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if fd != -1 || string(payload) != "no fd" || from != a.Pid() {
		t.Fatalf("got fd %d payload %q from %d, want -1 %q %d", fd, payload, from, "no fd", a.Pid())
	}
}

func TestSendRejectsBadInput(t *testing.T) {
	opts := testOptions(t)
	pids := fakePids(2)
	a := openAs(t, pids[0], pids, opts)
	cases := []struct {
		dst, fd int
		payload []byte
		want    string
	}{
		{0, -1, nil, "invalid pid 0"},
		{pids[1], -2, nil, "invalid fd -2"},
		{pids[1], -1, make([]byte, MaxPayload+1), "exceeds"},
	}
	for _, c := range cases {
		err := a.SendFD(c.dst, c.fd, c.payload)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("SendFD(%d, %d, %d bytes) = %v, want an error containing %q", c.dst, c.fd, len(c.payload), err, c.want)
		}
	}
	err := a.SendFD(pids[1], -1, nil) // pids[1] never opened
	if !errors.Is(err, ErrNoPeer) || !strings.Contains(err.Error(), strconv.Itoa(pids[1])) {
		t.Fatalf("send to a pid without a channel = %v, want ErrNoPeer naming %d", err, pids[1])
	}
	b := openAs(t, pids[1], pids, opts)
	if err := a.SendFD(b.Pid(), 1<<20, nil); err == nil || !errors.Is(err, unix.EBADF) {
		t.Fatalf("sending a closed fd = %v, want EBADF", err)
	}
}

func TestRecvTimeoutNamesTheWaiter(t *testing.T) {
	opts := testOptions(t)
	pids := fakePids(2)
	a := openAs(t, pids[0], pids, opts)
	_ = openAs(t, pids[1], pids, opts)
	_, _, _, err := a.RecvFD(10 * time.Millisecond)
	var te *TimeoutError
	if !errors.As(err, &te) || te.Pid != a.Pid() || te.From != -1 {
		t.Fatalf("RecvFD = %v, want a TimeoutError for pid %d", err, a.Pid())
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("ipc pid %d", a.Pid())) || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("timeout error %q does not name pid %d or wrap the deadline", err, a.Pid())
	}

	// A collective names the rank and pid it waited for.
	_, err = a.AllGatherFDs(0, pids, -1, 20*time.Millisecond)
	if !errors.As(err, &te) || te.From != pids[1] {
		t.Fatalf("AllGatherFDs with a silent peer = %v, want a TimeoutError from pid %d", err, pids[1])
	}
	want := fmt.Sprintf("from rank 1 (pid %d)", pids[1])
	if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), fmt.Sprintf("ipc pid %d", a.Pid())) {
		t.Fatalf("collective timeout %q, want it to contain %q and the waiter", err, want)
	}
}

// ringAllGather runs AllGatherFDs on w in-process channels and checks every
// rank's view of every memfd.
func ringAllGather(t *testing.T, socks []*Socket, pids []int) {
	t.Helper()
	w := len(pids)
	errs := make([]error, w)
	var wg sync.WaitGroup
	for r := range w {
		wg.Go(func() {
			errs[r] = func() error {
				fd := memfd(t, "ipc-ring", fmt.Sprintf("rank %d", r))
				defer unix.Close(fd)
				fds, err := socks[r].AllGatherFDs(r, pids, fd, testTimeout)
				if err != nil {
					return err
				}
				if len(fds) != w || fds[r] != fd {
					return fmt.Errorf("rank %d: got %v, want %d entries with own fd %d", r, fds, w, fd)
				}
				for q, f := range fds {
					s, err := readFD(f)
					if err != nil || s != fmt.Sprintf("rank %d", q) {
						return fmt.Errorf("rank %d: entry %d (fd %d) reads %q, %v", r, q, f, s, err)
					}
					if q != r {
						unix.Close(f)
					}
				}
				return nil
			}()
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

func TestAllGatherRingFourRanks(t *testing.T) {
	opts := testOptions(t)
	pids := fakePids(4)
	socks := make([]*Socket, 4)
	for r := range socks {
		socks[r] = openAs(t, pids[r], pids, opts)
	}
	ringAllGather(t, socks, pids)
	ringAllGather(t, socks, pids) // a second round on the same channels
}

func TestAllGatherSingleRankAndBadInput(t *testing.T) {
	opts := testOptions(t)
	pids := fakePids(2)
	a := openAs(t, pids[0], pids, opts)
	fds, err := a.AllGatherFDs(0, pids[:1], 7, testTimeout)
	if err != nil || len(fds) != 1 || fds[0] != 7 {
		t.Fatalf("one-rank all-gather = %v, %v; want [7]", fds, err)
	}
	bad := []struct {
		rank int
		pids []int
		want string
	}{
		{0, nil, "empty pid list"},
		{2, pids, "rank 2 out of range"},
		{1, pids, "this channel is pid"},
		{0, []int{pids[0], pids[0]}, "share pid"},
		{0, []int{pids[0], -3}, "invalid pid -3"},
	}
	for _, b := range bad {
		if _, err := a.AllGatherFDs(b.rank, b.pids, -1, testTimeout); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("AllGatherFDs(%d, %v) = %v, want an error containing %q", b.rank, b.pids, err, b.want)
		}
	}
	if _, err := a.BroadcastFDs(0, 2, pids, -1, testTimeout); err == nil || !strings.Contains(err.Error(), "source rank 2 out of range") {
		t.Errorf("BroadcastFDs with src 2 of 2 = %v", err)
	}
}

func TestBroadcastFourRanks(t *testing.T) {
	opts := testOptions(t)
	pids := fakePids(4)
	socks := make([]*Socket, 4)
	for r := range socks {
		socks[r] = openAs(t, pids[r], pids, opts)
	}
	const src = 2
	srcFD := memfd(t, "ipc-bcast", "from the source")
	defer unix.Close(srcFD)
	got := make([]int, 4)
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for r := range 4 {
		wg.Go(func() {
			fd := -1
			if r == src {
				fd = srcFD
			}
			got[r], errs[r] = socks[r].BroadcastFDs(r, src, pids, fd, testTimeout)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for r, fd := range got {
		if r == src {
			if fd != srcFD {
				t.Fatalf("source got %d, want its own fd %d", fd, srcFD)
			}
			continue
		}
		if s, err := readFD(fd); err != nil || s != "from the source" {
			t.Fatalf("rank %d reads %q, %v", r, s, err)
		}
		unix.Close(fd)
	}
}

// TestInterleavedCollectives runs collectives on overlapping groups back to
// back, so messages for a later collective arrive while an earlier one still
// waits for another sender.
func TestInterleavedCollectives(t *testing.T) {
	opts := testOptions(t)
	pids := fakePids(4)
	socks := make([]*Socket, 4)
	for r := range socks {
		socks[r] = openAs(t, pids[r], pids, opts)
	}
	sub := []int{pids[0], pids[2]}
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for r := range 4 {
		wg.Go(func() {
			errs[r] = func() error {
				fd := memfd(t, "ipc-mix", fmt.Sprintf("rank %d", r))
				defer unix.Close(fd)
				for round := range 3 {
					fds, err := socks[r].AllGatherFDs(r, pids, fd, testTimeout)
					if err != nil {
						return err
					}
					for q, f := range fds {
						if s, _ := readFD(f); s != fmt.Sprintf("rank %d", q) {
							return fmt.Errorf("round %d rank %d: entry %d reads %q", round, r, q, s)
						}
						if q != r {
							unix.Close(f)
						}
					}
					if r%2 == 0 {
						fds, err := socks[r].AllGatherFDs(r/2, sub, fd, testTimeout)
						if err != nil {
							return err
						}
						peer := fds[1-r/2]
						if s, _ := readFD(peer); s != fmt.Sprintf("rank %d", 2-r) {
							return fmt.Errorf("round %d rank %d: subgroup peer reads %q", round, r, s)
						}
						unix.Close(peer)
					}
					b, err := socks[r].BroadcastFDs(r, round, pids, fd, testTimeout)
					if err != nil {
						return err
					}
					if s, _ := readFD(b); s != fmt.Sprintf("rank %d", round) {
						return fmt.Errorf("round %d rank %d: broadcast reads %q", round, r, s)
					}
					if r != round {
						unix.Close(b)
					}
				}
				return nil
			}()
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

func TestMixUpIsDetectedAndFDClosed(t *testing.T) {
	opts := testOptions(t)
	pids := fakePids(2)
	a := openAs(t, pids[0], pids, opts)
	b := openAs(t, pids[1], pids, opts)
	fd := memfd(t, "ipc-mixup", "wrong")
	// A broadcast message arrives where rank 1's all-gather expects rank 0's fd.
	wrong := header{op: opBroadcast, hasFD: true, world: 2, origin: 0, step: 1}
	if err := a.SendFD(b.Pid(), fd, wrong.encode()); err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	before := len(openFDs(t))
	_, err := b.AllGatherFDs(1, pids, -1, testTimeout)
	if err == nil || !strings.Contains(err.Error(), "out of order") {
		t.Fatalf("AllGatherFDs after a stray broadcast message = %v, want an out-of-order error", err)
	}
	if after := len(openFDs(t)); after != before {
		t.Fatalf("%d open fds before, %d after: the mixed-up fd leaked", before, after)
	}
	// The message announcing an fd without one is refused too.
	lying := header{op: opAllGather, hasFD: true, world: 2, origin: 0, step: 1}
	if err := a.SendFD(b.Pid(), -1, lying.encode()); err != nil {
		t.Fatal(err)
	}
	if _, err := b.BroadcastFDs(1, 0, pids, -1, testTimeout); err == nil || !strings.Contains(err.Error(), "out of order") {
		t.Fatalf("BroadcastFDs after an all-gather message = %v", err)
	}
}

func TestSameProcessSenderOutsideGroupIsRejected(t *testing.T) {
	opts := testOptions(t)
	pids := fakePids(2)
	a := openAs(t, pids[0], pids, opts)
	b := openAs(t, pids[1], pids[:1], opts) // only a may send to b
	c := openAs(t, pids[1]+10, pids, opts)  // not in b's group
	fd := memfd(t, "ipc-outsider", "x")
	if err := c.SendFD(b.Pid(), fd, nil); err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	before := len(openFDs(t))
	_, _, _, err := b.RecvFD(testTimeout)
	var pe *PeerRejectedError
	if !errors.As(err, &pe) || pe.Endpoint != c.Pid() || pe.Pid != os.Getpid() || pe.Uid != os.Getuid() {
		t.Fatalf("RecvFD from an outsider = %v, want a PeerRejectedError naming channel %d", err, c.Pid())
	}
	if after := len(openFDs(t)); after != before {
		t.Fatalf("%d open fds before, %d after: the rejected fd leaked", before, after)
	}
	// The group member still gets through afterwards.
	if err := a.SendFD(b.Pid(), -1, []byte("ok")); err != nil {
		t.Fatal(err)
	}
	if _, p, from, err := b.RecvFD(testTimeout); err != nil || from != a.Pid() || string(p) != "ok" {
		t.Fatalf("after the rejection: from %d payload %q err %v", from, p, err)
	}
}

func TestCloseRemovesSocketAndIsIdempotent(t *testing.T) {
	opts := testOptions(t)
	pids := fakePids(3)
	a := openAs(t, pids[0], pids, opts)
	b := openAs(t, pids[1], pids, opts)
	c := openAs(t, pids[2], pids, opts)
	// A message from c arrives while b's collective waits for a: b keeps it
	// (with its fd) for a later receive.
	fd := memfd(t, "ipc-pending", "pending")
	if err := c.SendFD(b.Pid(), fd, nil); err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	var te *TimeoutError
	if _, err := b.AllGatherFDs(1, pids[:2], -1, 20*time.Millisecond); !errors.As(err, &te) {
		t.Fatalf("AllGatherFDs with a silent rank 0 = %v, want a timeout", err)
	}
	if _, err := os.Lstat(b.Path()); err != nil {
		t.Fatalf("socket file missing while open: %v", err)
	}
	before := len(openFDs(t))
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(b.Path()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("socket file after Close: %v, want it removed", err)
	}
	// Close released the socket and the kept memfd.
	if after := len(openFDs(t)); after != before-2 {
		t.Fatalf("%d open fds before Close, %d after; want 2 fewer (socket and kept fd)", before, after)
	}
	for _, target := range openFDs(t) {
		if strings.Contains(target, "ipc-pending") {
			t.Fatalf("the kept memfd is still open: %s", target)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if _, _, _, err := b.RecvFD(time.Millisecond); !errors.Is(err, ErrClosed) {
		t.Fatalf("RecvFD after Close = %v, want ErrClosed", err)
	}
	if err := b.SendFD(a.Pid(), -1, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("SendFD after Close = %v, want ErrClosed", err)
	}
	if err := a.SendFD(b.Pid(), -1, nil); !errors.Is(err, ErrNoPeer) {
		t.Fatalf("SendFD to a closed channel = %v, want ErrNoPeer", err)
	}
	// The last channel out removes the job directory.
	a.Close()
	if _, err := os.Lstat(a.Dir()); err != nil {
		t.Fatalf("job directory gone while c is open: %v", err)
	}
	c.Close()
	if _, err := os.Lstat(a.Dir()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("job directory after the last Close: %v, want it removed", err)
	}
}

func TestCloseUnblocksReceiver(t *testing.T) {
	opts := testOptions(t)
	pids := fakePids(1)
	a := openAs(t, pids[0], pids, opts)
	done := make(chan error, 1)
	go func() {
		_, _, _, err := a.RecvFD(0)
		done <- err
	}()
	// Close may come before or during the receive; either way it ends.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("blocked RecvFD ended with %v, want ErrClosed", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("RecvFD still blocked after Close")
	}
}

func TestDirectoryAndSocketModes(t *testing.T) {
	opts := testOptions(t)
	pids := fakePids(1)
	a := openAs(t, pids[0], pids, opts)
	fi, err := os.Lstat(a.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("job directory mode %v, want drwx------", fi.Mode())
	}
	want := filepath.Join(opts.BaseDir, fmt.Sprintf("symmem-ipc-%d-test", os.Getuid()))
	if a.Dir() != want {
		t.Fatalf("job directory %s, want %s", a.Dir(), want)
	}
	si, err := os.Lstat(a.Path())
	if err != nil {
		t.Fatal(err)
	}
	if si.Mode().Type() != fs.ModeSocket || si.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v, want srw-------", si.Mode())
	}
	if a.Path() != filepath.Join(a.Dir(), strconv.Itoa(pids[0])+".sock") {
		t.Fatalf("socket path %s", a.Path())
	}
}

func TestUnsafeJobDirectoryIsRefused(t *testing.T) {
	opts := testOptions(t)
	pids := fakePids(1)
	dir, err := JobDir(pids, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	opts.Pid = pids[0]
	if _, err := Open(pids, opts); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Fatalf("Open with a 0755 job directory = %v, want a refusal", err)
	}
	os.Remove(dir)
	target := t.TempDir()
	os.Chmod(target, 0o700)
	if err := os.Symlink(target, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(pids, opts); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("Open with a symlinked job directory = %v, want a refusal", err)
	}
	os.Remove(dir)
	if _, err := Open(pids, Options{BaseDir: opts.BaseDir, JobID: "../escape"}); err == nil || !strings.Contains(err.Error(), "invalid job id") {
		t.Fatalf("Open with job id ../escape = %v", err)
	}
	long := Options{BaseDir: opts.BaseDir + "/" + strings.Repeat("d", 100), JobID: "x", Pid: pids[0]}
	if _, err := Open(pids, long); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("Open with a too long path = %v", err)
	}
	if _, err := Open(nil, opts); err == nil || !strings.Contains(err.Error(), "empty group") {
		t.Fatalf("Open with no group = %v", err)
	}
}

func TestStaleSocketIsReplacedButLiveOneIsNot(t *testing.T) {
	opts := testOptions(t)
	pids := fakePids(1)
	a := openAs(t, pids[0], pids, opts)
	opts.Pid = pids[0]
	if _, err := Open(pids, opts); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second Open of a live pid = %v, want an in-use error", err)
	}
	// Leave a bound socket file behind with nobody reading it.
	path := a.Path()
	a.Close()
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := ensurePrivateDir(filepath.Dir(path)); err != nil {
		t.Fatal(err)
	}
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	b, err := Open(pids, opts)
	if err != nil {
		t.Fatalf("Open over a stale socket file: %v", err)
	}
	defer b.Close()
	if err := b.SendFD(b.Pid(), -1, []byte("self")); err != nil {
		t.Fatal(err)
	}
	if _, p, _, err := b.RecvFD(testTimeout); err != nil || string(p) != "self" {
		t.Fatalf("the replacing socket receives %q, %v", p, err)
	}
}

func TestTempDirPrecedence(t *testing.T) {
	vars := []string{"TMPDIR", "TMP", "TEMP", "TEMPDIR"}
	for _, v := range vars {
		t.Setenv(v, "/from-"+strings.ToLower(v))
	}
	for _, v := range vars {
		if got := TempDir(); got != "/from-"+strings.ToLower(v) {
			t.Fatalf("TempDir() = %q with %s set, want it", got, v)
		}
		t.Setenv(v, "") // empty counts as unset
	}
	if got := TempDir(); got != "/tmp" {
		t.Fatalf("TempDir() = %q with none set, want /tmp", got)
	}
	t.Setenv("TEMP", "/only-temp")
	opts := Options{JobID: "j"}
	dir, err := JobDir([]int{1}, opts)
	if err != nil || dir != fmt.Sprintf("/only-temp/symmem-ipc-%d-j", os.Getuid()) {
		t.Fatalf("JobDir = %q, %v", dir, err)
	}
}

func TestJobIDDefaults(t *testing.T) {
	t.Setenv(JobEnv, "")
	a := JobID([]int{30, 10, 20}, Options{})
	if b := JobID([]int{10, 20, 30, 20}, Options{}); a != b {
		t.Fatalf("job id depends on group order or duplicates: %s vs %s", a, b)
	}
	if c := JobID([]int{10, 20, 31}, Options{}); c == a {
		t.Fatalf("different groups share job id %s", a)
	}
	if err := checkJobID(a); err != nil {
		t.Fatalf("derived job id %q is invalid: %v", a, err)
	}
	t.Setenv(JobEnv, "from-env")
	if got := JobID([]int{10}, Options{}); got != "from-env" {
		t.Fatalf("JobID with %s set = %q", JobEnv, got)
	}
	if got := JobID([]int{10}, Options{JobID: "explicit"}); got != "explicit" {
		t.Fatalf("JobID with an explicit id = %q", got)
	}
}

// Helper processes: the test binary re-executed with helperEnv set.
const (
	helperEnv  = "SYMMEM_IPC_TEST_HELPER"
	helperBase = "SYMMEM_IPC_TEST_BASE"
	helperRank = "SYMMEM_IPC_TEST_RANK"
	helperDst  = "SYMMEM_IPC_TEST_DST"
	helperAs   = "SYMMEM_IPC_TEST_AS"  // the pid the helper's channel is addressed by
	helperUID  = "SYMMEM_IPC_TEST_UID" // the uid the helper switches to
	helperKeep = "SYMMEM_IPC_TEST_KEEP_FILES"
)

// TestHelperProcess is not a test: it is the body of the helper processes.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("helper process body; runs only when re-executed by another test")
	}
	if err := helperMain(mode); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func helperMain(mode string) error {
	opts := Options{BaseDir: os.Getenv(helperBase), JobID: "proc"}
	switch mode {
	case "allgather":
		rank, err := strconv.Atoi(os.Getenv(helperRank))
		if err != nil {
			return err
		}
		line, err := bufio.NewReader(os.Stdin).ReadString('\n')
		if err != nil {
			return fmt.Errorf("read pids: %w", err)
		}
		var pids []int
		for _, f := range strings.Fields(line) {
			p, err := strconv.Atoi(f)
			if err != nil {
				return err
			}
			pids = append(pids, p)
		}
		s, err := Open(pids, opts)
		if err != nil {
			return err
		}
		defer s.Close()
		fd, err := unix.MemfdCreate("ipc-proc", unix.MFD_CLOEXEC)
		if err != nil {
			return err
		}
		if _, err := unix.Pwrite(fd, []byte(fmt.Sprintf("made by pid %d", os.Getpid())), 0); err != nil {
			return err
		}
		fds, err := s.AllGatherFDs(rank, pids, fd, testTimeout)
		if err != nil {
			return err
		}
		for q, f := range fds {
			content, err := readFD(f)
			if err != nil {
				return err
			}
			fmt.Printf("got %d: %s\n", q, content)
		}
		return nil
	case "intruder":
		dst, err := strconv.Atoi(os.Getenv(helperDst))
		if err != nil {
			return err
		}
		s, err := Open([]int{dst}, opts)
		if err != nil {
			return err
		}
		defer s.Close()
		fd, err := unix.MemfdCreate("ipc-intruder", unix.MFD_CLOEXEC)
		if err != nil {
			return err
		}
		return s.SendFD(dst, fd, []byte("intruder"))
	case "impostor":
		return helperImpostor(opts)
	case "other-uid":
		return helperOtherUID(opts)
	case "wait-signal":
		return helperWaitSignal(opts)
	}
	return fmt.Errorf("unknown helper mode %q", mode)
}

func helperCmd(t *testing.T, mode, base string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, helperBase+"="+base)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	return cmd
}

func TestAllGatherAcrossProcesses(t *testing.T) {
	base := testOptions(t).BaseDir
	const w = 3
	cmds := make([]*exec.Cmd, w)
	outs := make([]strings.Builder, w)
	stdins := make([]interface {
		Write([]byte) (int, error)
		Close() error
	}, w)
	pids := make([]string, w)
	for r := range w {
		cmds[r] = helperCmd(t, "allgather", base, fmt.Sprintf("%s=%d", helperRank, r))
		cmds[r].Stdout = &outs[r]
		in, err := cmds[r].StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdins[r] = in
		if err := cmds[r].Start(); err != nil {
			t.Fatal(err)
		}
		pids[r] = strconv.Itoa(cmds[r].Process.Pid)
	}
	line := strings.Join(pids, " ") + "\n"
	for r := range w {
		if _, err := stdins[r].Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
		stdins[r].Close()
	}
	for r := range w {
		if err := cmds[r].Wait(); err != nil {
			t.Fatalf("helper rank %d: %v", r, err)
		}
	}
	for r := range w {
		var want strings.Builder
		for q := range w {
			fmt.Fprintf(&want, "got %d: made by pid %s\n", q, pids[q])
		}
		if got := outs[r].String(); !strings.Contains(got, want.String()) {
			t.Fatalf("helper rank %d printed\n%s\nwant\n%s", r, got, want.String())
		}
	}
}

func TestPeerOutsideGroupIsRejectedAcrossProcesses(t *testing.T) {
	opts := testOptions(t)
	opts.JobID = "proc"
	recv, err := Open([]int{os.Getpid()}, opts) // nobody else may send
	if err != nil {
		t.Fatal(err)
	}
	defer recv.Close()
	cmd := helperCmd(t, "intruder", opts.BaseDir, fmt.Sprintf("%s=%d", helperDst, recv.Pid()))
	if err := cmd.Run(); err != nil {
		t.Fatalf("intruder helper: %v", err)
	}
	intruder := cmd.Process.Pid
	before := openFDs(t)
	_, _, _, err = recv.RecvFD(testTimeout)
	after := openFDs(t)
	var pe *PeerRejectedError
	if !errors.As(err, &pe) {
		t.Fatalf("RecvFD from a pid outside the group = %v, want a PeerRejectedError", err)
	}
	if pe.Pid != intruder || pe.Endpoint != intruder || pe.Uid != os.Getuid() || pe.Receiver != recv.Pid() {
		t.Fatalf("rejection %+v, want sender pid %d uid %d", pe, intruder, os.Getuid())
	}
	if !strings.Contains(err.Error(), strconv.Itoa(intruder)) {
		t.Fatalf("rejection %q does not name pid %d", err, intruder)
	}
	if len(after) != len(before) {
		t.Fatalf("%d open fds before RecvFD, %d after: the intruder's fd leaked", len(before), len(after))
	}
	for _, target := range after {
		if strings.Contains(target, "ipc-intruder") {
			t.Fatalf("the intruder's memfd is open here: %s", target)
		}
	}
}

// helperImpostor binds a channel addressed by the pid in helperAs (not its
// own) and sends an fd from it to helperDst.
func helperImpostor(opts Options) error {
	dst, err := strconv.Atoi(os.Getenv(helperDst))
	if err != nil {
		return err
	}
	if opts.Pid, err = strconv.Atoi(os.Getenv(helperAs)); err != nil {
		return err
	}
	s, err := Open([]int{dst}, opts)
	if err != nil {
		return err
	}
	defer s.Close()
	fd, err := unix.MemfdCreate("ipc-impostor", unix.MFD_CLOEXEC)
	if err != nil {
		return err
	}
	return s.SendFD(dst, fd, []byte("impostor"))
}

// helperOtherUID waits for a line on stdin (the receiver is open by then),
// binds a socket at its own channel's address in the job directory,
// connects it to the channel of helperDst, switches to the uid in
// helperUID and sends an fd: everything about the message is right except
// the sender's uid.
func helperOtherUID(opts Options) error {
	dst, err := strconv.Atoi(os.Getenv(helperDst))
	if err != nil {
		return err
	}
	uid, err := strconv.Atoi(os.Getenv(helperUID))
	if err != nil {
		return err
	}
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return fmt.Errorf("wait for the receiver: %w", err)
	}
	dir, err := JobDir([]int{dst}, opts)
	if err != nil {
		return err
	}
	sock, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(sock)
	self := filepath.Join(dir, strconv.Itoa(os.Getpid())+".sock")
	if err := unix.Bind(sock, &unix.SockaddrUnix{Name: self}); err != nil {
		return fmt.Errorf("bind %s: %w", self, err)
	}
	// The job directory is closed to the other uid: connect and clean up
	// while still allowed. The bound name stays the socket's address.
	err = unix.Connect(sock, &unix.SockaddrUnix{Name: filepath.Join(dir, strconv.Itoa(dst)+".sock")})
	os.Remove(self)
	if err != nil {
		return fmt.Errorf("connect to pid %d: %w", dst, err)
	}
	fd, err := unix.MemfdCreate("ipc-other-uid", unix.MFD_CLOEXEC)
	if err != nil {
		return err
	}
	if err := syscall.Setuid(uid); err != nil {
		return fmt.Errorf("setuid %d: %w", uid, err)
	}
	if os.Getuid() != uid {
		return fmt.Errorf("uid is %d after setuid %d", os.Getuid(), uid)
	}
	return unix.Sendmsg(sock, []byte("other uid"), unix.UnixRights(fd), nil, 0)
}

// TestImpostorPidIsRejectedAcrossProcesses: a process that binds the
// channel of a pid in the group, but is not that process, is rejected by
// its kernel-attested pid, and the fd it sent is closed.
func TestImpostorPidIsRejectedAcrossProcesses(t *testing.T) {
	opts := testOptions(t)
	opts.JobID = "proc"
	victim := fakePids(1)[0] // a group member the impostor pretends to be
	recv, err := Open([]int{victim}, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer recv.Close()
	cmd := helperCmd(t, "impostor", opts.BaseDir, fmt.Sprintf("%s=%d", helperDst, recv.Pid()), fmt.Sprintf("%s=%d", helperAs, victim))
	if err := cmd.Run(); err != nil {
		t.Fatalf("impostor helper: %v", err)
	}
	impostor := cmd.Process.Pid
	before := len(openFDs(t))
	_, _, _, err = recv.RecvFD(testTimeout)
	var pe *PeerRejectedError
	if !errors.As(err, &pe) {
		t.Fatalf("RecvFD from an impostor = %v, want a PeerRejectedError", err)
	}
	if pe.Pid != impostor || pe.Endpoint != victim || pe.Uid != os.Getuid() {
		t.Fatalf("rejection %+v, want sender pid %d on the channel of pid %d", pe, impostor, victim)
	}
	if want := fmt.Sprintf("the channel of pid %d is held by pid %d", victim, impostor); pe.Reason != want {
		t.Fatalf("rejection reason %q, want %q", pe.Reason, want)
	}
	if after := len(openFDs(t)); after != before {
		t.Fatalf("%d open fds before RecvFD, %d after: the impostor's fd leaked", before, after)
	}
}

// TestOtherUIDIsRejectedAcrossProcesses: a message from a process of
// another uid is rejected even though it comes from a group member's
// address and pid, and the fd it carried is closed. Switching uid needs
// root.
func TestOtherUIDIsRejectedAcrossProcesses(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the sender process switches to another uid")
	}
	other := 65534 // nobody
	if os.Getuid() == other {
		other--
	}
	opts := testOptions(t)
	opts.JobID = "proc"
	cmd := helperCmd(t, "other-uid", opts.BaseDir, fmt.Sprintf("%s=%d", helperDst, os.Getpid()), fmt.Sprintf("%s=%d", helperUID, other))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sender := cmd.Process.Pid
	recv, err := Open([]int{sender}, opts) // the sender is a group member
	if err != nil {
		t.Fatal(err)
	}
	defer recv.Close()
	if _, err := stdin.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("other-uid helper: %v", err)
	}
	before := openFDs(t)
	_, _, _, err = recv.RecvFD(testTimeout)
	after := openFDs(t)
	var pe *PeerRejectedError
	if !errors.As(err, &pe) {
		t.Fatalf("RecvFD from uid %d = %v, want a PeerRejectedError", other, err)
	}
	if pe.Uid != other || pe.Pid != sender || pe.Endpoint != sender || pe.Receiver != recv.Pid() {
		t.Fatalf("rejection %+v, want uid %d pid %d on its own channel", pe, other, sender)
	}
	if want := fmt.Sprintf("uid %d is not ours (%d)", other, os.Getuid()); pe.Reason != want {
		t.Fatalf("rejection reason %q, want %q", pe.Reason, want)
	}
	if len(after) != len(before) {
		t.Fatalf("%d open fds before RecvFD, %d after: the fd from uid %d leaked", len(before), len(after), other)
	}
	for _, target := range after {
		if strings.Contains(target, "ipc-other-uid") {
			t.Fatalf("the memfd from uid %d is open here: %s", other, target)
		}
	}
}
