package fuzz

import (
	"testing"

	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/kernels"
)

// TestDefaultPTXCasesFitTheirMemory: with the kernels' PTX and the
// default sizes, every drawn case's estimated memory is within
// MaxPTXCaseMemory, and a case that had to shrink differs from its draw
// only in smaller, still aligned tensors where they were drawn. Sizes the
// user gives, and the Go twins, are drawn as they are.
func TestDefaultPTXCasesFitTheirMemory(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Kernels = sim.Kernels{PTX: true}
	gen := NewGenerator(cfg)
	shrunk := 0
	for seed := uint64(1); seed <= 400; seed++ {
		c, err := gen.Case(seed)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if e := EstimatePTXMemory(c.Program); e > MaxPTXCaseMemory {
			t.Fatalf("seed %d: estimated %d MiB: %s", seed, e>>20, c.Program)
		}
		drawn := DrawProgram(seed, nil, DefaultSizes, nil)
		if EstimatePTXMemory(drawn) > MaxPTXCaseMemory {
			shrunk++
		}
		if len(drawn.Steps) != len(c.Program.Steps) || drawn.World != c.Program.World {
			t.Fatalf("seed %d: %s became %s", seed, drawn, c.Program)
		}
		for i, s := range c.Program.Steps {
			for k, got := range s.Colls {
				want := drawn.Steps[i].Colls[k]
				if got.Bytes > want.Bytes || got.Offset != want.Offset || got.Form != want.Form || got.DType != want.DType {
					t.Fatalf("seed %d step %d: %v became %v", seed, i, want, got)
				}
				if _, err := kernels.CheckAlignment(got.Offset, got.Bytes, got.DType); err != nil {
					t.Fatalf("seed %d step %d: %v: %v", seed, i, got, err)
				}
			}
		}
	}
	if shrunk == 0 {
		t.Fatal("400 seeds drew no case past the memory bound: the test shows nothing")
	}

	// A low-latency all-reduce of 64 KiB on 8 ranks is past the bound
	// (about 640 MB live when measured): drawn with default sizes it
	// shrinks, given by the user or run by the Go twins it stays.
	p := Program{World: 8, Groups: [][]int{{0, 1, 2, 3, 4, 5, 6, 7}}, Bufs: []uint64{65600},
		Steps: []Step{{Kind: StepColl, Colls: []Coll{{Form: LL, Bytes: 65536, Offset: 16}}}}}
	if e := EstimatePTXMemory(p); e <= MaxPTXCaseMemory {
		t.Fatalf("estimate %d MiB of %s: within the bound", e>>20, p)
	}
	fit := fitPTXMemory(p, DefaultSizes, MaxPTXCaseMemory)
	if n := fit.Steps[0].Colls[0].Bytes; n != 16384 || p.Steps[0].Colls[0].Bytes != 65536 {
		t.Fatalf("fitted to %d bytes (the draw's now %d), want 16384 and the draw untouched", n, p.Steps[0].Colls[0].Bytes)
	}
	// Nothing left to shrink: the fit ends, over the bound.
	tiny := fitPTXMemory(p, DefaultSizes, 1)
	if n := tiny.Steps[0].Colls[0].Bytes; n != 4 {
		t.Fatalf("fitted to a bound of 1 byte: %d bytes, want the smallest size, 4", n)
	}
	given, twins := DefaultConfig(), DefaultConfig()
	given.Kernels, given.Sizes, given.Worlds = sim.Kernels{PTX: true}, []uint64{16384, 65536}, []int{8}
	twins.Worlds = []int{8}
	for _, c := range []Config{given, twins} {
		gen := NewGenerator(c)
		for seed := uint64(1); seed <= 40; seed++ {
			got, err := gen.Case(seed)
			if err != nil {
				t.Fatal(err)
			}
			if want := DrawProgram(seed, c.Worlds, c.Sizes, nil); got.Program.String() != want.String() {
				t.Fatalf("sizes %v, PTX %v, seed %d: %s became %s", c.Sizes, c.Kernels.PTX, seed, want, got.Program)
			}
		}
	}
}
