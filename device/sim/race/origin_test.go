package race

import (
	"testing"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/device/sim"
)

// TestOriginMade checks origin.made against comparing whole origins: an
// access differing from the one an origin was made of in any field an
// origin keeps is not made by it; one differing elsewhere is.
func TestOriginMade(t *testing.T) {
	base := sim.Access{Task: 3, Parent: -1, Device: 1, Stream: device.Stream(2), Seq: 7, Op: "kernel",
		Kernel: "one_shot_all_reduce", Launch: 9, Block: 1, Lane: 5, Addr: 0x100, Size: 16}
	label := &actor.Label{}
	o := originOf(&base, label)
	changes := []func(a *sim.Access){
		func(a *sim.Access) { a.Task++ },
		func(a *sim.Access) { a.Parent++ },
		func(a *sim.Access) { a.Device++ },
		func(a *sim.Access) { a.Stream++ },
		func(a *sim.Access) { a.Seq++ },
		func(a *sim.Access) { a.Op = "copy" },
		func(a *sim.Access) { a.Kernel = "two_shot_all_reduce" },
		func(a *sim.Access) { a.Launch++ },
		func(a *sim.Access) { a.Block++ },
		func(a *sim.Access) { a.Lane++ },
		func(a *sim.Access) { a.Addr += 16 }, // not part of an origin
		func(a *sim.Access) { a.Size = 8 },   // nor this
	}
	for i, change := range changes {
		a := base
		change(&a)
		if got, want := o.made(&a, label), o == originOf(&a, label); got != want {
			t.Errorf("change %d: made = %v, whole origins equal = %v", i, got, want)
		}
	}
	if !o.made(&base, label) {
		t.Error("an origin is not made of the access it was built from")
	}
	// Op and Kernel equal in text but not in storage are the same.
	a := base
	a.Kernel = string([]byte("one_shot_all_reduce"))
	if !o.made(&a, label) {
		t.Error("a kernel name equal in text makes another origin")
	}
	if o.made(&base, &actor.Label{}) {
		t.Error("another task's label makes the same origin")
	}
}

// TestEndedLaneThreadReused: a lane's thread that ended is reused for a
// later thread, which starts afresh: a lane of another block that reads
// what the ended lane wrote, unordered with it, races with it.
func TestEndedLaneThreadReused(t *testing.T) {
	d := newBare(t)
	op := sim.Access{Parent: -1, Device: 0, Stream: 1, Seq: 1, Op: "kernel", Kernel: "k", Launch: 1, Block: -1, Lane: -1}
	ev := func(a sim.Access, kind sim.AccessKind, task, parent int) sim.Access {
		a.Kind, a.Task, a.Parent = kind, task, parent
		d.observe(&a)
		a.Parent = -1
		return a
	}
	ev(op, sim.Enqueue, 0, -1)
	ev(op, sim.OpStart, 1, -1)
	mem := func(a sim.Access, write bool) {
		a.Kind, a.Write, a.Phys, a.Addr, a.Size = sim.Load, write, 1, 0x1000, 4
		if write {
			a.Kind = sim.Store
		}
		d.observe(&a)
	}
	// lane runs a block of one lane that accesses the word, and returns
	// the threads of the block and the lane.
	lane := func(block, blockTask, laneTask int, write bool) (*thread, *thread) {
		b := op
		b.Block = block
		b = ev(b, sim.BlockStart, blockTask, 1)
		bt := d.thread(blockTask)
		l := b
		l.Lane = 0
		l = ev(l, sim.LaneStart, laneTask, blockTask)
		th := d.thread(laneTask)
		mem(l, write)
		ev(l, sim.LaneEnd, laneTask, -1)
		ev(b, sim.BlockEnd, blockTask, -1)
		return bt, th
	}
	_, first := lane(0, 2, 3, true)
	if d.Err() != nil {
		t.Fatalf("a lone write races: %v", d.Err())
	}
	block, second := lane(1, 4, 5, false)
	if block != first && second != first {
		t.Error("the first lane's thread, ended, was not reused")
	}
	if d.Err() == nil {
		t.Error("a read unordered with another block's write does not race")
	}
}
