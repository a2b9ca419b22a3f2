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
