package rank

import (
	"math"
	"testing"
)

// TestEstimateSimMemory: the estimate grows with world and size, covers
// the peaks measured for the command (1 rank x 64 MiB: 1039 MB; 4 x 64 MiB:
// 2590 MB; 72 x 1 MiB: 875 MB) and saturates instead of wrapping.
func TestEstimateSimMemory(t *testing.T) {
	for _, m := range []struct {
		world    int
		bytes    uint64
		measured uint64
	}{{1, 64 << 20, 1039e6}, {4, 64 << 20, 2590e6}, {72, 1 << 20, 875e6}} {
		if got := EstimateSimMemory(m.world, m.bytes); got < m.measured || got > 2*m.measured {
			t.Errorf("EstimateSimMemory(%d, %d) = %d, want between the measured %d and twice it", m.world, m.bytes, got, m.measured)
		}
	}
	if got, want := EstimateSimMemory(8, 4<<30), uint64(9*8+8)<<32+(8*4+64)<<20; got != want {
		t.Errorf("EstimateSimMemory(8, 4 GiB) = %d, want %d", got, want)
	}
	if EstimateSimMemory(72, 64<<20) <= EstimateSimMemory(8, 64<<20) || EstimateSimMemory(8, 64<<20) <= EstimateSimMemory(8, 1<<20) {
		t.Error("the estimate does not grow with world and size")
	}
	if got := EstimateSimMemory(72, math.MaxUint64/2); got != math.MaxUint64 {
		t.Errorf("EstimateSimMemory of a huge size = %d, want saturation", got)
	}
}
