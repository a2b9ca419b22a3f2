package fuzz

import (
	"testing"

	"github.com/symmem/symmem/actor"
)

// TestInjectorOwnsItsStreamsWorkers: a stream worker becomes the
// injector's once the injector takes its stream, even when its task was
// seen (as not its own) before; fault tasks always are. The prompt
// strategy finds the first of them in a runnable set.
func TestInjectorOwnsItsStreamsWorkers(t *testing.T) {
	s := actor.NewScheduler(actor.Config{Seed: 1})
	in := newInjector(nil, 2)
	p := &promptStrategy{in: in, seen: -1}
	prog := s.SpawnLabeled(actor.Label{Kind: actor.ProgramTask}, func() {})
	worker := s.SpawnLabeled(actor.Label{Kind: actor.StreamTask, Device: 1, Stream: 5}, func() {})
	other := s.SpawnLabeled(actor.Label{Kind: actor.StreamTask, Device: 0, Stream: 5}, func() {})
	fault := s.SpawnLabeled(actor.Label{Kind: actor.FaultTask}, func() {})
	all := []*actor.Task{prog, worker, other, fault}
	if got := p.firstOwn(all); got != 3 {
		t.Fatalf("before: first own task at %d, want 3 (the fault task)", got)
	}
	if got := p.firstOwn(all[:3]); got != -1 {
		t.Fatalf("before, without the fault task: first own task at %d, want none", got)
	}
	in.addOwnStream(1, 5)
	if got := p.firstOwn(all); got != 1 {
		t.Fatalf("after taking device 1's stream 5: first own task at %d, want 1 (its worker)", got)
	}
	if got := p.firstOwn([]*actor.Task{prog, other}); got != -1 {
		t.Fatalf("after, without the worker and the fault task: first own task at %d, want none", got)
	}
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
}
