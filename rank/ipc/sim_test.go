package ipc

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/symmem/symmem/actor"
)

// memFDs is a tiny in-memory FDSpace: per-pid tables of numbered fds naming
// shared files with string contents.
type memFDs struct {
	mu     sync.Mutex
	tables map[int]map[int]*memFile
	next   map[int]int
}

type memFile struct{ data string }

func newMemFDs() *memFDs {
	return &memFDs{tables: map[int]map[int]*memFile{}, next: map[int]int{}}
}

func (m *memFDs) install(pid int, f *memFile) int {
	if m.tables[pid] == nil {
		m.tables[pid] = map[int]*memFile{}
		m.next[pid] = 3
	}
	fd := m.next[pid]
	m.next[pid]++
	m.tables[pid][fd] = f
	return fd
}

// create opens a new file holding data in pid's table.
func (m *memFDs) create(pid int, data string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.install(pid, &memFile{data: data})
}

func (m *memFDs) Transfer(fromPid, fd, toPid int) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, ok := m.tables[fromPid][fd]
	if !ok {
		return -1, fmt.Errorf("pid %d has no fd %d", fromPid, fd)
	}
	return m.install(toPid, f), nil
}

func (m *memFDs) Close(pid, fd int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.tables[pid][fd]; !ok {
		return fmt.Errorf("pid %d has no fd %d to close", pid, fd)
	}
	delete(m.tables[pid], fd)
	return nil
}

func (m *memFDs) read(pid, fd int) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, ok := m.tables[pid][fd]
	if !ok {
		return "", fmt.Errorf("pid %d has no fd %d", pid, fd)
	}
	return f.data, nil
}

// open lists pid's open fds in order.
func (m *memFDs) open(pid int) []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	var fds []int
	for fd := range m.tables[pid] {
		fds = append(fds, fd)
	}
	slices.Sort(fds)
	return fds
}

var simPids = []int{101, 102, 103, 104}

// simRing runs a 4-rank ring all-gather, then a broadcast from rank 3 and a
// subgroup all-gather of ranks 0 and 2, on a scheduler seeded with seed. It
// returns the trace hash, or an error describing the first wrong result.
func simRing(seed uint64) (string, error) {
	s := actor.NewScheduler(actor.Config{Seed: seed})
	fds := newMemFDs()
	net := NewSimNetwork(s, fds)
	w := len(simPids)
	errs := make([]error, w)
	own := make([]int, w)
	for r := range w {
		own[r] = fds.create(simPids[r], fmt.Sprintf("rank %d", r))
	}
	for r := range w {
		s.Go(fmt.Sprintf("rank%d", r), func() {
			errs[r] = func() error {
				pid := simPids[r]
				c, err := net.Open(pid, simPids)
				if err != nil {
					return err
				}
				defer c.Close()
				got, err := c.AllGatherFDs(r, simPids, own[r], time.Second)
				if err != nil {
					return err
				}
				if got[r] != own[r] {
					return fmt.Errorf("rank %d: own entry %d, want %d", r, got[r], own[r])
				}
				for q, fd := range got {
					if data, err := fds.read(pid, fd); err != nil || data != fmt.Sprintf("rank %d", q) {
						return fmt.Errorf("rank %d: entry %d reads %q, %v", r, q, data, err)
					}
					if q != r {
						if err := fds.Close(pid, fd); err != nil {
							return err
						}
					}
				}
				b, err := c.BroadcastFDs(r, 3, simPids, own[r], time.Second)
				if err != nil {
					return err
				}
				if data, err := fds.read(pid, b); err != nil || data != "rank 3" {
					return fmt.Errorf("rank %d: broadcast reads %q, %v", r, data, err)
				}
				if r != 3 {
					fds.Close(pid, b)
				}
				if r%2 == 0 {
					sub := []int{simPids[0], simPids[2]}
					got, err := c.AllGatherFDs(r/2, sub, own[r], time.Second)
					if err != nil {
						return err
					}
					peer := got[1-r/2]
					if data, err := fds.read(pid, peer); err != nil || data != fmt.Sprintf("rank %d", 2-r) {
						return fmt.Errorf("rank %d: subgroup peer reads %q, %v", r, data, err)
					}
					fds.Close(pid, peer)
				}
				return nil
			}()
		})
	}
	if err := s.Run(); err != nil {
		return "", err
	}
	if err := errors.Join(errs...); err != nil {
		return "", err
	}
	for r, pid := range simPids {
		if open := fds.open(pid); !slices.Equal(open, []int{own[r]}) {
			return "", fmt.Errorf("rank %d ends with fds %v open, want only its own %d", r, open, own[r])
		}
	}
	return s.Trace().Hash(), nil
}

func TestSimRingDeterministicPerSeed(t *testing.T) {
	hashes := map[string]bool{}
	for seed := range uint64(12) {
		h1, err := simRing(seed)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		h2, err := simRing(seed)
		if err != nil {
			t.Fatalf("seed %d, second run: %v", seed, err)
		}
		if h1 != h2 {
			t.Fatalf("seed %d: trace %s then %s", seed, h1, h2)
		}
		hashes[h1] = true
	}
	if len(hashes) < 6 {
		t.Fatalf("12 seeds gave only %d distinct schedules; the ring is not being interleaved", len(hashes))
	}
}

func TestSimTraceRecordsTransfers(t *testing.T) {
	s := actor.NewScheduler(actor.Config{Seed: 7, KeepEvents: true})
	fds := newMemFDs()
	net := NewSimNetwork(s, fds)
	fd := fds.create(1, "x")
	s.Go("sender", func() {
		c, err := net.Open(1, []int{1, 2})
		if err != nil {
			t.Error(err)
			return
		}
		if err := c.SendFD(2, fd, []byte("hi")); !errors.Is(err, ErrNoPeer) {
			t.Errorf("send before the peer opened = %v, want ErrNoPeer", err)
		}
		if _, err := c.AllGatherFDs(0, []int{1, 2}, fd, time.Second); err != nil {
			t.Error(err)
		}
	})
	s.Go("receiver", func() {
		s.Sleep(time.Millisecond)
		c, err := net.Open(2, []int{1, 2})
		if err != nil {
			t.Error(err)
			return
		}
		if _, err := c.AllGatherFDs(1, []int{1, 2}, -1, time.Second); err != nil {
			t.Error(err)
		}
	})
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	var ipc []string
	for _, e := range s.Trace().Events() {
		if e.Kind == "ipc" {
			ipc = append(ipc, e.Detail)
		}
	}
	joined := strings.Join(ipc, "\n")
	for _, want := range []string{"open 1", "open 2", "send 1->2 fd 3 as 3 len 20", "recv 2<-1 fd 3 len 20", "send 2->1 fd -1 as -1 len 20", "recv 1<-2 fd -1 len 20"} {
		if !strings.Contains(joined, want) {
			t.Fatalf("ipc trace lacks %q:\n%s", want, joined)
		}
	}
}

func TestSimRejectedSender(t *testing.T) {
	s := actor.NewScheduler(actor.Config{Seed: 3})
	fds := newMemFDs()
	net := NewSimNetwork(s, fds)
	fd := fds.create(9, "intruder")
	var err error
	var rejectedFrom int
	s.Go("receiver", func() {
		c, oerr := net.Open(1, []int{1, 2})
		if oerr != nil {
			err = oerr
			return
		}
		_, _, _, err = c.RecvFD(time.Second)
		var pe *PeerRejectedError
		if errors.As(err, &pe) {
			rejectedFrom = pe.Pid
		}
	})
	s.Go("intruder", func() {
		c, oerr := net.Open(9, []int{1})
		if oerr != nil {
			t.Error(oerr)
			return
		}
		if serr := c.sendTo(1, fd, []byte("let me in"), newDeadline(s.Now(), time.Second)); serr != nil {
			t.Error(serr)
		}
	})
	if rerr := s.Run(); rerr != nil {
		t.Fatal(rerr)
	}
	if rejectedFrom != 9 || !strings.Contains(fmt.Sprint(err), "pid 9 is not in the group") {
		t.Fatalf("RecvFD from pid 9 = %v, want a PeerRejectedError naming pid 9", err)
	}
	if open := fds.open(1); len(open) != 0 {
		t.Fatalf("receiver's table holds %v after the rejection, want nothing", open)
	}
}

func TestSimTimeoutNamesTheWaiter(t *testing.T) {
	s := actor.NewScheduler(actor.Config{Seed: 1})
	net := NewSimNetwork(s, newMemFDs())
	var recvErr, gatherErr error
	var at time.Duration
	s.Go("lonely", func() {
		c, err := net.Open(5, []int{5, 6})
		if err != nil {
			t.Error(err)
			return
		}
		_, _, _, recvErr = c.RecvFD(time.Second)
		at = s.Now()
		_, gatherErr = c.AllGatherFDs(0, []int{5, 6}, -1, 2*time.Second)
	})
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	var te *TimeoutError
	if !errors.As(recvErr, &te) || te.Pid != 5 || !strings.Contains(recvErr.Error(), "ipc pid 5") {
		t.Fatalf("RecvFD = %v, want a timeout naming pid 5", recvErr)
	}
	var ate *actor.TimeoutError
	if !errors.As(recvErr, &ate) || at != time.Second {
		t.Fatalf("timeout at virtual %v (cause %v), want after 1s of virtual time", at, recvErr)
	}
	if !errors.As(gatherErr, &te) || te.From != 6 || !strings.Contains(gatherErr.Error(), "pid 6 to open its channel") {
		t.Fatalf("AllGatherFDs with a peer that never opens = %v", gatherErr)
	}
}

func TestSimCloseReleasesQueuedFDs(t *testing.T) {
	s := actor.NewScheduler(actor.Config{Seed: 2})
	fds := newMemFDs()
	net := NewSimNetwork(s, fds)
	fd := fds.create(1, "queued")
	s.Go("both", func() {
		a, err := net.Open(1, []int{1, 2})
		if err != nil {
			t.Error(err)
			return
		}
		b, err := net.Open(2, []int{1, 2})
		if err != nil {
			t.Error(err)
			return
		}
		if _, err := net.Open(2, []int{1}); err == nil || !strings.Contains(err.Error(), "already has an open channel") {
			t.Errorf("second Open of pid 2 = %v", err)
		}
		if err := a.SendFD(2, fd, nil); err != nil {
			t.Error(err)
		}
		if len(fds.open(2)) != 1 {
			t.Errorf("receiver table after send: %v, want the transferred fd", fds.open(2))
		}
		if err := b.Close(); err != nil {
			t.Error(err)
		}
		if err := b.Close(); err != nil {
			t.Errorf("second Close = %v", err)
		}
		if open := fds.open(2); len(open) != 0 {
			t.Errorf("receiver table after Close: %v, want empty", open)
		}
		if _, _, _, err := b.RecvFD(time.Second); !errors.Is(err, ErrClosed) {
			t.Errorf("RecvFD after Close = %v, want ErrClosed", err)
		}
		if err := a.SendFD(2, -1, nil); !errors.Is(err, ErrNoPeer) {
			t.Errorf("send to a closed pid = %v, want ErrNoPeer", err)
		}
		if err := a.SendFD(2, 99, nil); err == nil {
			t.Error("sending an fd the sender does not have succeeded")
		}
	})
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
}

func TestSimOpenRejectsBadInput(t *testing.T) {
	s := actor.NewScheduler(actor.Config{})
	net := NewSimNetwork(s, newMemFDs())
	if _, err := net.Open(0, []int{1}); err == nil {
		t.Error("Open(pid 0) succeeded")
	}
	if _, err := net.Open(1, nil); err == nil || !strings.Contains(err.Error(), "empty group") {
		t.Errorf("Open with no group = %v", err)
	}
	if _, err := net.Open(1, []int{1, -4}); err == nil || !strings.Contains(err.Error(), "-4") {
		t.Errorf("Open with pid -4 in the group = %v", err)
	}
	if _, err := NewSimNetwork(s, nil).Open(1, []int{1}); err == nil {
		t.Error("Open on a network without an fd space succeeded")
	}
}

// TestSimOnLiveRuntime runs the ring on goroutines, where the network's
// locking (not the scheduler) keeps it consistent.
func TestSimOnLiveRuntime(t *testing.T) {
	rt := actor.NewLive()
	fds := newMemFDs()
	net := NewSimNetwork(rt, fds)
	w := len(simPids)
	errs := make([]error, w)
	var wg sync.WaitGroup
	for r := range w {
		own := fds.create(simPids[r], fmt.Sprintf("rank %d", r))
		wg.Go(func() {
			c, err := net.Open(simPids[r], simPids)
			if err != nil {
				errs[r] = err
				return
			}
			defer c.Close()
			got, err := c.AllGatherFDs(r, simPids, own, 10*time.Second)
			if err != nil {
				errs[r] = err
				return
			}
			for q, fd := range got {
				if data, _ := fds.read(simPids[r], fd); data != fmt.Sprintf("rank %d", q) {
					errs[r] = fmt.Errorf("rank %d entry %d reads %q", r, q, data)
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}
