package race_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/device/sim/race"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/signal"
	"github.com/symmem/symmem/simjob"
)

// signalProgram rendezvouses a small buffer on the world and runs body.
func signalProgram(body func(r *rank.Rank, h *rank.SymmetricMemory) error) rank.Program {
	return func(r *rank.Rank) error {
		buf, err := r.Alloc(64)
		if err != nil {
			return err
		}
		defer r.Free(buf)
		h, err := r.Rendezvous(buf, rank.WorldGroup)
		if err != nil {
			return err
		}
		return body(r, h)
	}
}

// TestDeadlockGraphHasCycle: two ranks that both wait, with no timeout,
// for the other's put form a cycle; each wait names its slot, what it
// holds and needs, and who must put.
func TestDeadlockGraphHasCycle(t *testing.T) {
	res, err := simjob.Simulate(simjob.Config{World: 2, Seed: 1}, signalProgram(func(r *rank.Rank, h *rank.SymmetricMemory) error {
		return h.WaitSignal(1-r.ID(), 2, 0)
	}))
	var dl *actor.DeadlockError
	if !errors.As(err, &dl) {
		t.Fatalf("Simulate = %v, want a deadlock", err)
	}
	g := res.Hang
	if g == nil || g.Cause != "deadlock" || len(g.Waits) != 2 {
		t.Fatalf("wait-for graph %v, want the two deadlocked waits", g)
	}
	for i, w := range g.Waits {
		s := w.Slot
		if !w.Decoded || s.Op != signal.Wait || s.Rank != w.Device || s.Peer != 1-w.Device || s.Channel != 2 ||
			s.Pad != w.Device || s.Index != 2*2+s.Peer || w.Expect != signal.Raised || w.Value != signal.Idle ||
			w.PeerDevice != 1-w.Device || w.World != 2 {
			t.Errorf("wait %d: %+v", i, w)
		}
	}
	if !reflect.DeepEqual(g.Cycle, []int{0, 1, 0}) {
		t.Errorf("cycle %v, want [0 1 0]", g.Cycle)
	}
	if len(g.Others) == 0 {
		t.Errorf("the hosts waiting for their streams are not listed")
	}
	text := g.String()
	for _, s := range []string{"wait by rank 0 of 2 on channel 2, pad of rank 0 slot 5 holds 0, needs 1: rank 1 (device 1) must put",
		"cycle: device 0 -> device 1 -> device 0", "also blocked: task"} {
		if !strings.Contains(text, s) {
			t.Errorf("graph text lacks %q:\n%s", s, text)
		}
	}
}

// TestTimeoutGraph: a put that cannot proceed because the receiver never
// consumed the previous signal times out; the graph at that moment names
// the receiver as the one that must wait, and there is no cycle.
func TestTimeoutGraph(t *testing.T) {
	res, err := simjob.Simulate(simjob.Config{World: 2, Seed: 1}, signalProgram(func(r *rank.Rank, h *rank.SymmetricMemory) error {
		if r.ID() != 1 {
			return nil
		}
		if err := h.PutSignal(0, 1, time.Second); err != nil {
			return err
		}
		return h.PutSignal(0, 1, time.Second)
	}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Errs[1] == nil {
		t.Fatal("the second put did not time out")
	}
	g := res.Hang
	if g == nil || g.Cause != "signal timeout" || len(g.Waits) != 1 || g.Cycle != nil {
		t.Fatalf("wait-for graph %v, want the one timed-out put and no cycle", g)
	}
	w := g.Waits[0]
	if !w.TimedOut || w.Slot.Op != signal.Put || w.Slot.Pad != 0 || w.PeerDevice != 0 || w.Expect != signal.Idle ||
		w.Value != signal.Raised || g.At < w.Since+time.Second {
		t.Fatalf("wait %+v at %v", w, g.At)
	}
	if text := g.String(); !strings.Contains(text, "rank 0 (device 0) must wait (consume the previous signal)") {
		t.Errorf("graph text:\n%s", text)
	}
}

// TestWaitForCycleSearch: the cycle search on hand-made waits.
func TestWaitForCycleSearch(t *testing.T) {
	wait := func(task, dev, peer int) sim.SignalWait {
		return sim.SignalWait{Task: task, Device: dev, Owner: dev, Decoded: true, PeerDevice: peer,
			Slot: signal.Slot{Op: signal.Wait, Rank: dev, Peer: peer, Pad: dev}}
	}
	for _, c := range []struct {
		waits []sim.SignalWait
		cycle []int
	}{
		{[]sim.SignalWait{wait(1, 0, 1), wait(2, 1, 2)}, nil},
		{[]sim.SignalWait{wait(1, 0, 1), wait(2, 1, 2), wait(3, 2, 1)}, []int{1, 2, 1}},
		{[]sim.SignalWait{wait(1, 3, 0), wait(2, 0, 2), wait(3, 2, 3), wait(4, 2, 1)}, []int{0, 2, 3, 0}},
		{nil, nil},
	} {
		g := race.NewWaitFor("deadlock", 0, c.waits, nil)
		if !reflect.DeepEqual(g.Cycle, c.cycle) {
			t.Errorf("waits %v: cycle %v, want %v", c.waits, g.Cycle, c.cycle)
		}
		if len(g.Edges) != len(c.waits) {
			t.Errorf("%d edges for %d waits", len(g.Edges), len(c.waits))
		}
	}
}
