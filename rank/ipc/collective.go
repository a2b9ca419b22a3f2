package ipc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// link is what the collectives need from a channel implementation.
type link interface {
	Pid() int
	// now reads the clock that deadlines are measured on.
	now() time.Duration
	// sendTo sends one message to dst, waiting until d for dst to open its
	// channel and for room in its queue.
	sendTo(dst, fd int, payload []byte, d deadline) error
	// recvFrom returns the next message from pid from (from any sender
	// when from < 0), keeping messages from other senders for later
	// receives. what describes the wait for a timeout error.
	recvFrom(from int, d deadline, what string) (message, error)
	// closeFD closes a received fd.
	closeFD(fd int) error
}

// Collective operations named in message headers.
const (
	opAllGather byte = 1
	opBroadcast byte = 2
)

func opName(op byte) string {
	switch op {
	case opAllGather:
		return "all_gather_fds"
	case opBroadcast:
		return "broadcast_fds"
	}
	return fmt.Sprintf("op %d", op)
}

// header is the payload of a collective message.
//
//	0..4   magic "SMFD"
//	4      version
//	5      op
//	6      1 when an fd is attached
//	7      reserved (0)
//	8..12  world size
//	12..16 origin rank (whose fd this is)
//	16..20 step (hops travelled from the origin)
type header struct {
	op     byte
	hasFD  bool
	world  uint32
	origin uint32
	step   uint32
}

const (
	headerMagic   = "SMFD"
	headerVersion = 1
	headerLen     = 20
)

func (h header) encode() []byte {
	b := make([]byte, headerLen)
	copy(b, headerMagic)
	b[4] = headerVersion
	b[5] = h.op
	if h.hasFD {
		b[6] = 1
	}
	binary.LittleEndian.PutUint32(b[8:], h.world)
	binary.LittleEndian.PutUint32(b[12:], h.origin)
	binary.LittleEndian.PutUint32(b[16:], h.step)
	return b
}

func decodeHeader(b []byte) (header, error) {
	if len(b) != headerLen || string(b[:4]) != headerMagic {
		return header{}, fmt.Errorf("not a collective message (%d bytes)", len(b))
	}
	if b[4] != headerVersion {
		return header{}, fmt.Errorf("collective message version %d, want %d", b[4], headerVersion)
	}
	if b[6] > 1 || b[7] != 0 {
		return header{}, errors.New("malformed collective message flags")
	}
	return header{
		op:     b[5],
		hasFD:  b[6] == 1,
		world:  binary.LittleEndian.Uint32(b[8:]),
		origin: binary.LittleEndian.Uint32(b[12:]),
		step:   binary.LittleEndian.Uint32(b[16:]),
	}, nil
}

func (h header) String() string {
	return fmt.Sprintf("%s world %d origin rank %d step %d fd %t", opName(h.op), h.world, h.origin, h.step, h.hasFD)
}

// checkRing validates the arguments common to both collectives.
func checkRing(op string, self, rank int, pids []int) error {
	w := len(pids)
	if w == 0 {
		return fmt.Errorf("%s on pid %d: empty pid list", op, self)
	}
	if rank < 0 || rank >= w {
		return fmt.Errorf("%s on pid %d: rank %d out of range for %d ranks", op, self, rank, w)
	}
	seen := make(map[int]int, w)
	for r, p := range pids {
		if p <= 0 {
			return fmt.Errorf("%s on pid %d: rank %d has invalid pid %d", op, self, r, p)
		}
		if q, dup := seen[p]; dup {
			return fmt.Errorf("%s on pid %d: ranks %d and %d share pid %d", op, self, q, r, p)
		}
		seen[p] = r
	}
	if pids[rank] != self {
		return fmt.Errorf("%s: rank %d is pid %d in the pid list but this channel is pid %d", op, rank, pids[rank], self)
	}
	return nil
}

// receiveStep receives the message of one collective step from pid from and
// checks that it is exactly the one expected (want.hasFD is ignored: it is
// checked against the fd that actually came). On error no fd is left open.
func receiveStep(l link, from int, want header, d deadline, what string) (int, error) {
	m, err := l.recvFrom(from, d, what)
	if err != nil {
		return -1, err
	}
	got, err := decodeHeader(m.payload)
	if err == nil {
		want.hasFD = got.hasFD
		switch {
		case got != want:
			err = fmt.Errorf("got %v instead: collectives out of order", got)
		case got.hasFD && m.fd < 0:
			err = errors.New("the message announced an fd but none came")
		case !got.hasFD && m.fd >= 0:
			err = errors.New("the message announced no fd but one came")
		}
	}
	if err != nil {
		if m.fd >= 0 {
			_ = l.closeFD(m.fd)
		}
		return -1, fmt.Errorf("received from pid %d while waiting for %s: %w", m.from, what, err)
	}
	return m.fd, nil
}

// allGather is the ring: at step k = 1..W-1 each rank sends to rank+1 the fd
// that originated at rank-(k-1) and receives from rank-1 the fd that
// originated at rank-k.
func allGather(l link, rank int, pids []int, fd int, timeout time.Duration) ([]int, error) {
	const op = "all_gather_fds"
	self := l.Pid()
	if err := checkRing(op, self, rank, pids); err != nil {
		return nil, err
	}
	if fd < -1 {
		return nil, fmt.Errorf("%s: rank %d (pid %d): invalid fd %d (use -1 for none)", op, rank, self, fd)
	}
	w := len(pids)
	out := make([]int, w)
	for i := range out {
		out[i] = -1
	}
	out[rank] = fd
	fail := func(err error) ([]int, error) {
		for r, f := range out {
			if r != rank && f >= 0 {
				_ = l.closeFD(f)
			}
		}
		return nil, err
	}
	d := newDeadline(l.now(), timeout)
	next, prev := (rank+1)%w, (rank-1+w)%w
	for k := 1; k < w; k++ {
		sendOrigin := (rank - (k - 1) + w) % w
		h := header{op: opAllGather, hasFD: out[sendOrigin] >= 0, world: uint32(w), origin: uint32(sendOrigin), step: uint32(k)}
		if err := l.sendTo(pids[next], out[sendOrigin], h.encode(), d); err != nil {
			return fail(fmt.Errorf("%s rank %d (pid %d) step %d/%d: sending the fd of rank %d to rank %d (pid %d): %w",
				op, rank, self, k, w-1, sendOrigin, next, pids[next], err))
		}
		recvOrigin := (rank - k + w) % w
		what := fmt.Sprintf("the fd of rank %d from rank %d (pid %d) in %s step %d/%d", recvOrigin, prev, pids[prev], op, k, w-1)
		want := header{op: opAllGather, world: uint32(w), origin: uint32(recvOrigin), step: uint32(k)}
		got, err := receiveStep(l, pids[prev], want, d, what)
		if err != nil {
			return fail(fmt.Errorf("%s rank %d (pid %d): %w", op, rank, self, err))
		}
		out[recvOrigin] = got
	}
	return out, nil
}

// broadcast passes src's fd along the ring: src sends to src+1, and every
// other rank receives from rank-1 and, unless rank+1 is src, forwards it.
func broadcast(l link, rank, src int, pids []int, fd int, timeout time.Duration) (int, error) {
	const op = "broadcast_fds"
	self := l.Pid()
	if err := checkRing(op, self, rank, pids); err != nil {
		return -1, err
	}
	w := len(pids)
	if src < 0 || src >= w {
		return -1, fmt.Errorf("%s: rank %d (pid %d): source rank %d out of range for %d ranks", op, rank, self, src, w)
	}
	d := newDeadline(l.now(), timeout)
	next, prev := (rank+1)%w, (rank-1+w)%w
	if rank == src {
		if fd < -1 {
			return -1, fmt.Errorf("%s: source rank %d (pid %d): invalid fd %d (use -1 for none)", op, rank, self, fd)
		}
		if w > 1 {
			h := header{op: opBroadcast, hasFD: fd >= 0, world: uint32(w), origin: uint32(src), step: 1}
			if err := l.sendTo(pids[next], fd, h.encode(), d); err != nil {
				return -1, fmt.Errorf("%s source rank %d (pid %d): sending to rank %d (pid %d): %w", op, rank, self, next, pids[next], err)
			}
		}
		return fd, nil
	}
	step := (rank - src + w) % w
	what := fmt.Sprintf("the fd of source rank %d from rank %d (pid %d) in %s hop %d/%d", src, prev, pids[prev], op, step, w-1)
	want := header{op: opBroadcast, world: uint32(w), origin: uint32(src), step: uint32(step)}
	got, err := receiveStep(l, pids[prev], want, d, what)
	if err != nil {
		return -1, fmt.Errorf("%s rank %d (pid %d): %w", op, rank, self, err)
	}
	if next != src {
		h := header{op: opBroadcast, hasFD: got >= 0, world: uint32(w), origin: uint32(src), step: uint32(step + 1)}
		if err := l.sendTo(pids[next], got, h.encode(), d); err != nil {
			if got >= 0 {
				_ = l.closeFD(got)
			}
			return -1, fmt.Errorf("%s rank %d (pid %d): forwarding to rank %d (pid %d): %w", op, rank, self, next, pids[next], err)
		}
	}
	return got, nil
}
