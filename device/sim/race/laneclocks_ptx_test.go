package race_test

import (
	"testing"

	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/device/sim/ptx"
)

// laneClocksPTX: lanes 0 and 1 of warp 0 store to words 0 and 1 in
// lockstep (one warp instruction, from one snapshot of the block's
// clock); then lane 1 alone fences and sets a flag (word 16), and lane 32,
// of warp 1, waits for the flag, fences and loads both words. The flag
// orders lane 1's store before the loads, and nothing orders lane 0's:
// lanes 0 and 1 made their stores at one instruction but their clocks
// differ afterwards, so only the load of word 0 races. Lanes 2 to 31 and
// 33 to 63 do nothing: their threads never start.
const laneClocksPTX = `
.version 8.0
.target sm_90
.address_size 64
.visible .entry clocks(.param .u64 p)
{
	.reg .b32 %r<8>;
	.reg .b64 %rd<4>;
	.reg .pred %p<4>;
	ld.param.u64 %rd1, [p];
	mov.u32 %r1, %tid.x;
	setp.lt.u32 %p1, %r1, 2;
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	@%p1 st.global.u32 [%rd3], %r1;
	setp.ne.u32 %p2, %r1, 1;
	@%p2 bra WAIT;
	fence.acq_rel.gpu;
	mov.u32 %r2, 1;
	st.relaxed.gpu.global.u32 [%rd1+64], %r2;
	ret;
WAIT:
	setp.ne.u32 %p3, %r1, 32;
	@%p3 bra DONE;
SPIN:
	ld.relaxed.gpu.global.u32 %r3, [%rd1+64];
	setp.eq.u32 %p3, %r3, 0;
	@%p3 bra SPIN;
	fence.acq_rel.gpu;
	ld.global.u32 %r4, [%rd1];
	ld.global.u32 %r5, [%rd1+4];
DONE:
	ret;
}
`

// TestLockstepLanesKeepTheirClocks: accesses that lanes of one warp make
// at one instruction in lockstep are each the lane's own, at the lane's
// own clock: a reader ordered after one lane's store but not its warp
// mate's races with the mate's store only, and the race names lanes 0
// and 32. A detector that reported the warp's stores as one access of
// one clock would lose that race or report one with lane 1's store.
func TestLockstepLanesKeepTheirClocks(t *testing.T) {
	mod, err := ptx.Parse(laneClocksPTX)
	if err != nil {
		t.Fatal(err)
	}
	for _, laneByLane := range []bool{false, true} {
		for seed := uint64(1); seed <= 4; seed++ {
			launch := ptxLaunch{mod: mod, entry: "clocks", grid: 1, block: 64, zeroed: 128}
			races := launch.races(t, sim.Kernels{PTX: true, LaneByLane: laneByLane}, seed, nil)
			if len(races) != 1 {
				t.Fatalf("lane by lane %v, seed %d: %d races, want 1 (lane 0's store and lane 32's load of word 0): %v", laneByLane, seed, len(races), races)
			}
			r := races[0]
			if r.First.Lane != 0 || !r.First.Write || r.Second.Lane != 32 || r.Second.Write || r.Offset != 0 {
				t.Errorf("lane by lane %v, seed %d: race between lane %d (write %v) and lane %d (write %v) at offset %d, want lane 0's store and lane 32's load at 0",
					laneByLane, seed, r.First.Lane, r.First.Write, r.Second.Lane, r.Second.Write, r.Offset)
			}
		}
	}
}
