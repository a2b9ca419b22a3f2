package race_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/device/sim/ptx"
	"github.com/symmem/symmem/device/sim/race"
)

// seenPTX: in block 1, lane 0 sets word 0 (st.relaxed); in block 0, lane
// 0 polls it (ld.relaxed) until it sees the store, and after a barrier
// every lane of warp 0 loads word 0 with a plain load, at one instruction
// in lockstep: a broadcast load. Nothing orders block 1's store before
// the plain loads, but lane 0's thread (whose slot its thread after the
// barrier keeps) observed it, so every lane's load races with it but
// lane 0's: 31 races, the first one reported named by lane 1. A
// broadcast check that took lane 0's view for the warp loses the races;
// one that named the warp's first lane, or gave every lane its record,
// names lane 0.
const seenPTX = `
.version 8.0
.target sm_90
.address_size 64
.visible .entry seen(.param .u64 p)
{
	.reg .b32 %r<8>;
	.reg .b64 %rd<4>;
	.reg .pred %p<4>;
	ld.param.u64 %rd1, [p];
	mov.u32 %r1, %tid.x;
	mov.u32 %r2, %ctaid.x;
	setp.eq.u32 %p1, %r2, 1;
	@%p1 bra WRITER;
	setp.ne.u32 %p2, %r1, 0;
	@%p2 bra BAR;
SPIN:
	ld.relaxed.gpu.global.u32 %r3, [%rd1];
	setp.eq.u32 %p3, %r3, 0;
	@%p3 bra SPIN;
BAR:
	bar.sync 0;
	setp.ge.u32 %p2, %r1, 32;
	@%p2 bra DONE;
	ld.global.u32 %r4, [%rd1];
	ret;
WRITER:
	setp.ne.u32 %p2, %r1, 0;
	@%p2 bra DONE;
	mov.u32 %r5, 1;
	st.relaxed.gpu.global.u32 [%rd1], %r5;
DONE:
	ret;
}
`

// TestBroadcastLoadsRace: the loads of a word by every lane of a warp,
// checked at once, race with a write as each lane's load does, and the
// race names the lane that makes it.
func TestBroadcastLoadsRace(t *testing.T) {
	mod, err := ptx.Parse(seenPTX)
	if err != nil {
		t.Fatal(err)
	}
	for _, laneEvents := range []bool{false, true} {
		for seed := uint64(1); seed <= 4; seed++ {
			var det *race.Detector
			races := ptxLaunch{mod: mod, entry: "seen", grid: 2, block: 64, zeroed: 64, det: &det, laneEvents: laneEvents}.races(t, sim.Kernels{PTX: true}, seed, nil)
			what := fmt.Sprintf("lane events %v, seed %d", laneEvents, seed)
			if laneEvents == (det.Broadcasts() > 0) {
				t.Fatalf("%s: %d broadcast loads checked at once", what, det.Broadcasts())
			}
			if len(races) != 1 || total(det) != 31 {
				t.Fatalf("%s: %d races (%d listed), want 31, every lane's of warp 0 of block 0 but lane 0's: %v", what, total(det), len(races), races)
			}
			r := races[0]
			if r.First.Block != 1 || r.First.Lane != 0 || r.Second.Block != 0 || r.Second.Lane != 1 {
				t.Errorf("%s: the race is between block %d lane %d and block %d lane %d, want block 1 lane 0 and block 0 lane 1",
					what, r.First.Block, r.First.Lane, r.Second.Block, r.Second.Lane)
			}
			if !strings.HasSuffix(r.SecondTask.Name, fmt.Sprintf(" lane %d", r.Second.Lane)) {
				t.Errorf("%s: lane %d's load is reported in task %q", what, r.Second.Lane, r.SecondTask.Name)
			}
		}
	}
}

// broadcastPTX, a block of 128: warps 0 and 1 load word 0, every lane
// (two broadcast loads), while lane 96 stores it (64 races). After a
// barrier, warps 0, 1 and 2 load word 0 (warps 0 and 1 find the loads of
// the threads whose slots their lanes took over, and every load leaves
// the list of the word's accesses without the earlier loads, ordered
// before them), and lane 97 stores it (96 races); warp 3 loads word 1
// twice (the second load finds the warp's own reads, made since its
// lanes started). Each load ends its path (a load followed by a store may
// be one the model reorders, which a warp makes lane by lane).
const broadcastPTX = `
.version 8.0
.target sm_90
.address_size 64
.visible .entry bcast(.param .u64 p)
{
	.reg .b32 %r<8>;
	.reg .b64 %rd<4>;
	.reg .pred %p<4>;
	ld.param.u64 %rd1, [p];
	mov.u32 %r1, %tid.x;
	setp.ge.u32 %p1, %r1, 64;
	@%p1 bra W;
	ld.global.u32 %r2, [%rd1];
	bar.sync 0;
	ld.global.u32 %r6, [%rd1];
	bra.uni DONE;
W:
	setp.eq.u32 %p2, %r1, 96;
	@%p2 st.global.u32 [%rd1], %r1;
	bar.sync 0;
	setp.ge.u32 %p3, %r1, 96;
	@%p3 bra TWICE;
	ld.global.u32 %r3, [%rd1];
	bra.uni DONE;
TWICE:
	setp.eq.u32 %p2, %r1, 97;
	@%p2 st.global.u32 [%rd1], %r1;
	ld.global.u32 %r4, [%rd1+4];
	ld.global.u32 %r5, [%rd1+4];
DONE:
	ret;
}
`
