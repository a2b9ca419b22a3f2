package sim

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
)

// countPTX: every thread adds 1 to one counter; the count is the number
// of threads that ran.
const countPTX = `
.version 8.0
.target sm_90
.address_size 64
.visible .entry count(.param .u64 count_param_0)
{
	.reg .b32 %r<3>;
	.reg .b64 %rd<3>;
	ld.param.u64 %rd1, [count_param_0];
	cvta.to.global.u64 %rd2, %rd1;
	mov.u32 %r1, 1;
	atom.global.add.u32 %r2, [%rd2], %r1;
	ret;
}
`

// launchCount runs count with grid x block on a device capped as k says
// and returns how many threads ran.
func launchCount(t *testing.T, k Kernels, grid, block int) (uint32, error) {
	t.Helper()
	return launchCountIn(t, Config{World: 1, Kernels: k}, grid, block, nil)
}

// launchCountIn runs count with grid x block on device 0 of a world
// configured as cfg, then after (when not nil) with the counter's address,
// and returns how many threads ran.
func launchCountIn(t *testing.T, cfg Config, grid, block int, after func(d device.Device, counter device.Ptr) error) (uint32, error) {
	t.Helper()
	var n uint32
	g := granuleLaunch{src: countPTX, entry: "count", grid: grid, block: block, zeroed: 4, cfg: cfg,
		after: func(d device.Device, st device.Stream, p device.Ptr) error {
			if after != nil {
				if err := after(d, p); err != nil {
					return err
				}
			}
			if err := d.Synchronize(st); err != nil {
				return err
			}
			var b [4]byte
			if err := d.Read(st, b[:], p); err != nil {
				return err
			}
			n = binary.LittleEndian.Uint32(b[:])
			return nil
		}}
	_, err := g.run(t, 1)
	return n, err
}

// TestLaunchPTXShape: a launch runs the grid and block it asks for (here
// 5 blocks of 96 threads, three warps), unless the device caps them; bad
// shapes and entries are refused when launched.
func TestLaunchPTXShape(t *testing.T) {
	for _, c := range []struct {
		k     Kernels
		grid  int
		block int
		want  uint32
	}{
		{Kernels{}, 5, 96, 5 * 96},
		{Kernels{MaxBlocks: SweepBlocks, MaxThreads: SweepThreads}, 5, 96, SweepBlocks * SweepThreads},
		{Kernels{MaxThreads: 8}, 2, 96, 2 * 8},
	} {
		n, err := launchCount(t, c.k, c.grid, c.block)
		if err != nil || n != c.want {
			t.Errorf("%d x %d capped at %s: %d threads ran (%v), want %d", c.grid, c.block, c.k.Capped(), n, err, c.want)
		}
	}
	for _, bad := range []struct {
		grid, block int
		want        string
	}{{0, 32, "grid of 0 blocks"}, {1, 1025, "1025 threads per block"}} {
		if _, err := launchCount(t, Kernels{}, bad.grid, bad.block); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("launch %d x %d: %v, want an error saying %q", bad.grid, bad.block, err, bad.want)
		}
	}
}

// TestContextSyncWaitsForPTXLaunches: in a shared context whose stream
// destroy synchronises it, destroying another stream waits for a PTX
// launch queued before, as for the kernels' own launches: a read on a
// fresh stream then finds every thread's count.
func TestContextSyncWaitsForPTXLaunches(t *testing.T) {
	var seen uint32
	after := func(d device.Device, counter device.Ptr) error {
		other, err := d.NewStream()
		if err != nil {
			return err
		}
		if err := d.DestroyStream(other); err != nil {
			return err
		}
		fresh, err := d.NewStream()
		if err != nil {
			return err
		}
		var b [4]byte
		if err := d.Read(fresh, b[:], counter); err != nil {
			return err
		}
		seen = binary.LittleEndian.Uint32(b[:])
		return nil
	}
	for _, sync := range []HostCalls{SyncDestroyStream, 0} {
		seen = 0
		n, err := launchCountIn(t, Config{World: 1, SharedContext: true, ContextSync: sync}, 3, 64, after)
		if err != nil || n != 3*64 {
			t.Fatalf("sync %v: %d threads ran (%v), want %d", sync, n, err, 3*64)
		}
		if waits := sync != 0; waits != (seen == n) {
			t.Errorf("sync %v: the destroy of another stream saw %d of %d threads' counts", sync, seen, n)
		}
	}
}

// TestKernelsShapeCap: the kernels' own PTX launches run their shape
// uncapped by default, capped when asked, never below a thread per rank.
func TestKernelsShapeCap(t *testing.T) {
	args := kernels.AllReduceArgs{World: 8}
	for _, c := range []struct {
		k                     Kernels
		grid, threads, wg, wt int
	}{
		{Kernels{}, 24, 512, 24, 512},
		{Kernels{MaxBlocks: SweepBlocks, MaxThreads: SweepThreads}, 24, 512, 3, 64},
		{Kernels{MaxBlocks: 2, MaxThreads: 4}, 24, 512, 2, 8},
		{Kernels{MaxBlocks: 3, MaxThreads: 64}, 1, 32, 1, 32},
	} {
		if g, th := ptxShape(c.k, c.grid, c.threads, args); g != c.wg || th != c.wt {
			t.Errorf("%d x %d capped at %s: %d x %d, want %d x %d", c.grid, c.threads, c.k.Capped(), g, th, c.wg, c.wt)
		}
	}
}
