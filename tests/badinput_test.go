package tests

import (
	"fmt"
	"strings"
	"testing"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/rank"
)

// expectErr checks that err is non-nil and mentions every fragment.
func expectErr(what string, err error, fragments ...string) error {
	if err == nil {
		return fmt.Errorf("%s: accepted, want an error", what)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			return fmt.Errorf("%s: error %q does not mention %q", what, err, f)
		}
	}
	return nil
}

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

// TestRendezvousValidation: overlapping devices are refused unless allowed,
// and mismatched sizes name the ranks; a valid rendezvous works after.
func TestRendezvousValidation(t *testing.T) {
	for _, allow := range []bool{false, true} {
		cfg := rank.SimConfig{World: 2, Seed: 3, AllowOverlappingDevices: allow,
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
			return expectErr("overlapping devices", err, "ranks 0 and 1 both use device 0", "SYMMEM_ALLOW_OVERLAPPING_DEVICES")
		})
	}
	simulate(t, rank.SimConfig{World: 3, Seed: 5}, func(r *rank.Rank) error {
		size := uint64(256)
		if r.ID() == 2 {
			size = 512
		}
		buf, err := r.Alloc(size)
		if err != nil {
			return err
		}
		_, err = r.Rendezvous(buf, rank.WorldGroup)
		if err := expectErr("mismatched sizes", err, "buffer size differs", "rank 0 has 256", "rank 2 has 512"); err != nil {
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
