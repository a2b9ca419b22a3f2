// Package livetest holds what tests of several packages need around the
// live (goroutine) runtime: an in-process Store and bounded waits. Only
// tests import it.
package livetest

import (
	"testing"
	"time"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/actor/store"
)

// Store serves an in-process Store on goroutines for the test's duration.
func Store(t testing.TB) *store.Server {
	t.Helper()
	srv, err := store.NewServer(actor.NewLive(), actor.NewSystem())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// Within fails the test unless ch yields within d, naming what was awaited.
func Within[T any](t testing.TB, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("%s: nothing after %v", what, d)
	}
	var zero T
	return zero
}
