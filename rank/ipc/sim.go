package ipc

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/symmem/symmem/actor"
)

// FDSpace is the simulated per-process fd tables (implemented by the simulator device world).
type FDSpace interface {
	// Transfer duplicates fd of process fromPid into process toPid's table and returns the new number.
	Transfer(fromPid, fd, toPid int) (int, error)
	// Close closes fd in pid's table.
	Close(pid, fd int) error
}

// SimNetwork connects the [SimChannel]s of simulated processes. Messages
// queue per receiving pid; an fd moves into the receiver's table (through
// [FDSpace].Transfer) when it is sent, as SCM_RIGHTS does. Every send,
// receive, rejection and close is recorded in the runtime's trace under the
// kind "ipc".
//
// Its state is guarded by a mutex that is never held across a wait, so it
// also works on the goroutine-based [actor.Live] runtime.
type SimNetwork struct {
	rt  actor.Runtime
	fds FDSpace

	mu     sync.Mutex
	open   map[int]*SimChannel // open channels by pid
	faults func(SimMessage) SimFault
}

// SimMessage is a message a [SimNetwork] is about to queue, as its fault
// hook sees it.
type SimMessage struct {
	From, To int    // sender and receiver pids
	FD       int    // the fd as numbered in the receiver's table; -1 for none
	Payload  []byte // read-only
}

// SimFault is what a [SimNetwork]'s fault hook does to one message.
type SimFault int

// The faults a hook may inject.
const (
	// Deliver queues the message as sent.
	Deliver SimFault = iota
	// LoseMessage drops the message; its fd is closed. The sender is not told.
	LoseMessage
	// LoseFD delivers the payload without its fd, which is closed (as a
	// truncated SCM_RIGHTS control message).
	LoseFD
	// WrongFD delivers the payload with an fd number that is not open in
	// the receiver's table; the real fd is closed.
	WrongFD
)

func (f SimFault) String() string {
	switch f {
	case Deliver:
		return "deliver"
	case LoseMessage:
		return "lose message"
	case LoseFD:
		return "lose fd"
	case WrongFD:
		return "wrong fd"
	}
	return fmt.Sprintf("SimFault(%d)", int(f))
}

// wrongFDBase offsets the fd number a WrongFD fault delivers, far above any
// fd a simulated process has open.
const wrongFDBase = 1 << 20

// SetFaults installs fn, which decides the fate of every message sent on the
// network before it is queued (nil removes it). fn runs in the sending task
// and may block it (a delay). Every fault other than Deliver is recorded in
// the trace. It exists for fault injection in simulations.
func (n *SimNetwork) SetFaults(fn func(SimMessage) SimFault) {
	n.mu.Lock()
	n.faults = fn
	n.mu.Unlock()
}

// NewSimNetwork returns a network with no channels, running on rt and
// moving fds within fds.
func NewSimNetwork(rt actor.Runtime, fds FDSpace) *SimNetwork {
	return &SimNetwork{rt: rt, fds: fds, open: make(map[int]*SimChannel)}
}

// SimChannel is a simulated process's [Channel] on a [SimNetwork]. The
// sender of each message is checked against the receiver's group just as
// [Socket] checks kernel credentials.
type SimChannel struct {
	n     *SimNetwork
	pid   int
	group map[int]bool // read-only

	queue  []message // guarded by n.mu
	closed bool      // guarded by n.mu
}

var _ Channel = (*SimChannel)(nil)

// Open gives the simulated process pid a channel that accepts messages from
// the pids in group. A pid has at most one open channel.
func (n *SimNetwork) Open(pid int, group []int) (*SimChannel, error) {
	if n == nil || n.rt == nil || n.fds == nil {
		return nil, errors.New("sim ipc open: network has no runtime or fd space (use NewSimNetwork)")
	}
	if pid <= 0 {
		return nil, fmt.Errorf("sim ipc open: invalid pid %d", pid)
	}
	set, err := groupSet(group)
	if err != nil {
		return nil, fmt.Errorf("sim ipc open pid %d: %w", pid, err)
	}
	c := &SimChannel{n: n, pid: pid, group: set}
	n.mu.Lock()
	_, dup := n.open[pid]
	if !dup {
		n.open[pid] = c
	}
	n.mu.Unlock()
	if dup {
		return nil, fmt.Errorf("sim ipc open: pid %d already has an open channel", pid)
	}
	n.rt.Record("ipc", fmt.Sprintf("open %d", pid))
	return c, nil
}

// Pid is the simulated pid of the channel.
func (c *SimChannel) Pid() int { return c.pid }

func (c *SimChannel) now() time.Duration { return c.n.rt.Now() }

func (c *SimChannel) closeFD(fd int) error { return c.n.fds.Close(c.pid, fd) }

// peerOpen reports whether dst has an open channel or c is closed, which
// ends a wait for dst.
func (c *SimChannel) peerOpen(dst int) bool {
	c.n.mu.Lock()
	defer c.n.mu.Unlock()
	return c.closed || c.n.open[dst] != nil
}

// SendFD queues fd (none when fd is -1) and payload for the channel of
// dstPid, duplicating fd into dstPid's table. It fails with [ErrNoPeer] when
// dstPid has no open channel.
func (c *SimChannel) SendFD(dstPid int, fd int, payload []byte) error {
	if err := checkSend(c.pid, dstPid, fd, payload); err != nil {
		return err
	}
	return c.deliver(dstPid, fd, payload)
}

func (c *SimChannel) sendTo(dst, fd int, payload []byte, d deadline) error {
	n := c.n
	if !c.peerOpen(dst) {
		what := fmt.Sprintf("pid %d to open its channel", dst)
		if err := n.rt.Wait(fmt.Sprintf("ipc pid %d: %s", c.pid, what), func() bool { return c.peerOpen(dst) }, d.left(n.rt.Now())); err != nil {
			return &TimeoutError{Pid: c.pid, From: dst, What: what, After: d.total, Err: err}
		}
	}
	return c.deliver(dst, fd, payload)
}

func (c *SimChannel) deliver(dst, fd int, payload []byte) error {
	n := c.n
	n.mu.Lock()
	closed, peer := c.closed, n.open[dst]
	n.mu.Unlock()
	if closed {
		return fmt.Errorf("ipc pid %d: send to pid %d: %w", c.pid, dst, ErrClosed)
	}
	if peer == nil {
		return fmt.Errorf("ipc pid %d: send to pid %d: %w", c.pid, dst, ErrNoPeer)
	}
	nfd := -1
	if fd >= 0 {
		var err error
		if nfd, err = n.fds.Transfer(c.pid, fd, dst); err != nil {
			return fmt.Errorf("ipc pid %d: send fd %d to pid %d: %w", c.pid, fd, dst, err)
		}
	}
	n.mu.Lock()
	faults := n.faults
	n.mu.Unlock()
	if faults != nil {
		switch f := faults(SimMessage{From: c.pid, To: dst, FD: nfd, Payload: payload}); f {
		case Deliver:
		case LoseMessage, LoseFD, WrongFD:
			if nfd >= 0 {
				_ = n.fds.Close(dst, nfd)
			}
			n.rt.Record("ipc", fmt.Sprintf("fault %s: %d->%d fd %d as %d len %d", f, c.pid, dst, fd, nfd, len(payload)))
			switch {
			case f == LoseMessage:
				return nil
			case f == LoseFD || nfd < 0:
				nfd = -1
			default:
				nfd += wrongFDBase
			}
		default:
			return fmt.Errorf("ipc pid %d: send to pid %d: fault hook returned %v", c.pid, dst, f)
		}
	}
	n.mu.Lock()
	gone := peer.closed
	if !gone {
		peer.queue = append(peer.queue, message{fd: nfd, payload: append([]byte(nil), payload...), from: c.pid})
	}
	n.mu.Unlock()
	if gone {
		if nfd >= 0 {
			_ = n.fds.Close(dst, nfd)
		}
		return fmt.Errorf("ipc pid %d: send to pid %d: %w (closed during the send)", c.pid, dst, ErrNoPeer)
	}
	n.rt.Record("ipc", fmt.Sprintf("send %d->%d fd %d as %d len %d", c.pid, dst, fd, nfd, len(payload)))
	return nil
}

// RecvFD receives the next message from any sender.
func (c *SimChannel) RecvFD(timeout time.Duration) (int, []byte, int, error) {
	m, err := c.recvFrom(-1, newDeadline(c.now(), timeout), "any message")
	if err != nil {
		return -1, nil, -1, err
	}
	return m.fd, m.payload, m.from, nil
}

// match returns the index of the first queued message a receive from pid
// from takes: one from that pid (any pid when from < 0) or one from a
// sender outside the group, which is rejected where it stands. It returns
// -1 when there is none. The caller holds n.mu.
func (c *SimChannel) match(from int) int {
	for i, m := range c.queue {
		if from < 0 || m.from == from || !c.group[m.from] {
			return i
		}
	}
	return -1
}

func (c *SimChannel) recvFrom(from int, d deadline, what string) (message, error) {
	n := c.n
	ready := func() bool {
		n.mu.Lock()
		defer n.mu.Unlock()
		return c.closed || c.match(from) >= 0
	}
	for {
		if err := n.rt.Wait(fmt.Sprintf("ipc pid %d: %s", c.pid, what), ready, d.left(n.rt.Now())); err != nil {
			return message{}, &TimeoutError{Pid: c.pid, From: from, What: what, After: d.total, Err: err}
		}
		n.mu.Lock()
		if c.closed {
			n.mu.Unlock()
			return message{}, fmt.Errorf("ipc pid %d: receive %s: %w", c.pid, what, ErrClosed)
		}
		i := c.match(from)
		if i < 0 { // another receiver took it (Live runtime only)
			n.mu.Unlock()
			continue
		}
		m := c.queue[i]
		c.queue = append(c.queue[:i], c.queue[i+1:]...)
		n.mu.Unlock()
		if !c.group[m.from] {
			if m.fd >= 0 {
				_ = n.fds.Close(c.pid, m.fd)
			}
			n.rt.Record("ipc", fmt.Sprintf("reject %d<-%d fd %d", c.pid, m.from, m.fd))
			return message{}, &PeerRejectedError{Receiver: c.pid, Pid: m.from, Uid: -1, Endpoint: m.from,
				Reason: fmt.Sprintf("pid %d is not in the group", m.from)}
		}
		n.rt.Record("ipc", fmt.Sprintf("recv %d<-%d fd %d len %d", c.pid, m.from, m.fd, len(m.payload)))
		return m, nil
	}
}

// AllGatherFDs runs the ring all-gather of fds (see [Channel]).
func (c *SimChannel) AllGatherFDs(rank int, pids []int, fd int, timeout time.Duration) ([]int, error) {
	return allGather(c, rank, pids, fd, timeout)
}

// BroadcastFDs passes src's fd to every rank (see [Channel]). fd is read
// only on src.
func (c *SimChannel) BroadcastFDs(rank, src int, pids []int, fd int, timeout time.Duration) (int, error) {
	return broadcast(c, rank, src, pids, fd, timeout)
}

// Close removes the channel from the network and closes the fds of
// messages not yet received. Later calls do nothing and return nil.
func (c *SimChannel) Close() error {
	n := c.n
	n.mu.Lock()
	if c.closed {
		n.mu.Unlock()
		return nil
	}
	c.closed = true
	if n.open[c.pid] == c {
		delete(n.open, c.pid)
	}
	q := c.queue
	c.queue = nil
	n.mu.Unlock()
	var errs []error
	for _, m := range q {
		if m.fd >= 0 {
			if err := n.fds.Close(c.pid, m.fd); err != nil {
				errs = append(errs, err)
			}
		}
	}
	n.rt.Record("ipc", fmt.Sprintf("close %d (%d undelivered)", c.pid, len(q)))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("ipc pid %d: close: %w", c.pid, err)
	}
	return nil
}
