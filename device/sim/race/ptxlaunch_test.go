package race_test

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/device/sim/ptx"
	"github.com/symmem/symmem/device/sim/race"
)

// ptxLaunch is a launch of a kernel on a granule of one device, its only
// parameter the granule's address, its first zeroed bytes set to 0.
type ptxLaunch struct {
	mod         *ptx.Module
	entry       string
	grid, block int
	zeroed      uint64
	// det, when not nil, is set to the run's detector.
	det **race.Detector
	// laneEvents has the detector take a warp's accesses lane by lane
	// (its observer installed again, with no warp observer).
	laneEvents bool
}

// races runs the launch with kernels and seed under the race detector,
// then after (nil: nothing) once its stream is done, and returns the races
// reported.
func (l ptxLaunch) races(t *testing.T, kernels sim.Kernels, seed uint64, after func(device.Device, device.Stream, device.Ptr) error) []race.Race {
	t.Helper()
	s := actor.NewScheduler(actor.Config{Seed: seed})
	w, err := sim.NewWorld(s, sim.Config{World: 1, Kernels: kernels})
	if err != nil {
		t.Fatal(err)
	}
	det := race.New(w)
	if l.det != nil {
		*l.det = det
	}
	if l.laneEvents {
		w.Observe(w.Observer())
	}
	var runErr error
	s.Go("host", func() {
		runErr = func() error {
			d := w.Device(0)
			p, err := mappedGranule(d)
			if err != nil {
				return err
			}
			st, err := d.NewStream()
			if err != nil {
				return err
			}
			if l.zeroed > 0 {
				if err := d.Memset(st, p, 0, l.zeroed); err != nil {
					return err
				}
			}
			params := binary.LittleEndian.AppendUint64(nil, uint64(p))
			if err := d.(sim.PTXLauncher).LaunchPTX(st, sim.PTXLaunch{Module: l.mod, Entry: l.entry, Params: params, Grid: l.grid, Block: l.block}); err != nil {
				return err
			}
			if err := d.Synchronize(st); err != nil {
				return err
			}
			if after != nil {
				return after(d, st, p)
			}
			return nil
		}()
	})
	if err := s.Run(); err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	if runErr != nil {
		t.Fatalf("seed %d: %v", seed, runErr)
	}
	return det.Races()
}

// mappedGranule reserves, backs and maps one granule of d's memory.
func mappedGranule(d device.Device) (device.Ptr, error) {
	h, err := d.CreatePhysical(device.Granularity)
	if err != nil {
		return 0, err
	}
	p, err := d.Reserve(device.Granularity)
	if err != nil {
		return 0, err
	}
	if err := d.Map(p, device.Granularity, h); err != nil {
		return 0, err
	}
	return p, d.SetAccess(p, device.Granularity)
}

// total is the number of races det found, repeats included.
func total(det *race.Detector) int {
	var e *race.Error
	if errors.As(det.Err(), &e) {
		return e.Total
	}
	return 0
}
