package race_test

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/device/sim/ptx"
	"github.com/symmem/symmem/device/sim/race"
)

// olderFlagPTX is message passing whose flag may be read old. Block 0
// stores the flag relaxed (1), the data plainly, the flag with release
// (2), then sets done. Block 1 waits for done (relaxed: it orders
// nothing), so the writer has finished, then loads the flag with acquire
// and the data plainly, and stores both at out. The acquire may return
// the flag's newest store (2), which synchronises with it, or an older
// one (1, or the 0 of the memset before the launch), which orders nothing:
// then the data load races with the writer's data store.
const olderFlagPTX = `
.version 8.0
.target sm_90
.address_size 64
.visible .entry mp(.param .u64 mp_param_0)
{
	.reg .b32 %r<8>;
	.reg .b64 %rd<2>;
	.reg .pred %p<3>;
	ld.param.u64 %rd1, [mp_param_0];
	mov.u32 %r1, %ctaid.x;
	setp.eq.u32 %p1, %r1, 1;
	@%p1 bra READ;
	mov.u32 %r2, 1;
	st.relaxed.gpu.global.u32 [%rd1], %r2;
	mov.u32 %r3, 42;
	st.global.u32 [%rd1+16], %r3;
	mov.u32 %r2, 2;
	st.release.gpu.global.u32 [%rd1], %r2;
	mov.u32 %r2, 1;
	st.relaxed.gpu.global.u32 [%rd1+32], %r2;
	ret;
READ:
	ld.relaxed.gpu.global.u32 %r4, [%rd1+32];
	setp.ne.u32 %p2, %r4, 1;
	@%p2 bra READ;
	ld.acquire.gpu.global.u32 %r5, [%rd1];
	ld.global.u32 %r6, [%rd1+16];
	st.global.u32 [%rd1+48], %r5;
	st.global.u32 [%rd1+52], %r6;
	ret;
}
`

// Offsets in the allocation olderFlagPTX runs on.
const (
	mpFlag = 0
	mpData = 16
	mpOut  = 48
)

// runOlderFlag runs olderFlagPTX with seed under the race detector and
// returns the flag and data the reader loaded and the races reported.
func runOlderFlag(t *testing.T, mod *ptx.Module, seed uint64) (flag, data uint32, races []race.Race) {
	t.Helper()
	launch := ptxLaunch{mod: mod, entry: "mp", grid: 2, block: 1, zeroed: 64}
	races = launch.races(t, sim.Kernels{PTX: true}, seed, func(d device.Device, st device.Stream, p device.Ptr) error {
		var b [8]byte
		if err := d.Read(st, b[:], p+mpOut); err != nil {
			return err
		}
		flag, data = binary.LittleEndian.Uint32(b[:]), binary.LittleEndian.Uint32(b[4:])
		return nil
	})
	return flag, data, races
}

// TestAcquireOfOlderStorePTX: the simulator tells the race detector which
// store each strong load returned. When the reader's acquire of the flag
// returned the releasing store, the data load is ordered after the
// writer's data store (and reads 42); when it returned an older store,
// the data load races with that store, and the detector says so.
func TestAcquireOfOlderStorePTX(t *testing.T) {
	mod, err := ptx.Parse(olderFlagPTX)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint32]int{}
	for seed := uint64(0); seed < 24; seed++ {
		flag, data, races := runOlderFlag(t, mod, seed)
		seen[flag]++
		onData := 0
		for _, r := range races {
			if r.Offset != mpData {
				t.Fatalf("seed %d: a race off the data:\n%v", seed, r)
			}
			onData++
		}
		switch flag {
		case 2:
			if onData != 0 || data != 42 {
				t.Fatalf("seed %d: the acquire read the releasing store, yet data %d, races %v", seed, data, races)
			}
		case 0, 1:
			if onData == 0 {
				t.Fatalf("seed %d: the acquire read the older flag store %d: no race reported on the data", seed, flag)
			}
		default:
			t.Fatalf("seed %d: read flag %d, never stored", seed, flag)
		}
	}
	if seen[2] == 0 || seen[0]+seen[1] == 0 {
		t.Errorf("flags read over 24 seeds: %v; want both the newest store and an older one", fmt.Sprint(seen))
	}
}
