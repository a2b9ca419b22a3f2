package ipc

import (
	"errors"
	"fmt"
	"time"
)

// MaxPayload is the largest payload, in bytes, that one message carries.
const MaxPayload = 4096

// Channel passes file descriptors between the processes of one host. Each
// process (each simulated process, in the simulator) has one channel,
// addressed by its pid.
//
// A timeout <= 0 waits forever. Every fd a channel hands out (other than the
// caller's own entry in a collective) is owned by the caller.
type Channel interface {
	// SendFD sends fd (or none when fd == -1) with a small payload to the process dstPid.
	SendFD(dstPid int, fd int, payload []byte) error
	// RecvFD receives one message; fd is -1 when none came. Times out with an error naming the channel's pid and what it waited for.
	RecvFD(timeout time.Duration) (fd int, payload []byte, senderPid int, err error)
	// AllGatherFDs: ring; returns fds indexed by rank (own entry is fd itself, not a dup).
	AllGatherFDs(rank int, pids []int, fd int, timeout time.Duration) ([]int, error)
	// BroadcastFDs: src's fd reaches every rank; returns the received fd (src returns its own).
	BroadcastFDs(rank, src int, pids []int, fd int, timeout time.Duration) (int, error)
	// Pid is the pid this channel is addressed by.
	Pid() int
	// Close releases the channel and closes every fd it still holds. It is
	// idempotent.
	Close() error
}

// ErrClosed is returned (wrapped) by operations on a closed channel.
var ErrClosed = errors.New("ipc channel closed")

// ErrNoPeer is returned (wrapped) by SendFD when the destination pid has no
// open channel. The collectives wait for a missing peer until their timeout
// instead.
var ErrNoPeer = errors.New("no ipc channel open for the destination pid")

// PeerRejectedError reports a message from a sender that failed the
// credential check. Any fd that came with it has been closed.
type PeerRejectedError struct {
	Receiver int    // pid of the receiving channel
	Pid      int    // the sender's pid (kernel-attested for sockets); -1 if unknown
	Uid      int    // the sender's uid; -1 if unknown or simulated
	Endpoint int    // the pid the sender's channel is addressed by; -1 if unknown
	Reason   string // why it was rejected
}

func (e *PeerRejectedError) Error() string {
	return fmt.Sprintf("ipc pid %d: rejected message from pid %d uid %d (channel of pid %d): %s; any fd it carried was closed",
		e.Receiver, e.Pid, e.Uid, e.Endpoint, e.Reason)
}

// TimeoutError reports a receive, or a send waiting for its peer, that ran
// out of time.
type TimeoutError struct {
	Pid   int           // the waiting channel's pid
	From  int           // the pid waited for; -1 for any sender
	What  string        // what it waited for
	After time.Duration // the timeout
	Err   error         // the underlying cause, if any
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("ipc pid %d: timed out after %v waiting for %s", e.Pid, e.After, e.What)
}

// Unwrap returns the underlying cause.
func (e *TimeoutError) Unwrap() error { return e.Err }

// Timeout reports true, so the error satisfies net.Error-style checks.
func (e *TimeoutError) Timeout() bool { return true }

// message is one received datagram.
type message struct {
	fd      int // -1: none
	payload []byte
	from    int // the sender's pid
}

// deadline is a point on an implementation's clock (see link.now) and the
// total timeout it was derived from; total <= 0 means none.
type deadline struct {
	at, total time.Duration
}

func newDeadline(now, timeout time.Duration) deadline {
	if timeout <= 0 {
		return deadline{}
	}
	return deadline{at: now + timeout, total: timeout}
}

// forever reports whether there is no deadline.
func (d deadline) forever() bool { return d.total <= 0 }

// left is the time remaining at now; 0 means forever, and an expired
// deadline gives 1ns so that a last check still happens before timing out.
func (d deadline) left(now time.Duration) time.Duration {
	if d.forever() {
		return 0
	}
	if r := d.at - now; r > 0 {
		return r
	}
	return time.Nanosecond
}

// expired reports whether the deadline has passed at now.
func (d deadline) expired(now time.Duration) bool {
	return !d.forever() && now >= d.at
}

// checkSend validates SendFD's arguments.
func checkSend(self, dst, fd int, payload []byte) error {
	switch {
	case dst <= 0:
		return fmt.Errorf("ipc pid %d: send to invalid pid %d", self, dst)
	case fd < -1:
		return fmt.Errorf("ipc pid %d: send to pid %d: invalid fd %d (use -1 to send none)", self, dst, fd)
	case len(payload) > MaxPayload:
		return fmt.Errorf("ipc pid %d: send to pid %d: payload of %d bytes exceeds the %d-byte limit", self, dst, len(payload), MaxPayload)
	}
	return nil
}

// groupSet validates a group of pids and returns it as a set.
func groupSet(group []int) (map[int]bool, error) {
	if len(group) == 0 {
		return nil, errors.New("empty group: at least one allowed pid is required")
	}
	set := make(map[int]bool, len(group))
	for i, p := range group {
		if p <= 0 {
			return nil, fmt.Errorf("group entry %d is %d, not a valid pid", i, p)
		}
		set[p] = true
	}
	return set, nil
}
