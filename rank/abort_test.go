package rank

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/symmem/symmem/actor/store"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/internal/livetest"
)

// TestAbortableClientPassesResultsThrough: without a failure the wrapper
// returns the Store's own answers, timeouts included.
func TestAbortableClientPassesResultsThrough(t *testing.T) {
	srv := livetest.Store(t)
	c := Abortable(srv.Connect("rank0", time.Second), context.Background())
	if err := c.Set("a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Get("a"); err != nil || string(v) != "1" {
		t.Errorf("get = %q, %v", v, err)
	}
	var mk *store.MissingKeysError
	if err := c.Wait([]string{"a", "b"}, 50*time.Millisecond); !errors.As(err, &mk) || len(mk.Keys) != 1 || mk.Keys[0] != "b" {
		t.Errorf("wait = %v, want key b missing", err)
	}
}

// stuckDevice is a device whose stream never drains until released, like a
// kernel spinning for a peer that died.
type stuckDevice struct {
	device.Device
	release chan struct{}
	started chan struct{} // gets a value as each Synchronize starts, when not nil
	syncs   atomic.Int32
}

func (d *stuckDevice) Launch(s device.Stream, l device.Launch) error { return nil }

func (d *stuckDevice) Synchronize(s device.Stream) error {
	d.syncs.Add(1)
	if d.started != nil {
		d.started <- struct{}{}
	}
	<-d.release
	return errors.New("kernel timed out")
}

func TestWaitStreamReturnsOnAbort(t *testing.T) {
	srv := livetest.Store(t)
	dev := &stuckDevice{release: make(chan struct{}), started: make(chan struct{}, 1)}
	defer close(dev.release)
	abort, fire := context.WithCancelCause(context.Background())
	r := &Rank{id: 0, dev: dev, stream: 7, store: Abortable(srv.Connect("rank0", time.Second), abort), abort: abort}
	failed := errors.New("peer rank 2 exited with status 1")
	go func() {
		<-dev.started // the first wait is under way: the peer dies
		fire(failed)
	}()
	for _, c := range []struct {
		name string
		call func() error
		want string
	}{
		{"synchronize", r.Synchronize, "rank 0: synchronize: wait for the work on stream 7: peer rank 2 exited with status 1"},
		{"enqueue", func() error { return r.enqueue(device.Launch{Kernel: "k"}) }, "wait for the work on stream 7: peer rank 2 exited with status 1"},
	} {
		errc := make(chan error, 1)
		go func() { errc <- c.call() }()
		err := livetest.Within(t, errc, 5*time.Second, c.name)
		if !errors.Is(err, failed) {
			t.Errorf("%s = %v, want rank 2's failure", c.name, err)
		}
		if !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s = %q, want it to start with %q", c.name, err, c.want)
		}
	}
	// The second call found the abort already fired: it did not wait.
	if n := dev.syncs.Load(); n != 1 {
		t.Errorf("%d synchronizes, want 1", n)
	}
}

// TestWaitStreamWithoutAbortSynchronizesDirectly: ranks without an abort
// context (the simulator, ranks of one process), and ranks whose abort has
// not fired, wait for the device and get its error.
func TestWaitStreamWithoutAbortSynchronizesDirectly(t *testing.T) {
	dev := &stuckDevice{release: make(chan struct{})}
	close(dev.release)
	for _, ab := range []context.Context{nil, context.Background()} {
		r := &Rank{id: 0, dev: dev, stream: 1, abort: ab}
		if err := r.Synchronize(); err == nil || err.Error() != "rank 0: synchronize: kernel timed out" {
			t.Errorf("abort %v: synchronize = %v, want the device's error", ab, err)
		}
	}
}
