//go:build linux

package ipc

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// maxPending bounds the messages a socket keeps for later receives while a
// collective waits for a particular sender.
const maxPending = 64

// maxRecvFDs sizes the control buffer: a message with more fds than this
// arrives truncated, and the kernel discards the rest.
const maxRecvFDs = 8

// Socket is the real [Channel]: a Unix datagram socket bound at
// <job dir>/<pid>.sock. It is safe for concurrent use; concurrent receives
// are served one at a time.
type Socket struct {
	pid     int          // the id this socket is addressed by
	procPid int          // our process id
	uid     int          // our uid
	group   map[int]bool // pids allowed to send to us; read-only
	dir     string
	path    string
	conn    *net.UnixConn
	raw     syscall.RawConn
	sendTO  time.Duration
	closed  atomic.Bool
	once    sync.Once

	recvMu  sync.Mutex // serialises receives; guards pending
	pending []message  // kept for later receives, in arrival order
}

var _ Channel = (*Socket)(nil)

// epoch anchors the clock that socket deadlines are measured on.
var epoch = time.Now()

// Open creates the job directory if needed and binds this process's socket
// in it. group lists the pids allowed to send to the channel: a message is
// accepted only when its sender's kernel-attested uid is ours, the pid the
// sender's channel is addressed by is in group, and the sender's
// kernel-attested pid is that pid (or our own process, which may host
// several channels; see [Options].Pid).
//
// The socket file is removed by [Socket.Close] and, while cleanup on
// signals is on (see [SetSignalCleanup]), when the process gets SIGTERM,
// SIGINT or SIGHUP. A process killed otherwise (SIGKILL, a crash) leaves
// it behind; the next Open for the same pid replaces it.
func Open(group []int, opts Options) (*Socket, error) {
	set, err := groupSet(group)
	if err != nil {
		return nil, fmt.Errorf("ipc open: %w", err)
	}
	pid := opts.Pid
	if pid == 0 {
		pid = os.Getpid()
	}
	if pid < 0 {
		return nil, fmt.Errorf("ipc open: invalid pid %d", pid)
	}
	if opts.SendTimeout < 0 {
		return nil, fmt.Errorf("ipc open pid %d: negative send timeout %v", pid, opts.SendTimeout)
	}
	dir, err := JobDir(group, opts)
	if err != nil {
		return nil, fmt.Errorf("ipc open pid %d: %w", pid, err)
	}
	s := &Socket{
		pid:     pid,
		procPid: os.Getpid(),
		uid:     os.Getuid(),
		group:   set,
		dir:     dir,
		path:    filepath.Join(dir, strconv.Itoa(pid)+".sock"),
		sendTO:  opts.SendTimeout,
	}
	if s.sendTO == 0 {
		s.sendTO = DefaultSendTimeout
	}
	if limit := len(unix.RawSockaddrUnix{}.Path) - 1; len(s.path) > limit {
		return nil, fmt.Errorf("ipc open pid %d: socket path %s is %d bytes, longer than the %d a Unix socket allows (set a shorter temp dir)", pid, s.path, len(s.path), limit)
	}
	// Bind and register under the registry's lock, so an exit signal
	// either finds the socket registered or comes before its file exists.
	openSockets.mu.Lock()
	defer openSockets.mu.Unlock()
	if err := s.bind(); err != nil {
		return nil, fmt.Errorf("ipc open pid %d: %w", pid, err)
	}
	registerLocked(s)
	return s, nil
}

// bind creates the socket, binds it at s.path and wraps it for the Go
// poller. A job directory removed by a peer's Close between creating it and
// binding is created again.
func (s *Socket) bind() error {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	// Credentials must be requested before anyone can send to us.
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PASSCRED, 1); err != nil {
		unix.Close(fd)
		return fmt.Errorf("setsockopt SO_PASSCRED: %w", err)
	}
	for attempt := 0; ; attempt++ {
		if err = ensurePrivateDir(s.dir); err != nil {
			break
		}
		err = unix.Bind(fd, &unix.SockaddrUnix{Name: s.path})
		if errors.Is(err, unix.EADDRINUSE) {
			err = removeStale(s.path)
			if err == nil {
				err = unix.Bind(fd, &unix.SockaddrUnix{Name: s.path})
			}
		}
		if !errors.Is(err, unix.ENOENT) || attempt == 2 {
			break
		}
	}
	if err != nil {
		unix.Close(fd)
		return fmt.Errorf("bind %s: %w", s.path, err)
	}
	fail := func(err error) error {
		unix.Close(fd)
		os.Remove(s.path)
		return err
	}
	if err := os.Chmod(s.path, 0o600); err != nil {
		return fail(fmt.Errorf("socket mode: %w", err))
	}
	f := os.NewFile(uintptr(fd), s.path)
	pc, err := net.FilePacketConn(f) // duplicates fd
	f.Close()
	if err != nil {
		os.Remove(s.path)
		return fmt.Errorf("wrap socket %s: %w", s.path, err)
	}
	uc, ok := pc.(*net.UnixConn)
	if !ok {
		pc.Close()
		os.Remove(s.path)
		return fmt.Errorf("wrap socket %s: got a %T", s.path, pc)
	}
	s.conn = uc
	if s.raw, err = s.conn.SyscallConn(); err != nil {
		s.conn.Close()
		os.Remove(s.path)
		return fmt.Errorf("wrap socket %s: %w", s.path, err)
	}
	return nil
}

// removeStale removes a socket file left behind by a dead process that had
// our pid. A socket that still answers belongs to an open channel and is
// left alone.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("%s exists and is not a socket (mode %v)", path, fi.Mode())
	}
	probe, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("probe socket: %w", err)
	}
	err = unix.Connect(probe, &unix.SockaddrUnix{Name: path})
	unix.Close(probe)
	if err == nil {
		return fmt.Errorf("%s is in use by another open channel with the same pid", path)
	}
	if !errors.Is(err, unix.ECONNREFUSED) {
		return fmt.Errorf("probe %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove stale socket: %w", err)
	}
	return nil
}

// Pid is the pid this socket is addressed by.
func (s *Socket) Pid() int { return s.pid }

// Path is the socket file.
func (s *Socket) Path() string { return s.path }

// Dir is the job directory the socket is bound in.
func (s *Socket) Dir() string { return s.dir }

func (s *Socket) now() time.Duration { return time.Since(epoch) }

func (s *Socket) closeFD(fd int) error { return unix.Close(fd) }

func (s *Socket) sockPath(pid int) string {
	return filepath.Join(s.dir, strconv.Itoa(pid)+".sock")
}

// SendFD sends fd (none when fd is -1) and payload to the channel of
// dstPid. It fails with [ErrNoPeer] when dstPid has no open channel and
// waits at most the send timeout for room in a full receive queue. The
// caller keeps its fd; the receiver gets its own copy.
func (s *Socket) SendFD(dstPid int, fd int, payload []byte) error {
	if err := checkSend(s.pid, dstPid, fd, payload); err != nil {
		return err
	}
	return s.send(dstPid, fd, payload, newDeadline(s.now(), s.sendTO), false)
}

func (s *Socket) sendTo(dst, fd int, payload []byte, d deadline) error {
	return s.send(dst, fd, payload, d, true)
}

// send sends one datagram, retrying while the receiver's queue is full and,
// when waitPeer is set, while the receiver has no socket yet, until d.
func (s *Socket) send(dst, fd int, payload []byte, d deadline, waitPeer bool) error {
	to := &unix.SockaddrUnix{Name: s.sockPath(dst)}
	var oob []byte
	if fd >= 0 {
		oob = unix.UnixRights(fd)
	}
	backoff := 100 * time.Microsecond
	for {
		if s.closed.Load() {
			return fmt.Errorf("ipc pid %d: send to pid %d: %w", s.pid, dst, ErrClosed)
		}
		var serr error
		cerr := s.raw.Control(func(sfd uintptr) {
			for {
				serr = unix.Sendmsg(int(sfd), payload, oob, to, unix.MSG_DONTWAIT)
				if serr != unix.EINTR {
					return
				}
			}
		})
		if cerr != nil {
			return fmt.Errorf("ipc pid %d: send to pid %d: %w (%v)", s.pid, dst, ErrClosed, cerr)
		}
		if serr == nil {
			return nil
		}
		var what string
		switch {
		case errors.Is(serr, unix.EAGAIN):
			what = fmt.Sprintf("room in the receive queue of pid %d", dst)
		case errors.Is(serr, unix.ENOENT) || errors.Is(serr, unix.ECONNREFUSED):
			if !waitPeer {
				return fmt.Errorf("ipc pid %d: send to pid %d: %w (%s: %v)", s.pid, dst, ErrNoPeer, to.Name, serr)
			}
			what = fmt.Sprintf("pid %d to open its channel", dst)
		default:
			return fmt.Errorf("ipc pid %d: send fd %d to pid %d: %w", s.pid, fd, dst, serr)
		}
		if d.expired(s.now()) {
			return &TimeoutError{Pid: s.pid, From: dst, What: what, After: d.total, Err: serr}
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, 20*time.Millisecond)
	}
}

// RecvFD receives the next message from any sender in the group.
func (s *Socket) RecvFD(timeout time.Duration) (int, []byte, int, error) {
	m, err := s.recvFrom(-1, newDeadline(s.now(), timeout), "any message")
	if err != nil {
		return -1, nil, -1, err
	}
	return m.fd, m.payload, m.from, nil
}

func (s *Socket) recvFrom(from int, d deadline, what string) (message, error) {
	s.recvMu.Lock()
	defer s.recvMu.Unlock()
	for {
		if s.closed.Load() {
			return message{}, fmt.Errorf("ipc pid %d: receive %s: %w", s.pid, what, ErrClosed)
		}
		for i, m := range s.pending {
			if from < 0 || m.from == from {
				s.pending = append(s.pending[:i], s.pending[i+1:]...)
				return m, nil
			}
		}
		var dl time.Time
		if !d.forever() {
			dl = epoch.Add(d.at)
		}
		if err := s.conn.SetReadDeadline(dl); err != nil {
			return message{}, fmt.Errorf("ipc pid %d: receive %s: %w", s.pid, what, err)
		}
		m, err := s.recvOne()
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			return message{}, &TimeoutError{Pid: s.pid, From: from, What: what, After: d.total, Err: err}
		case errors.Is(err, net.ErrClosed):
			return message{}, fmt.Errorf("ipc pid %d: receive %s: %w", s.pid, what, ErrClosed)
		case err != nil:
			return message{}, err
		}
		if from < 0 || m.from == from {
			return m, nil
		}
		if len(s.pending) >= maxPending {
			if m.fd >= 0 {
				unix.Close(m.fd)
			}
			return message{}, fmt.Errorf("ipc pid %d: waiting for %s: %d messages from other senders are already held; dropped one from pid %d", s.pid, what, maxPending, m.from)
		}
		s.pending = append(s.pending, m)
	}
}

// recvOne reads one datagram and admits or rejects its sender. It never
// returns with a received fd left open except in the message it returns.
func (s *Socket) recvOne() (message, error) {
	buf := make([]byte, MaxPayload)
	oob := make([]byte, unix.CmsgSpace(unix.SizeofUcred)+unix.CmsgSpace(4*maxRecvFDs))
	var (
		n, oobn, flags int
		from           unix.Sockaddr
		rerr           error
	)
	err := s.raw.Read(func(fd uintptr) bool {
		for {
			n, oobn, flags, from, rerr = unix.Recvmsg(int(fd), buf, oob, unix.MSG_CMSG_CLOEXEC|unix.MSG_DONTWAIT)
			if rerr != unix.EINTR {
				return rerr != unix.EAGAIN
			}
		}
	})
	if err != nil {
		return message{}, err
	}
	if rerr != nil {
		return message{}, fmt.Errorf("ipc pid %d: recvmsg: %w", s.pid, rerr)
	}
	fds, cred, perr := parseControl(oob[:oobn])
	endpoint := s.endpointOf(from)
	reject := func(err error) (message, error) {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return message{}, err
	}
	if reason := s.admit(cred, endpoint); reason != "" {
		e := &PeerRejectedError{Receiver: s.pid, Pid: -1, Uid: -1, Endpoint: endpoint, Reason: reason}
		if cred != nil {
			e.Pid, e.Uid = int(cred.Pid), int(cred.Uid)
		}
		return reject(e)
	}
	switch {
	case perr != nil:
		return reject(fmt.Errorf("ipc pid %d: message from pid %d: %w", s.pid, endpoint, perr))
	case flags&unix.MSG_CTRUNC != 0:
		return reject(fmt.Errorf("ipc pid %d: message from pid %d carried more than %d fds; all were closed", s.pid, endpoint, maxRecvFDs))
	case flags&unix.MSG_TRUNC != 0:
		return reject(fmt.Errorf("ipc pid %d: message from pid %d exceeds the %d-byte payload limit", s.pid, endpoint, MaxPayload))
	case len(fds) > 1:
		return reject(fmt.Errorf("ipc pid %d: message from pid %d carried %d fds, at most 1 is allowed; all were closed", s.pid, endpoint, len(fds)))
	}
	m := message{fd: -1, payload: append([]byte(nil), buf[:n]...), from: endpoint}
	if len(fds) == 1 {
		m.fd = fds[0]
	}
	return m, nil
}

// parseControl extracts the fds and credentials of a control buffer. The
// fds are returned even when it fails, so the caller can close them.
func parseControl(oob []byte) (fds []int, cred *unix.Ucred, err error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, nil, fmt.Errorf("parse control messages: %w", err)
	}
	for i := range msgs {
		m := &msgs[i]
		if m.Header.Level != unix.SOL_SOCKET {
			continue
		}
		switch m.Header.Type {
		case unix.SCM_RIGHTS:
			// ParseUnixRights indexes past its data when the length is not
			// a multiple of 4: parse the whole fds, report the rest.
			if n := len(m.Data) % 4; n != 0 {
				if err == nil {
					err = fmt.Errorf("parse SCM_RIGHTS: %d bytes is not a whole number of fds", len(m.Data))
				}
				m.Data = m.Data[:len(m.Data)-n]
			}
			r, perr := unix.ParseUnixRights(m)
			fds = append(fds, r...)
			if perr != nil && err == nil {
				err = fmt.Errorf("parse SCM_RIGHTS: %w", perr)
			}
		case unix.SCM_CREDENTIALS:
			// ParseUnixCredentials reads a whole Ucred without checking the
			// length: a short message would panic or read past its data.
			if len(m.Data) < unix.SizeofUcred {
				if err == nil {
					err = fmt.Errorf("parse SCM_CREDENTIALS: %d bytes, want %d", len(m.Data), unix.SizeofUcred)
				}
				continue
			}
			c, perr := unix.ParseUnixCredentials(m)
			if perr != nil && err == nil {
				err = fmt.Errorf("parse SCM_CREDENTIALS: %w", perr)
			}
			if perr == nil {
				cred = c
			}
		}
	}
	return fds, cred, err
}

// endpointOf returns the pid a sender's channel is addressed by, from the
// address it is bound at, or -1 when it is not a channel of our job
// directory.
func (s *Socket) endpointOf(from unix.Sockaddr) int {
	sa, ok := from.(*unix.SockaddrUnix)
	if !ok || filepath.Dir(sa.Name) != s.dir {
		return -1
	}
	name, ok := strings.CutSuffix(filepath.Base(sa.Name), ".sock")
	if !ok {
		return -1
	}
	p, err := strconv.Atoi(name)
	if err != nil || p <= 0 || strconv.Itoa(p) != name {
		return -1
	}
	return p
}

// admit returns why a sender is rejected, or "" when it is accepted.
func (s *Socket) admit(cred *unix.Ucred, endpoint int) string {
	switch {
	case cred == nil:
		return "no credentials came with the message"
	case int(cred.Uid) != s.uid:
		return fmt.Sprintf("uid %d is not ours (%d)", cred.Uid, s.uid)
	case endpoint < 0:
		return "the sender is not bound to a channel of this job directory"
	case !s.group[endpoint]:
		return fmt.Sprintf("pid %d is not in the group", endpoint)
	case int(cred.Pid) != endpoint && int(cred.Pid) != s.procPid:
		return fmt.Sprintf("the channel of pid %d is held by pid %d", endpoint, cred.Pid)
	}
	return ""
}

// AllGatherFDs runs the ring all-gather of fds (see [Channel]).
func (s *Socket) AllGatherFDs(rank int, pids []int, fd int, timeout time.Duration) ([]int, error) {
	return allGather(s, rank, pids, fd, timeout)
}

// BroadcastFDs passes src's fd to every rank (see [Channel]). fd is read
// only on src.
func (s *Socket) BroadcastFDs(rank, src int, pids []int, fd int, timeout time.Duration) (int, error) {
	return broadcast(s, rank, src, pids, fd, timeout)
}

// Close closes the socket, removes its file and closes the fds of messages
// not yet received. The job directory is removed when it is left empty.
// Later calls do nothing and return nil.
func (s *Socket) Close() error {
	var err error
	s.once.Do(func() {
		s.closed.Store(true)
		if cerr := s.conn.Close(); cerr != nil {
			err = fmt.Errorf("ipc pid %d: close: %w", s.pid, cerr)
		}
		if rerr := os.Remove(s.path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && err == nil {
			err = fmt.Errorf("ipc pid %d: remove socket: %w", s.pid, rerr)
		}
		s.recvMu.Lock()
		for _, m := range s.pending {
			if m.fd >= 0 {
				unix.Close(m.fd)
			}
		}
		s.pending = nil
		s.recvMu.Unlock()
		// Fails while other channels of the job are still bound; that is fine.
		_ = unix.Rmdir(s.dir)
		// Only now: an exit signal until here still removes the file.
		unregister(s)
	})
	return err
}
