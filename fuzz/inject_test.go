package fuzz

import (
	"testing"

	"github.com/symmem/symmem/actor"
)

// TestInjectorOwnsItsStreamsWorkers: a stream worker becomes the
// injector's once the injector takes its stream, even when its task was
// asked about (and cached as not its own) before; fault tasks always are.
func TestInjectorOwnsItsStreamsWorkers(t *testing.T) {
	s := actor.NewScheduler(actor.Config{Seed: 1})
	in := newInjector(nil, 2)
	worker := s.SpawnLabeled(actor.Label{Kind: actor.StreamTask, Device: 1, Stream: 5}, func() {})
	other := s.SpawnLabeled(actor.Label{Kind: actor.StreamTask, Device: 0, Stream: 5}, func() {})
	fault := s.SpawnLabeled(actor.Label{Kind: actor.FaultTask}, func() {})
	if in.own(worker) || in.own(other) || !in.own(fault) {
		t.Fatalf("before: own(worker)=%v own(other)=%v own(fault)=%v, want false false true", in.own(worker), in.own(other), in.own(fault))
	}
	in.addOwnStream(1, 5)
	if !in.own(worker) || in.own(other) {
		t.Fatalf("after taking device 1's stream 5: own(worker)=%v own(other)=%v, want true false", in.own(worker), in.own(other))
	}
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
}
