package tests

import (
	"sync"
	"testing"

	"github.com/symmem/symmem/conformance"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/simjob"
)

// indexOverride reports a fixed device index, so two simulated ranks claim
// the same GPU.
type indexOverride struct {
	device.Device
	index int
}

func (d indexOverride) Attributes() device.Attributes {
	a := d.Device.Attributes()
	a.Index = d.index
	return a
}

// launchBlocks records the grid of every two-shot launch of its rank.
type launchBlocks struct {
	device.Device
	mu   *sync.Mutex
	grid *[]int
}

func (d launchBlocks) Launch(s device.Stream, l device.Launch) error {
	if l.Kernel == kernels.TwoShotAllReduce {
		d.mu.Lock()
		*d.grid = append(*d.grid, l.Blocks)
		d.mu.Unlock()
	}
	return d.Device.Launch(s, l)
}

// TestSharedDeviceSplitsMultiprocessors: block b of a collective waits for
// block b of every peer, so ranks that share a device (allowed overlap)
// launch at most their share of its multiprocessors, and ranks on their
// own devices may fill them.
func TestSharedDeviceSplitsMultiprocessors(t *testing.T) {
	const sm = 8
	for _, shared := range []bool{false, true} {
		var mu sync.Mutex
		var grids []int
		cfg := simjob.Config{World: 2, Seed: 3, AllowOverlappingDevices: shared, Device: sim.Config{SMCount: sm},
			WrapDevice: func(r int, d device.Device) device.Device {
				if shared {
					d = indexOverride{d, 0}
				}
				return launchBlocks{d, &mu, &grids}
			}}
		simulate(t, cfg, func(r *rank.Rank) error {
			buf, err := r.Alloc(1 << 20)
			if err != nil {
				return err
			}
			// 512 KiB of bf16: 16 blocks of 1024 16-byte vectors per rank's half.
			return r.TwoShotAllReduce(rank.Tensor{Ptr: buf, Numel: 256 << 10, DType: device.BFloat16}, device.Sum, rank.WorldGroup)
		})
		want := sm
		if shared {
			want = sm / 2
		}
		if len(grids) != 2 || grids[0] != want || grids[1] != want {
			t.Errorf("shared device %v: two-shot grids %v, want %d blocks on each of 2 ranks", shared, grids, want)
		}
	}
}

// TestRendezvousValidation: overlapping devices are refused unless allowed,
// and mismatched sizes name the ranks; a valid rendezvous works after.
func TestRendezvousValidation(t *testing.T) {
	for _, allow := range []bool{false, true} {
		cfg := simjob.Config{World: 2, Seed: 3, AllowOverlappingDevices: allow,
			WrapDevice: func(_ int, d device.Device) device.Device { return indexOverride{d, 0} }}
		simulate(t, cfg, func(r *rank.Rank) error {
			buf, err := r.Alloc(256)
			if err != nil {
				return err
			}
			_, err = r.Rendezvous(buf, rank.WorldGroup)
			if allow {
				return err
			}
			return conformance.ExpectErr("overlapping devices", err, "ranks 0 and 1 both use device 0", "SYMMEM_ALLOW_OVERLAPPING_DEVICES")
		})
	}
	simulate(t, simjob.Config{World: 3, Seed: 5}, func(r *rank.Rank) error {
		size := uint64(256)
		if r.ID() == 2 {
			size = 512
		}
		buf, err := r.Alloc(size)
		if err != nil {
			return err
		}
		_, err = r.Rendezvous(buf, rank.WorldGroup)
		if err := conformance.ExpectErr("mismatched sizes", err, "buffer size differs", "rank 0 has 256", "rank 2 has 512"); err != nil {
			return err
		}
		good, err := r.Alloc(128)
		if err != nil {
			return err
		}
		_, err = r.Rendezvous(good, rank.WorldGroup)
		return err
	})
}
