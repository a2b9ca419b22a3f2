package sim

import (
	"reflect"
	"testing"

	"github.com/symmem/symmem/actor"
)

// warpPTX: every thread of a block of 64 loads the pointer at word 32
// (each lane the same bytes), loads word tid, and stores it to word
// 40+tid: plain accesses each warp makes in lockstep, some a run of lane
// after lane, some all of one word.
const warpPTX = `
.version 8.0
.target sm_90
.address_size 64
.visible .entry warp(.param .u64 p)
{
	.reg .b32 %r<4>;
	.reg .b64 %rd<6>;
	ld.param.u64 %rd1, [p];
	mov.u32 %r1, %tid.x;
	ld.global.u64 %rd4, [%rd1+128];
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	ld.global.u32 %r2, [%rd3];
	add.s64 %rd5, %rd3, 160;
	st.global.u32 [%rd5], %r2;
	ret;
}
`

// runWarp runs warpPTX with seed, observing accesses with Observe and,
// when warps, warp accesses with ObserveWarp; it returns every memory
// access of the kernel as Observe would get them, the warp accesses
// (their lane counts), and the trace hash.
func runWarp(t *testing.T, seed uint64, warps bool) ([]Access, []int, string) {
	t.Helper()
	var seen []Access
	var lanes []int
	g := granuleLaunch{src: warpPTX, entry: "warp", grid: 1, block: 64, cfg: Config{Kernels: Kernels{PTX: true}},
		setup: func(w *World) {
			w.Observe(func(a *Access) {
				if a.Kernel != "" && (a.Kind == Load || a.Kind == Store) {
					seen = append(seen, *a)
				}
			})
			if warps {
				w.ObserveWarp(func(wa *WarpAccess) {
					lanes = append(lanes, len(wa.Lanes))
					for i := range wa.Lanes {
						seen = append(seen, wa.Lane(i))
					}
				})
			}
		}}
	s, err := g.run(t, seed)
	if err != nil {
		t.Fatal(err)
	}
	return seen, lanes, s.Trace().Hash()
}

// TestWarpAccessesAreTheLanes: with ObserveWarp, the plain accesses a
// warp makes at one instruction in lockstep come as one WarpAccess each
// (here 6: three instructions of two warps, 32 lanes each), whose lanes
// are, in order, the accesses Observe alone gets; the trace is the same.
func TestWarpAccessesAreTheLanes(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		want, none, wantHash := runWarp(t, seed, false)
		got, lanes, hash := runWarp(t, seed, true)
		if len(none) != 0 {
			t.Fatalf("seed %d: warp accesses without ObserveWarp: %v", seed, none)
		}
		if !reflect.DeepEqual(lanes, []int{32, 32, 32, 32, 32, 32}) {
			t.Errorf("seed %d: warp accesses of %v lanes, want 6 of 32", seed, lanes)
		}
		if len(want) != 3*64 || !reflect.DeepEqual(got, want) {
			t.Errorf("seed %d: %d accesses through warp accesses, %d without (want %d), or they differ", seed, len(got), len(want), 3*64)
		}
		if hash != wantHash {
			t.Errorf("seed %d: trace %s with warp accesses, %s without", seed, hash, wantHash)
		}
	}
}

// TestObserveEndsWarpAccesses: an observer installed with Observe after
// ObserveWarp gets every access itself.
func TestObserveEndsWarpAccesses(t *testing.T) {
	s := actor.NewScheduler(actor.Config{Seed: 1})
	w, err := NewWorld(s, Config{World: 1, Kernels: Kernels{PTX: true}})
	if err != nil {
		t.Fatal(err)
	}
	w.ObserveWarp(func(*WarpAccess) {})
	w.Observe(func(*Access) {})
	if w.observeWarp != nil {
		t.Error("ObserveWarp's function stayed installed after Observe")
	}
}
