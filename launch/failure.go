package launch

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/symmem/symmem/actor/store"
)

// FailureKey is the Store key under which a launcher (`symmem launch`)
// publishes the first failure of a rank process of the job, as
// [PeerFailedError.Value] encodes it. Rank processes started by
// [RunProcess] watch it and abort their blocking waits when it appears.
const FailureKey = "symmem/launch/failure"

// watchPoll bounds each Store wait of the failure watcher: a wait returns
// as soon as the key appears, so this only sets how long a stopped watcher
// may linger and how soon it retries after a Store error.
const watchPoll = 5 * time.Second

// PeerFailedError reports that another rank of the job died or failed while
// this rank was waiting for it, as the launcher observed it. Rank
// processes' blocking waits (Store waits, waits for the rank's stream)
// return it, wrapped with what was being waited for, once the launcher has
// published the failure under [FailureKey].
type PeerFailedError struct {
	// Rank is the global rank that failed; -1 when the launcher's report
	// did not name one.
	Rank int
	// Status says how it ended: "was killed by signal killed", "exited
	// with status 3".
	Status string
}

// Error reads like "peer rank 1 was killed by signal killed (reported by
// the launcher)".
func (e *PeerFailedError) Error() string {
	if e.Rank < 0 {
		return fmt.Sprintf("a peer rank failed: %s (reported by the launcher)", e.Status)
	}
	return fmt.Sprintf("peer rank %d %s (reported by the launcher)", e.Rank, e.Status)
}

// Value is what a launcher stores under [FailureKey]: "rank 1 was killed by
// signal killed". [ParsePeerFailure] reads it back.
func (e *PeerFailedError) Value() []byte {
	return []byte(fmt.Sprintf("rank %d %s", e.Rank, e.Status))
}

// ParsePeerFailure decodes a value stored under [FailureKey] ("rank N
// STATUS").
func ParsePeerFailure(v []byte) (*PeerFailedError, error) {
	s := string(v)
	rest, ok := strings.CutPrefix(s, "rank ")
	num, status, ok2 := strings.Cut(rest, " ")
	if !ok || !ok2 || status == "" {
		return nil, fmt.Errorf("failure report %q: want \"rank N STATUS\"", s)
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("failure report %q: bad rank %q", s, num)
	}
	return &PeerFailedError{Rank: n, Status: status}, nil
}

// PublishFailure stores e under [FailureKey] through c, telling every rank
// process of the job that watches the Store to stop waiting.
func PublishFailure(c store.Client, e *PeerFailedError) error {
	if err := c.Set(FailureKey, e.Value()); err != nil {
		return fmt.Errorf("publish the failure of rank %d: %w", e.Rank, err)
	}
	return nil
}

// abort is a rank's knowledge that a peer failed: a context cancelled,
// once, with the peer's [*PeerFailedError] as its cause. Its context is
// the rank's [rank.Params.Abort].
type abort struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
}

func newAbort() *abort {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &abort{ctx: ctx, cancel: cancel}
}

// fire records the failure and wakes every wait; later calls do nothing.
func (a *abort) fire(err *PeerFailedError) { a.cancel(err) }

// failureWatch is the goroutine that waits for [FailureKey] on behalf of a
// rank process.
type failureWatch struct {
	ab       *abort
	stop     chan struct{}
	stopOnce sync.Once
	exited   chan struct{} // closed when the goroutine returns
}

// watchFailures starts watching c for [FailureKey] on behalf of rank self,
// waiting up to poll per Store wait. When the key appears it fires the
// returned watch's abort and logs the failure at error level; it stops at
// that point or once stop is called.
func watchFailures(c store.Client, self int, poll time.Duration, log *zap.Logger) *failureWatch {
	if log == nil {
		log = zap.NewNop()
	}
	w := &failureWatch{ab: newAbort(), stop: make(chan struct{}), exited: make(chan struct{})}
	go w.run(c, self, poll, log)
	return w
}

func (w *failureWatch) stopped() bool {
	select {
	case <-w.stop:
		return true
	default:
		return false
	}
}

func (w *failureWatch) run(c store.Client, self int, poll time.Duration, log *zap.Logger) {
	defer close(w.exited)
	warned := false
	for !w.stopped() {
		err := c.Wait([]string{FailureKey}, poll)
		if w.stopped() {
			return
		}
		var mk *store.MissingKeysError
		if errors.As(err, &mk) {
			continue
		}
		if err == nil {
			var v []byte
			if v, err = c.Get(FailureKey); err == nil {
				pf, perr := ParsePeerFailure(v)
				if perr != nil {
					pf = &PeerFailedError{Rank: -1, Status: string(v)}
				}
				log.Error(fmt.Sprintf("rank %d: %v; aborting this rank's waits", self, pf))
				w.ab.fire(pf)
				return
			}
		}
		// The Store is unreachable or closed: the launcher is gone or the
		// rank is finishing. Retry after a pause; every wait of the rank
		// still has its own timeout.
		if !warned {
			log.Warn(fmt.Sprintf("rank %d: watching the Store for peer failures", self), zap.Error(err))
			warned = true
		}
		select {
		case <-w.stop:
			return
		case <-time.After(poll):
		}
	}
}

// Stop ends the watch; a Store wait in flight is left to finish (at most
// the poll interval) in the background.
func (w *failureWatch) Stop() { w.stopOnce.Do(func() { close(w.stop) }) }
