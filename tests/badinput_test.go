package tests

import (
	"errors"
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

// TestBadInputsThenValidCall: each invalid argument gives a specific error,
// and a valid all-reduce right after still works.
func TestBadInputsThenValidCall(t *testing.T) {
	simulate(t, rank.SimConfig{World: 2, Seed: 4}, func(r *rank.Rank) error {
		const numel = 1024
		buf, err := r.Alloc(numel * 4)
		if err != nil {
			return err
		}
		in := rank.Tensor{Ptr: buf, DType: device.Float32, Numel: numel}
		plain, err := r.Empty(numel, device.Float32)
		if err != nil {
			return err
		}
		h, err := r.Rendezvous(buf, rank.WorldGroup)
		if err != nil {
			return err
		}
		valid := func(step string) error {
			out, err := r.OneShotAllReduce(in, device.Sum, rank.WorldGroup)
			if err != nil {
				return fmt.Errorf("valid all-reduce after %s: %w", step, err)
			}
			return r.FreeTensor(out)
		}
		checks := []struct {
			name string
			err  error
			frag []string
		}{
			{"misaligned offset", r.TwoShotAllReduce(rank.Tensor{Ptr: buf.Add(2), DType: device.BFloat16, Numel: 4}, device.Sum, rank.WorldGroup), []string{"offset of 2 bytes", "multiple of 4"}},
			{"misaligned size", r.TwoShotAllReduce(rank.Tensor{Ptr: buf, DType: device.BFloat16, Numel: 3}, device.Sum, rank.WorldGroup), []string{"size of 6 bytes"}},
			{"wrong dtype", r.TwoShotAllReduce(rank.Tensor{Ptr: buf, DType: device.DType(9), Numel: 4}, device.Sum, rank.WorldGroup), []string{"unsupported dtype"}},
			{"wrong op", r.TwoShotAllReduce(in, device.ReduceOp(7), rank.WorldGroup), []string{"unsupported reduce op"}},
			{"size above the buffer", r.TwoShotAllReduce(rank.Tensor{Ptr: buf, DType: device.Float32, Numel: numel + 4}, device.Sum, rank.WorldGroup), []string{"not a symmetric allocation"}},
			{"non-symmetric pointer", r.TwoShotAllReduce(plain, device.Sum, rank.WorldGroup), []string{"not a symmetric allocation"}},
			{"unknown group", r.TwoShotAllReduce(in, device.Sum, "nope"), []string{`unknown group "nope"`}},
			{"output of the wrong size", r.OneShotAllReduceOut(in, device.Sum, rank.WorldGroup, rank.Tensor{Ptr: plain.Ptr, DType: device.Float32, Numel: 3}), []string{"does not match"}},
			{"channel out of range", h.Barrier(1<<20, 0), []string{"channel"}},
			{"rank out of range", h.PutSignal(2, 0, 0), []string{"rank 2"}},
		}
		for _, c := range checks {
			if err := expectErr(c.name, c.err, c.frag...); err != nil {
				return err
			}
			if err := valid(c.name); err != nil {
				return err
			}
		}
		if err := expectErr("free of a plain tensor as symmetric", r.Free(plain.Ptr), "not a symmetric allocation"); err != nil {
			return err
		}
		if _, err := r.Rendezvous(plain.Ptr, rank.WorldGroup); !errors.Is(err, rank.ErrNotSymmetric) {
			return fmt.Errorf("rendezvous of a plain pointer: %v", err)
		}
		if _, err := r.Alloc(0); err == nil {
			return errors.New("alloc of 0 bytes accepted")
		}
		if _, err := r.Alloc(^uint64(0)); err == nil {
			return errors.New("alloc of 2^64-1 bytes accepted")
		}
		other, err := r.Alloc(64)
		if err != nil {
			return err
		}
		if err := r.Free(other); err != nil {
			return err
		}
		if err := r.Free(other); !errors.Is(err, rank.ErrFreed) {
			return fmt.Errorf("double free: %v, want ErrFreed", err)
		}
		if _, err := r.Rendezvous(other, rank.WorldGroup); !errors.Is(err, rank.ErrFreed) {
			return fmt.Errorf("use after free: %v, want ErrFreed", err)
		}
		return valid("the pointer checks")
	})
}

// TestPersistentAllocID: the same id gives the same address after free; an
// id still alive is refused.
func TestPersistentAllocID(t *testing.T) {
	simulate(t, rank.SimConfig{World: 1, Seed: 1}, func(r *rank.Rank) error {
		a, err := r.AllocID(4096, "weights")
		if err != nil {
			return err
		}
		if _, err := r.AllocID(4096, "weights"); err == nil || !strings.Contains(err.Error(), "still alive") {
			return fmt.Errorf("second alloc of a live id: %v", err)
		}
		if err := r.Free(a); err != nil {
			return err
		}
		b, err := r.AllocID(1024, "weights")
		if err != nil {
			return err
		}
		if a != b {
			return fmt.Errorf("id re-allocated at %v, first at %v", b, a)
		}
		if n, err := r.AllocSize(b); err != nil || n != 1024 {
			return fmt.Errorf("alloc size %d (%v), want 1024", n, err)
		}
		return nil
	})
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
