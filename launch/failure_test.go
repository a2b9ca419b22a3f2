package launch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/symmem/symmem/actor/store"
	"github.com/symmem/symmem/internal/livetest"
	"github.com/symmem/symmem/rank"
)

func TestPeerFailedErrorNamesTheRank(t *testing.T) {
	e := &PeerFailedError{Rank: 1, Status: "was killed by signal killed"}
	if got, want := e.Error(), "peer rank 1 was killed by signal killed (reported by the launcher)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	wrapped := fmt.Errorf("rank 0: store wait: %w", e)
	var pf *PeerFailedError
	if !errors.As(wrapped, &pf) || pf.Rank != 1 {
		t.Fatalf("errors.As(%v) = %v, want rank 1", wrapped, pf)
	}
	back, err := ParsePeerFailure(e.Value())
	if err != nil || *back != *e {
		t.Errorf("ParsePeerFailure(%q) = %+v, %v; want %+v", e.Value(), back, err, e)
	}
	if got := string((&PeerFailedError{Rank: 3, Status: "exited with status 2"}).Value()); got != "rank 3 exited with status 2" {
		t.Errorf("Value() = %q", got)
	}
	if got := (&PeerFailedError{Rank: -1, Status: "lost"}).Error(); !strings.Contains(got, "a peer rank failed: lost") {
		t.Errorf("Error() without a rank = %q", got)
	}
	for _, bad := range []string{"", "rank", "rank 1", "rank x died", "rank -1 died", "node 1 died"} {
		if pf, err := ParsePeerFailure([]byte(bad)); err == nil {
			t.Errorf("ParsePeerFailure(%q) = %+v, want an error", bad, pf)
		}
	}
}

// TestWatcherAbortsStoreWaits: a rank waiting in a Store all-gather for a
// peer that never comes gets a PeerFailedError naming the peer as soon as
// the failure is published, long before its 20 s timeout; later waits fail
// at once.
func TestWatcherAbortsStoreWaits(t *testing.T) {
	srv := livetest.Store(t)
	raw := srv.Connect("rank0", 20*time.Second)
	w := watchFailures(raw, 0, 50*time.Millisecond, nil)
	defer w.Stop()
	c := rank.Abortable(raw, w.ab.ctx)
	ex, err := store.NewExchange(c, "test", store.Group{Name: "pair", Ranks: []int{0, 1}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := ex.AllGather([]byte("x"))
		errc <- err
	}()
	// Let the watcher go round a few of its polls first.
	time.Sleep(200 * time.Millisecond)
	select {
	case err := <-errc:
		t.Fatalf("all-gather returned before the failure was published: %v", err)
	default:
	}
	if w.ab.ctx.Err() != nil {
		t.Fatal("abort fired before the failure was published")
	}
	failed := &PeerFailedError{Rank: 1, Status: "was killed by signal killed"}
	if err := PublishFailure(srv.Connect("launch", time.Second), failed); err != nil {
		t.Fatal(err)
	}
	err = livetest.Within(t, errc, 5*time.Second, "all-gather after the failure")
	var pf *PeerFailedError
	if !errors.As(err, &pf) || *pf != *failed {
		t.Fatalf("all-gather = %v, want %v", err, failed)
	}
	if !strings.Contains(err.Error(), `all_gather "test/pair" seq 0 (rank 0): store wait for ["test/pair/0/0" "test/pair/0/1"]: peer rank 1 was killed`) {
		t.Errorf("all-gather error does not say what was waited for: %v", err)
	}
	livetest.Within(t, w.exited, 5*time.Second, "watcher exit after the failure")

	start := time.Now()
	for _, call := range []func() error{
		func() error { return c.Wait([]string{"never"}, 10*time.Second) },
		func() error { _, err := c.Get("never"); return err },
	} {
		if err := call(); !errors.As(err, &pf) || pf.Rank != 1 || !strings.Contains(err.Error(), `"never"`) {
			t.Errorf("wait after the abort = %v, want rank 1's failure and the key", err)
		}
	}
	if time.Since(start) > time.Second {
		t.Errorf("waits after the abort took %v", time.Since(start))
	}
	// Non-blocking calls and waits for keys that exist still work.
	if err := c.Set("k", []byte("v")); err != nil {
		t.Errorf("set after the abort: %v", err)
	}
}

func TestWatcherStops(t *testing.T) {
	srv := livetest.Store(t)
	w := watchFailures(srv.Connect("rank0", time.Second), 0, 50*time.Millisecond, nil)
	w.Stop()
	w.Stop() // twice is fine
	livetest.Within(t, w.exited, 2*time.Second, "watcher exit after Stop")
	if err := PublishFailure(srv.Connect("launch", time.Second), &PeerFailedError{Rank: 1, Status: "exited with status 3"}); err != nil {
		t.Fatal(err)
	}
	if pf := context.Cause(w.ab.ctx); pf != nil {
		t.Fatalf("a stopped watcher fired: %v", pf)
	}
}

// flakyStore fails its first waits, then reports the failure key.
type flakyStore struct {
	store.Client
	waits atomic.Int32
	value string
}

func (f *flakyStore) Wait(keys []string, timeout time.Duration) error {
	if f.waits.Add(1) <= 2 {
		return errors.New("store unreachable")
	}
	return nil
}

func (f *flakyStore) Get(key string) ([]byte, error) { return []byte(f.value), nil }

// TestWatcherRetriesAfterStoreErrors: a Store error does not end the watch,
// and an unreadable report still aborts, naming no rank.
func TestWatcherRetriesAfterStoreErrors(t *testing.T) {
	f := &flakyStore{value: "something odd"}
	w := watchFailures(f, 0, 10*time.Millisecond, nil)
	defer w.Stop()
	livetest.Within(t, w.ab.ctx.Done(), 5*time.Second, "abort after Store errors")
	if pf, _ := context.Cause(w.ab.ctx).(*PeerFailedError); pf == nil || pf.Rank != -1 || pf.Status != "something odd" {
		t.Fatalf("failure = %+v, want the raw report", pf)
	}
	if n := f.waits.Load(); n != 3 {
		t.Errorf("%d waits, want 3", n)
	}
}
