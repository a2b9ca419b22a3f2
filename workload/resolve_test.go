package workload

import "testing"

// TestAutoFollowsTheMeasuredCrossovers: auto picks the low-latency one-shot
// up to its limit on worlds up to 4 and up to 64 KiB above, two-shot beyond;
// explicit algorithms stay as asked.
func TestAutoFollowsTheMeasuredCrossovers(t *testing.T) {
	for _, c := range []struct {
		bytes uint64
		world int
		want  Algo
	}{
		{4, 2, LowLatency},
		{64 << 10, 4, LowLatency},
		{256 << 10, 2, LowLatency},
		{256 << 10, 4, LowLatency},
		{256<<10 + 16, 4, TwoShot},
		{64 << 10, 8, LowLatency},
		{64<<10 + 16, 8, TwoShot},
		{64 << 20, 4, TwoShot},
	} {
		if got := Auto.Resolve(c.bytes, c.world); got != c.want {
			t.Errorf("auto for %d bytes on %d ranks: %v, want %v", c.bytes, c.world, got, c.want)
		}
	}
	for _, a := range []Algo{OneShot, TwoShot, LowLatency} {
		if got := a.Resolve(1<<30, 8); got != a {
			t.Errorf("%v resolved to %v", a, got)
		}
	}
}
