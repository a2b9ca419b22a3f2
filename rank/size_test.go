package rank_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/simjob"
)

// TestHugeTensorsAreRefused: tensors whose byte size overflows 64 bits, or
// that reach far past their allocation, are refused with an error instead
// of wrapping around into the buffer (or panicking on the host's copy).
func TestHugeTensorsAreRefused(t *testing.T) {
	res, err := simjob.Simulate(simjob.Config{World: 1, Seed: 1}, func(r *rank.Rank) error {
		buf, err := r.Alloc(1024)
		if err != nil {
			return err
		}
		// 2^62 float32 elements are 2^64 bytes: 0 once wrapped around.
		wrapped := rank.Tensor{Ptr: buf, DType: device.Float32, Numel: 1 << 62}
		near := rank.Tensor{Ptr: buf.Add(16), DType: device.Float32, Numel: (1<<64 - 16) / 4}
		for name, err := range map[string]error{
			"one-shot of a wrapped size":  second(r.OneShotAllReduce(wrapped, device.Sum, rank.WorldGroup)),
			"two-shot of a wrapped size":  r.TwoShotAllReduce(wrapped, device.Sum, rank.WorldGroup),
			"two-shot reaching past 2^64": r.TwoShotAllReduce(near, device.Sum, rank.WorldGroup),
			"read of a wrapped size":      second(r.Read(wrapped)),
			"write of a wrapped size":     r.Write(wrapped, nil),
		} {
			if err == nil {
				return fmt.Errorf("%s: accepted", name)
			}
			if !strings.Contains(err.Error(), "limit of") {
				return fmt.Errorf("%s: %v, want a size error", name, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
}
