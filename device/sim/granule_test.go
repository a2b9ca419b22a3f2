package sim

import (
	"encoding/binary"
	"testing"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/device/sim/ptx"
)

// granuleLaunch is a launch of one PTX entry on a granule of device 0's
// memory, in a world of one device configured as cfg: the entry's
// parameters are the granule's address, then extra; the granule's first
// zeroed bytes are set to 0 before it.
type granuleLaunch struct {
	src, entry  string
	grid, block int
	shared      int        // bytes of dynamic shared memory a block
	occupancy   *Occupancy // the launch's, nil for none
	zeroed      uint64
	extra       []byte
	cfg         Config // its World is 1
	// setup, when not nil, is called with the world before it runs (to
	// install observers).
	setup func(*World)
	// after, when not nil, runs on the launch's stream once the launch is
	// enqueued, with the granule's address; else the stream is
	// synchronised.
	after func(d device.Device, st device.Stream, p device.Ptr) error
}

// run runs the launch, then after, under a scheduler of seed that keeps
// its events; it returns the scheduler and the error of the launch or of
// after. A scheduler that fails fails the test.
func (g granuleLaunch) run(t *testing.T, seed uint64) (*actor.Scheduler, error) {
	t.Helper()
	m, err := ptx.Parse(g.src)
	if err != nil {
		t.Fatal(err)
	}
	s := actor.NewScheduler(actor.Config{Seed: seed, KeepEvents: true})
	cfg := g.cfg
	cfg.World = 1
	w, err := NewWorld(s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if g.setup != nil {
		g.setup(w)
	}
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
			if g.zeroed > 0 {
				if err := d.Memset(st, p, 0, g.zeroed); err != nil {
					return err
				}
			}
			params := append(binary.LittleEndian.AppendUint64(nil, uint64(p)), g.extra...)
			if err := d.(PTXLauncher).LaunchPTX(st, PTXLaunch{Module: m, Entry: g.entry, Params: params, Grid: g.grid, Block: g.block,
				Shared: g.shared, Occupancy: g.occupancy}); err != nil {
				return err
			}
			if g.after != nil {
				return g.after(d, st, p)
			}
			return d.Synchronize(st)
		}()
	})
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	return s, runErr
}

// runOnGranule runs src's entry as one block of block threads on a world
// of one device under a scheduler of seed, with k's kernels; the entry's
// one parameter is a granule of device memory. observe, when not nil, is
// installed with Observe. It returns the granule's first n bytes after
// the launch and the scheduler.
func runOnGranule(t *testing.T, src, entry string, block, n int, seed uint64, k Kernels, observe func(*Access)) ([]byte, *actor.Scheduler) {
	t.Helper()
	out := make([]byte, n)
	g := granuleLaunch{src: src, entry: entry, grid: 1, block: block, cfg: Config{Kernels: k},
		after: func(d device.Device, st device.Stream, p device.Ptr) error { return d.Read(st, out, p) }}
	if observe != nil {
		g.setup = func(w *World) { w.Observe(observe) }
	}
	s, err := g.run(t, seed)
	if err != nil {
		t.Fatal(err)
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
