package race_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/device/sim/ptx"
)

// sameSlotPTX: every thread of a block of 64 but the first of each warp
// stores its index to word tid%32 with no barrier, so lane t of warp 0
// and lane t+32 of warp 1 race; each warp makes its stores in lockstep,
// in the task of its first lane.
const sameSlotPTX = `
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
	setp.ne.u32 %p1, %r2, 0;
	mul.wide.u32 %rd2, %r2, 4;
	add.s64 %rd3, %rd1, %rd2;
	@%p1 st.global.u32 [%rd3], %r1;
	ret;
}
`

// TestLockstepRacesNameTheirLanes: the races between the stores of two
// warps that each ran in lockstep (in the task of their first lane) name
// the lanes that made them, in the accesses and in the tasks' labels.
func TestLockstepRacesNameTheirLanes(t *testing.T) {
	mod, err := ptx.Parse(sameSlotPTX)
	if err != nil {
		t.Fatal(err)
	}
	for _, laneByLane := range []bool{false, true} {
		launch := ptxLaunch{mod: mod, entry: "slots", grid: 1, block: 64}
		races := launch.races(t, sim.Kernels{PTX: true, LaneByLane: laneByLane}, 1, nil)
		if len(races) == 0 {
			t.Fatalf("lane by lane %v: no race between the warps' stores", laneByLane)
		}
		for _, r := range races {
			for _, x := range []struct {
				a     sim.Access
				label actor.Label
			}{{r.First, r.FirstTask}, {r.Second, r.SecondTask}} {
				if x.label.Lane != x.a.Lane || x.label.Kind != actor.LaneTask || !strings.HasSuffix(x.label.Name, fmt.Sprintf(" lane %d", x.a.Lane)) {
					t.Errorf("lane by lane %v: the store of lane %d is reported with the task %q (lane %d)", laneByLane, x.a.Lane, x.label.Name, x.label.Lane)
				}
			}
			if r.First.Lane%32 != r.Second.Lane%32 || r.First.Lane == r.Second.Lane {
				t.Errorf("lane by lane %v: a race between lanes %d and %d, which store to different words", laneByLane, r.First.Lane, r.Second.Lane)
			}
		}
	}
}
