package rank

import (
	"context"
	"fmt"
	"time"

	"github.com/symmem/symmem/actor/store"
)

// abortClient is a Store client whose blocking calls (Get, Wait) return the
// cause of the rank's abort (a launcher-reported peer failure) as soon as
// it fires, instead of waiting for the missing keys until the timeout.
type abortClient struct {
	store.Client
	abort context.Context
}

// Abortable wraps c so that its blocking calls (Get, Wait) give up once
// abort is done, returning its cause wrapped with what was waited for. A
// rank wraps its Store client so when [Params.Abort] is set; a launched
// rank process also wraps the client it joins the job with.
func Abortable(c store.Client, abort context.Context) store.Client {
	return &abortClient{Client: c, abort: abort}
}

// describeKeys names the keys a wait was for, eliding long lists.
func describeKeys(keys []string) string {
	if len(keys) <= 4 {
		return fmt.Sprintf("%q", keys)
	}
	return fmt.Sprintf("%q and %d more", keys[:4], len(keys)-4)
}

// untilAbort runs call in the background and returns its error, or the
// cause of ctx wrapped with what was waited for if ctx is done first. A
// call left behind finishes (at its own timeout) on its own.
func untilAbort(ctx context.Context, what string, call func() error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", what, context.Cause(ctx))
	}
	done := make(chan error, 1)
	go func() { done <- call() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", what, context.Cause(ctx))
	}
}

// Get implements store.Client.
func (a *abortClient) Get(key string) ([]byte, error) {
	var v []byte
	err := untilAbort(a.abort, fmt.Sprintf("store get %q", key), func() error {
		var err error
		v, err = a.Client.Get(key)
		return err
	})
	if err != nil {
		return nil, err
	}
	return v, nil
}

// Wait implements store.Client.
func (a *abortClient) Wait(keys []string, timeout time.Duration) error {
	return untilAbort(a.abort, "store wait for "+describeKeys(keys), func() error { return a.Client.Wait(keys, timeout) })
}

// waitStream waits for the work queued on the rank's stream. Ranks with an
// abort context ([Params.Abort]: the ranks of a launched job) stop waiting
// as soon as it is done and return its cause (a peer's failure); the
// kernel keeps running on the device until its own timeout. Other ranks
// (the simulator, ranks of one process) synchronize directly, on the
// calling task, which keeps simulations deterministic.
func (r *Rank) waitStream() error {
	if r.abort == nil {
		return r.dev.Synchronize(r.stream)
	}
	return untilAbort(r.abort, fmt.Sprintf("wait for the work on stream %d", r.stream), func() error {
		return r.dev.Synchronize(r.stream)
	})
}
