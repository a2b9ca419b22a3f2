package cuda

import (
	"errors"
	"runtime"
	"sync"
)

// errClosed is returned by calls on a closed device.
var errClosed = errors.New("device is closed")

// worker runs closures on one goroutine locked to its OS thread, so that
// every driver call of a device runs on the thread where its context is
// current. It is safe for concurrent use.
type worker struct {
	mu     sync.RWMutex // held for reading while sending a call, for writing by stop
	closed bool
	calls  chan func()
	done   chan struct{}
}

// queueDepth is how many calls may wait for the worker before senders
// block.
const queueDepth = 256

// startWorker starts a worker whose thread first runs setup; the worker
// stops at once if setup fails.
func startWorker(setup func() error) (*worker, error) {
	w := &worker{calls: make(chan func(), queueDepth), done: make(chan struct{})}
	ready := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		defer close(w.done)
		if err := setup(); err != nil {
			ready <- err
			return
		}
		ready <- nil
		for f := range w.calls {
			f()
		}
	}()
	if err := <-ready; err != nil {
		return nil, err
	}
	return w, nil
}

// do runs f on the worker's thread and returns its error, or errClosed
// once the worker is stopped.
func (w *worker) do(f func() error) error {
	res := make(chan error, 1)
	w.mu.RLock()
	if w.closed {
		w.mu.RUnlock()
		return errClosed
	}
	w.calls <- func() { res <- f() }
	w.mu.RUnlock()
	return <-res
}

// post queues f to run on the worker's thread after the calls already
// queued, without waiting for it, or returns errClosed once the worker is
// stopped.
func (w *worker) post(f func()) error {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return errClosed
	}
	w.calls <- f
	return nil
}

// stop ends the worker after the calls already handed to it; later calls
// fail with errClosed. It reports whether this call stopped it.
func (w *worker) stop() bool {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return false
	}
	w.closed = true
	close(w.calls)
	w.mu.Unlock()
	<-w.done
	return true
}
