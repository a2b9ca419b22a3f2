package sim

import (
	"encoding/binary"
	"testing"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/device/sim/ptx"
)

// runOnGranule runs src's entry as one block of block threads on a world
// of one device under a scheduler of seed that keeps its events, with
// cfg's kernels; the entry's one parameter is a granule of device memory.
// observe, when not nil, is installed with Observe. It returns the
// granule's first n bytes after the launch and the scheduler.
func runOnGranule(t *testing.T, src, entry string, block, n int, seed uint64, k Kernels, observe func(*Access)) ([]byte, *actor.Scheduler) {
	t.Helper()
	m, err := ptx.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	s := actor.NewScheduler(actor.Config{Seed: seed, KeepEvents: true})
	w, err := NewWorld(s, Config{World: 1, Kernels: k})
	if err != nil {
		t.Fatal(err)
	}
	if observe != nil {
		w.Observe(observe)
	}
	out := make([]byte, n)
	var runErr error
	s.Go("test", func() {
		runErr = func() error {
			d := w.Device(0)
			h, err := d.CreatePhysical(device.Granularity)
			if err != nil {
				return err
			}
			p, err := mapBlock(d, h, device.Granularity)
			if err != nil {
				return err
			}
			st, err := d.NewStream()
			if err != nil {
				return err
			}
			params := binary.LittleEndian.AppendUint64(nil, uint64(p))
			if err := d.(PTXLauncher).LaunchPTX(st, PTXLaunch{Module: m, Entry: entry, Params: params, Grid: 1, Block: block}); err != nil {
				return err
			}
			return d.Read(st, out, p)
		}()
	})
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if runErr != nil {
		t.Fatal(runErr)
	}
	return out, s
}

// words is b as little-endian 32-bit words.
func words(b []byte) []uint32 {
	var w []uint32
	for i := 0; i+4 <= len(b); i += 4 {
		w = append(w, binary.LittleEndian.Uint32(b[i:]))
	}
	return w
}
