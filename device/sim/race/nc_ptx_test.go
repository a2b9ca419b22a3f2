package race_test

import (
	"strings"
	"testing"

	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/device/sim/ptx"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/simjob"
)

// TestNonCoherentPeerLoadsPTX runs the two-shot all-reduce in PTX mode with
// its 16-byte loads (generic ld.v4, of global memory) made ld.global.nc: its barriers order the
// peers' writes before the loads, so the run has no data race, yet the
// loads read bytes their peers wrote while the kernel ran (the peer's host
// write of its input, which no stream order puts before this rank's
// launch), which the non-coherent path may not see, and the all-gather
// then writes the peers' buffers after their loads, while their kernels
// run. Each is reported as NC, naming the write and the load's PTX line;
// the unchanged kernel is clean.
func TestNonCoherentPeerLoadsPTX(t *testing.T) {
	text, err := kernels.PTX()
	if err != nil {
		t.Fatal(err)
	}
	run := func(text string) simjob.Result {
		mod, err := ptx.Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		dev := sim.Config{Kernels: sim.Kernels{PTX: true, Module: mod}}
		return simulate(t, simjob.Config{World: 2, Seed: 2, Device: dev}, reduceLoop(twoShot, 1, 256))
	}
	clean(t, "ld.global", run(text))
	nc := strings.NewReplacer("	ld.v4.u32", "	ld.global.nc.v4.u32", "	ld.v4.f32", "	ld.global.nc.v4.f32").Replace(text)
	if nc == text {
		t.Fatal("the kernels' PTX has no ld.v4.u32 to rewrite")
	}
	rs := races(t, "ld.global.nc", run(nc))
	before, after := 0, 0
	for _, r := range rs {
		load, write, why := r.Second, r.First, "ld.global.nc reads bytes written after its kernel began"
		if r.First.NC {
			// The all-gather's write to a peer's buffer, after the peer
			// loaded it and before the peer's kernel ended.
			load, write, why = r.First, r.Second, "a write after an ld.global.nc of the same bytes, before the load's kernel ended"
			after++
		} else {
			before++
		}
		if !r.NC || !load.NC || load.Line == 0 || !write.Write || write.NC {
			t.Errorf("not a non-coherent load, with its line, of a write:\n%v", r)
		}
		if s := r.String(); !strings.HasPrefix(s, "non-coherent load of") || !strings.Contains(s, why) {
			t.Errorf("the report does not say what is wrong:\n%s", s)
		}
	}
	if before == 0 || after == 0 {
		t.Errorf("%d writes before the loads and %d after them reported, want both", before, after)
	}
}
