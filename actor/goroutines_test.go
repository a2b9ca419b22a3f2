package actor

import (
	"runtime"
	"testing"
	"time"
)

// noGoroutinesLeft fails t when more goroutines than before still run 5
// seconds from now (those that end meanwhile are waited for); after says
// what ran.
func noGoroutinesLeft(t *testing.T, before int, after string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines before, %d after %s", before, n, after)
	}
}
