package sim

import "testing"

// freshPTX: every thread of a block of 64 computes its word's address in
// lockstep with its warp, then stores its index there with a strong store
// (a scheduling point), and exits.
const freshPTX = `
.version 8.0
.target sm_90
.address_size 64
.visible .entry fresh(.param .u64 p)
{
	.reg .b32 %r<2>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [p];
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.relaxed.gpu.global.u32 [%rd3], %r1;
	ret;
}
`

// runFresh runs freshPTX (lane by lane when laneByLane) and returns the
// words the threads stored and the steps of the run by the point that
// chose their task.
func runFresh(t *testing.T, seed uint64, laneByLane bool) ([]uint32, map[string]int) {
	t.Helper()
	out, s := runOnGranule(t, freshPTX, "fresh", 64, 256, seed, Kernels{PTX: true, LaneByLane: laneByLane}, nil)
	steps := map[string]int{}
	for _, e := range s.Trace().Events() {
		if e.Kind == "run" {
			steps[e.Detail]++
		}
	}
	return words(out), steps
}

// TestLanesLeftAtTheirPointTakeItAtOnce: a lane that lockstep leaves
// standing at a strong store makes the store in the first step that
// chooses it, where it used to take one step to park there and another
// to store: 2 steps park at the store (the warps' first lanes, whose
// step ran the warp in lockstep), not 64. Lane by lane, where each
// lane's first step executes its own instructions, all 64 still do. The
// threads store the same either way.
func TestLanesLeftAtTheirPointTakeItAtOnce(t *testing.T) {
	for _, c := range []struct {
		laneByLane bool
		stores     int
	}{{false, 2}, {true, 64}} {
		for seed := uint64(1); seed <= 3; seed++ {
			words, steps := runFresh(t, seed, c.laneByLane)
			if steps["ptx store"] != c.stores {
				t.Errorf("lane by lane %v, seed %d: %d steps chose a lane parked at its store, want %d (steps %v)", c.laneByLane, seed, steps["ptx store"], c.stores, steps)
			}
			for i, v := range words {
				if v != uint32(i) {
					t.Errorf("lane by lane %v, seed %d: word %d holds %d, want %d", c.laneByLane, seed, i, v, i)
					break
				}
			}
		}
	}
}
