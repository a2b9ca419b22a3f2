package race_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/device/sim/ptx"
	"github.com/symmem/symmem/device/sim/race"
)

// warpSlotsPTX: every lane of warp 0 stores its index to word tid%32;
// the lanes of warp 1 store (st) or load (ld) the same words, with no
// barrier between the warps. Each warp makes its 32 accesses at one
// instruction in lockstep: one run of 32 granules, a lane each, which the
// detector keeps as one warp record, so lane t of one warp and lane t+32
// of the other race at word t, 32 races in all.
const warpSlotsPTX = `
.version 8.0
.target sm_90
.address_size 64
.visible .entry slots(.param .u64 p)
{
	.reg .b32 %r<4>;
	.reg .b64 %rd<4>;
	.reg .pred %p<2>;
	ld.param.u64 %rd1, [p];
	mov.u32 %r1, %tid.x;
	and.b32 %r2, %r1, 31;
	setp.lt.u32 %p1, %r1, 32;
	mul.wide.u32 %rd2, %r2, 4;
	add.s64 %rd3, %rd1, %rd2;
	@%p1 st.global.u32 [%rd3], %r1;
	@!%p1 OP
	ret;
}
`

// TestCoalescedWarpsRace: the races between two warps' coalesced
// accesses of the same words are every lane's, each named by its own
// lane (of the same word), as lane by lane: a coalesced check that took
// one lane's clock for the warp, or named the warp's first lane, fails.
// (Lane by lane, the lanes' accesses interleave, so the races may be
// listed under both orders of the two sites.)
func TestCoalescedWarpsRace(t *testing.T) {
	for _, op := range []string{"st.global.u32 [%rd3], %r1;", "ld.global.u32 %r3, [%rd3];"} {
		mod, err := ptx.Parse(strings.Replace(warpSlotsPTX, "OP", op, 1))
		if err != nil {
			t.Fatal(err)
		}
		for _, laneByLane := range []bool{false, true} {
			for seed := uint64(1); seed <= 3; seed++ {
				var det *race.Detector
				launch := ptxLaunch{mod: mod, entry: "slots", grid: 1, block: 64, zeroed: 128, det: &det}
				races := launch.races(t, sim.Kernels{PTX: true, LaneByLane: laneByLane}, seed, nil)
				what := fmt.Sprintf("%s, lane by lane %v, seed %d", op, laneByLane, seed)
				if laneByLane == (det.Coalesced() > 0) {
					t.Fatalf("%s: %d warp accesses coalesced", what, det.Coalesced())
				}
				if len(races) == 0 || total(det) != 32 {
					t.Fatalf("%s: %d races, want one a lane: 32: %v", what, total(det), races)
				}
				for _, r := range races {
					if r.First.Lane%32 != r.Second.Lane%32 || r.First.Lane == r.Second.Lane || r.Offset != uint64(r.First.Lane%32)*4 {
						t.Errorf("%s: a race between lanes %d and %d at offset %d", what, r.First.Lane, r.Second.Lane, r.Offset)
					}
					for _, x := range []struct {
						lane  int
						label string
					}{{r.First.Lane, r.FirstTask.Name}, {r.Second.Lane, r.SecondTask.Name}} {
						if !strings.HasSuffix(x.label, fmt.Sprintf(" lane %d", x.lane)) {
							t.Errorf("%s: lane %d's access is reported in task %q", what, x.lane, x.label)
						}
					}
				}
			}
		}
	}
}

// wideReadPTX: lanes 0 and 1 of warp 0 store words 0 and 1 in lockstep
// (one warp record of two lanes); lane SETTER alone then fences and sets
// a flag (word 16), and lane 32 (WAIT: after the flag and a fence) loads
// words 0 and 1 at once, 8 bytes. With the flag, the load is ordered
// after the setter's store and not the other lane's, so it races with
// the other's only: checking the load against the warp record with one
// lane's clock for both would report the setter's store or lose the
// other's, and naming the warp record's first lane would name lane 0
// where lane 1 races. Without the wait, the load races with both.
const wideReadPTX = `
.version 8.0
.target sm_90
.address_size 64
.visible .entry wide(.param .u64 p)
{
	.reg .b32 %r<8>;
	.reg .b64 %rd<6>;
	.reg .pred %p<4>;
	ld.param.u64 %rd1, [p];
	mov.u32 %r1, %tid.x;
	setp.lt.u32 %p1, %r1, 2;
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	@%p1 st.global.u32 [%rd3], %r1;
	setp.ne.u32 %p2, %r1, SETTER;
	@%p2 bra READ;
	fence.acq_rel.gpu;
	mov.u32 %r2, 1;
	st.relaxed.gpu.global.u32 [%rd1+64], %r2;
	ret;
READ:
	setp.ne.u32 %p3, %r1, 32;
	@%p3 bra DONE;
SPIN:
	WAIT
	fence.acq_rel.gpu;
	ld.global.u64 %rd4, [%rd1];
DONE:
	ret;
}
`

// TestCoalescedLanesKeepTheirClocks: a load of the bytes of a warp
// record, ordered after one of its lanes and not the other, races with
// the other lane's store only, and names that lane; unordered with both,
// it races with both.
func TestCoalescedLanesKeepTheirClocks(t *testing.T) {
	const wait = "ld.relaxed.gpu.global.u32 %r3, [%rd1+64];\n\tsetp.eq.u32 %p3, %r3, 0;\n\t@%p3 bra SPIN;"
	for _, c := range []struct {
		setter int
		flag   bool
	}{{1, true}, {0, true}, {1, false}} {
		src := strings.Replace(wideReadPTX, "SETTER", fmt.Sprint(c.setter), 1)
		if c.flag {
			src = strings.Replace(src, "WAIT", wait, 1)
		} else {
			src = strings.Replace(src, "WAIT", "", 1)
		}
		mod, err := ptx.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, laneByLane := range []bool{false, true} {
			for seed := uint64(1); seed <= 4; seed++ {
				var det *race.Detector
				launch := ptxLaunch{mod: mod, entry: "wide", grid: 1, block: 64, zeroed: 128, det: &det}
				races := launch.races(t, sim.Kernels{PTX: true, LaneByLane: laneByLane}, seed, nil)
				what := fmt.Sprintf("setter %d, wait %v, lane by lane %v, seed %d", c.setter, c.flag, laneByLane, seed)
				if laneByLane == (det.Coalesced() > 0) {
					t.Fatalf("%s: %d warp accesses coalesced", what, det.Coalesced())
				}
				want := 2 // both lanes' stores
				if c.flag {
					want = 1
				}
				if total(det) != want {
					t.Fatalf("%s: %d races, want %d: %v", what, total(det), want, races)
				}
				for _, r := range races {
					store, load := r.First, r.Second
					if !store.Write {
						store, load = load, store
					}
					if !store.Write || load.Write || load.Lane != 32 || store.Lane > 1 || c.flag && store.Lane != 1-c.setter ||
						r.Offset != uint64(store.Lane)*4 || !strings.HasSuffix(r.FirstTask.Name, fmt.Sprintf(" lane %d", r.First.Lane)) {
						t.Errorf("%s: a race between lane %d (write %v, task %s) and lane %d (write %v) at offset %d",
							what, r.First.Lane, r.First.Write, r.FirstTask.Name, r.Second.Lane, r.Second.Write, r.Offset)
					}
				}
			}
		}
	}
}

// layoutsPTX: the lanes of a block of 64 store word tid (4 bytes a lane,
// one warp record a warp); after a barrier of every thread, lanes 0 to
// 15 of each warp load 8 bytes at 8*(tid%16) + 256*(tid/32), so each
// load's bytes are two lanes' stores, some of the other warp's, and with
// LANES the lanes of warp 1 store word tid-32 before the barrier too; at
// the end, every lane stores word 2*tid again (a run of another layout).
const layoutsPTX = `
.version 8.0
.target sm_90
.address_size 64
.visible .entry layouts(.param .u64 p)
{
	.reg .b32 %r<8>;
	.reg .b64 %rd<10>;
	.reg .pred %p<4>;
	ld.param.u64 %rd1, [p];
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r1;
	setp.ge.u32 %p1, %r1, 32;
	LANES
	bar.sync 0;
	and.b32 %r2, %r1, 31;
	setp.lt.u32 %p2, %r2, 16;
	and.b32 %r3, %r1, 15;
	mul.wide.u32 %rd5, %r3, 8;
	shr.u32 %r4, %r1, 5;
	mul.wide.u32 %rd6, %r4, 192;
	add.s64 %rd7, %rd5, %rd6;
	add.s64 %rd8, %rd1, %rd7;
	@%p2 ld.global.u64 %rd9, [%rd8];
	mul.wide.u32 %rd4, %r1, 8;
	add.s64 %rd4, %rd1, %rd4;
	st.global.u32 [%rd4], %r1;
	ret;
}
`

// supersedePTX: lanes 0 and 1 store words 0 and 1 (one warp record);
// lane 1 then fences and sets a flag (word 16), and lane 32 waits for it,
// fences and stores words 0 and 1 at once (8 bytes), which supersedes
// lane 1's store (ordered before it) and not lane 0's, then sets a
// second flag (word 32) with no fence after the store; lane 33 waits for
// that flag, with no fence, and loads word 1: it races with lane 32's
// store, and lane 1's store, superseded, is no longer there to report.
// A warp state that kept the accesses its first column keeps would report
// lane 1's store too.
const supersedePTX = `
.version 8.0
.target sm_90
.address_size 64
.visible .entry supersede(.param .u64 p)
{
	.reg .b32 %r<8>;
	.reg .b64 %rd<6>;
	.reg .pred %p<4>;
	ld.param.u64 %rd1, [p];
	mov.u32 %r1, %tid.x;
	setp.lt.u32 %p1, %r1, 2;
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	@%p1 st.global.u32 [%rd3], %r1;
	setp.ne.u32 %p2, %r1, 1;
	@%p2 bra L32;
	fence.acq_rel.gpu;
	mov.u32 %r2, 1;
	st.relaxed.gpu.global.u32 [%rd1+64], %r2;
	ret;
L32:
	setp.ne.u32 %p3, %r1, 32;
	@%p3 bra L33;
S1:
	ld.relaxed.gpu.global.u32 %r3, [%rd1+64];
	setp.eq.u32 %p3, %r3, 0;
	@%p3 bra S1;
	fence.acq_rel.gpu;
	mov.b64 %rd4, 7;
	st.global.u64 [%rd1], %rd4;
	mov.u32 %r2, 1;
	st.relaxed.gpu.global.u32 [%rd1+128], %r2;
	ret;
L33:
	setp.ne.u32 %p3, %r1, 33;
	@%p3 bra DONE;
S2:
	ld.relaxed.gpu.global.u32 %r4, [%rd1+128];
	setp.eq.u32 %p3, %r4, 0;
	@%p3 bra S2;
	ld.global.u32 %r5, [%rd1+4];
DONE:
	ret;
}
`

// TestWarpRecordsKeepTheVerdicts runs kernels whose warps make plain
// accesses in lockstep twice on one schedule: with warp records (the
// detector takes each warp's accesses as one event) and with the same
// accesses handed to it lane by lane. The races must be the same, in
// the same order, with the same repeats: the lane-by-lane checks are the
// oracle of the warp records, their splits and their column checks.
func TestWarpRecordsKeepTheVerdicts(t *testing.T) {
	kernels := []struct {
		src, entry  string
		grid, block int
	}{
		{laneClocksPTX, "clocks", 1, 64},
		{sameSlotPTX, "slots", 1, 64},
		{strings.Replace(warpSlotsPTX, "OP", "st.global.u32 [%rd3], %r1;", 1), "slots", 1, 64},
		{strings.Replace(warpSlotsPTX, "OP", "ld.global.u32 %r3, [%rd3];", 1), "slots", 1, 64},
		{strings.Replace(strings.Replace(wideReadPTX, "SETTER", "0", 1), "WAIT", "", 1), "wide", 1, 64},
		{strings.Replace(layoutsPTX, "LANES", "", 1), "layouts", 1, 64},
		{supersedePTX, "supersede", 1, 64},
		{strings.Replace(layoutsPTX, "LANES", "add.s64 %rd9, %rd3, -128;\n\t@%p1 st.global.u32 [%rd9], %r1;", 1), "layouts", 1, 64},
		{seenPTX, "seen", 2, 64},
		{broadcastPTX, "bcast", 1, 128},
		{broadcastPTX, "bcast", 2, 128},
	}
	for k, c := range kernels {
		mod, err := ptx.Parse(c.src)
		if err != nil {
			t.Fatalf("kernel %d: %v", k, err)
		}
		for seed := uint64(1); seed <= 4; seed++ {
			var warp, lanes *race.Detector
			launch := ptxLaunch{mod: mod, entry: c.entry, grid: c.grid, block: c.block, zeroed: 1024, det: &warp}
			got := launch.races(t, sim.Kernels{PTX: true}, seed, nil)
			launch.det, launch.laneEvents = &lanes, true
			want := launch.races(t, sim.Kernels{PTX: true}, seed, nil)
			if warp.Coalesced()+warp.Broadcasts() == 0 || lanes.Coalesced()+lanes.Broadcasts() != 0 {
				t.Fatalf("kernel %d, seed %d: %d warp accesses coalesced and %d broadcast loads checked at once with warp records, %d and %d without",
					k, seed, warp.Coalesced(), warp.Broadcasts(), lanes.Coalesced(), lanes.Broadcasts())
			}
			if total(warp) != total(lanes) || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("kernel %d, seed %d: %d races with warp records, %d lane by lane:\n%v\nlane by lane:\n%v", k, seed, total(warp), total(lanes), got, want)
			}
		}
	}
}
