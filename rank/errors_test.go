package rank

import (
	"fmt"
	"strings"
	"testing"

	"github.com/symmem/symmem/device"
)

// TestErrorsCarryTheRankOnce: an error returned by a public method names
// the rank once, at the front, however many public methods it went
// through inside (a one-shot all-reduce allocates its output, the
// low-latency instance allocates and rendezvouses, IntraNodeComm runs the
// collectives).
func TestErrorsCarryTheRankOnce(t *testing.T) {
	res, err := Simulate(SimConfig{World: 2, Seed: 1}, func(r *Rank) error {
		buf, err := r.Alloc(1024)
		if err != nil {
			return err
		}
		in := Tensor{Ptr: buf, DType: device.Float32, Numel: 16}
		plain, err := r.Empty(16, device.Float32)
		if err != nil {
			return err
		}
		c := r.NewIntraNodeComm(IntraNodeOptions{Enabled: true})
		_, ll := r.NewLowLatency("nope", 0)
		_, empty := r.Empty(4, device.DType(9))
		_, oneShot := r.OneShotAllReduce(in, device.Sum, "nope")
		_, oneShotDType := r.OneShotAllReduce(Tensor{Ptr: buf, DType: device.DType(9), Numel: 4}, device.Sum, WorldGroup)
		for name, err := range map[string]error{
			"NewLowLatency on an unknown group":  ll,
			"Empty of an invalid dtype":          empty,
			"OneShotAllReduce on unknown group":  oneShot,
			"OneShotAllReduce of invalid dtype":  oneShotDType,
			"OneShotAllReduceCopy, wrong local":  r.OneShotAllReduceCopy(in, Tensor{Ptr: plain.Ptr, DType: device.Float32, Numel: 3}, device.Sum, WorldGroup, plain),
			"TwoShotAllReduceOut, wrong output":  r.TwoShotAllReduceOut(in, device.Sum, WorldGroup, Tensor{Ptr: plain.Ptr + 2, DType: device.Float32, Numel: 16}),
			"NewGroup of the world":              r.NewGroup(WorldGroup, []int{0, 1}),
			"IntraNodeComm before rendezvous":    c.AllReduce(plain, AlgoOneShot),
			"Free of a plain tensor":             r.Free(plain.Ptr),
			"FreeTensor of a symmetric pointer":  r.FreeTensor(in),
			"Rendezvous of a plain tensor":       second(r.Rendezvous(plain.Ptr, WorldGroup)),
			"AllocID with an id still alive":     allocTwice(r),
			"TwoShotAllReduce on an empty group": r.TwoShotAllReduce(in, device.Sum, ""),
		} {
			if err == nil {
				return fmt.Errorf("%s: no error", name)
			}
			prefix := fmt.Sprintf("rank %d: ", r.ID())
			if !strings.HasPrefix(err.Error(), prefix) || strings.Count(err.Error(), prefix) != 1 {
				return fmt.Errorf("%s: error does not name rank %d once, in front: %v", name, r.ID(), err)
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

func second[T any](_ T, err error) error { return err }

func allocTwice(r *Rank) error {
	if _, err := r.AllocID(64, "twice"); err != nil {
		return fmt.Errorf("first alloc failed: %w", err)
	}
	_, err := r.AllocID(64, "twice")
	return err
}
