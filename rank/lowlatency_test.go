package rank_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/oracle"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/simjob"
)

// encodeInputs returns world seeded float32 tensors of numel elements.
func encodeInputs(world, numel, seed int) [][]byte {
	ins := make([][]byte, world)
	for i := range ins {
		vals := make([]float32, numel)
		for j := range vals {
			vals[j] = float32((i+1)*(j+seed)%97) / 8
		}
		ins[i], _ = kernels.Encode(device.Float32, vals)
	}
	return ins
}

// TestLowLatencyBackToBack: asynchronous calls of several sizes queued back
// to back (alternating workspace halves, in place and out of place) all
// give the reference, and a later instance on a fresh workspace too.
func TestLowLatencyBackToBack(t *testing.T) {
	const world = 3
	sizes := []int{4, 1000, 17, 4096, 1}
	got := make([][][]byte, world)
	res, err := simjob.Simulate(simjob.Config{World: world, Seed: 5}, func(r *rank.Rank) error {
		l, err := r.NewLowLatency(rank.WorldGroup, 4096*4)
		if err != nil {
			return err
		}
		r.SetAsync(true)
		var outs []rank.Tensor
		for k, n := range sizes {
			in, err := r.Empty(uint64(n), device.Float32)
			if err != nil {
				return err
			}
			if err := r.Write(in, encodeInputs(world, n, k)[r.ID()]); err != nil {
				return err
			}
			out := in // in place on odd calls
			if k%2 == 0 {
				if out, err = r.Empty(uint64(n), device.Float32); err != nil {
					return err
				}
			}
			if err := l.AllReduce(in, device.Sum, out); err != nil {
				return err
			}
			outs = append(outs, out)
		}
		if err := r.Synchronize(); err != nil {
			return err
		}
		for _, out := range outs {
			b, err := r.Read(out)
			if err != nil {
				return err
			}
			got[r.ID()] = append(got[r.ID()], b)
		}
		return l.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	for k, n := range sizes {
		want, _ := oracle.AllReduce(device.Float32, device.Sum, encodeInputs(world, n, k))
		for r := range world {
			if !bytes.Equal(got[r][k], want) {
				t.Errorf("call %d (%d elements), rank %d: result differs from the reference", k, n, r)
			}
		}
	}
}

// TestLowLatencyRefusals: each invalid call is refused with its reason and
// the next valid call still works.
func TestLowLatencyRefusals(t *testing.T) {
	res, err := simjob.Simulate(simjob.Config{World: 2, Seed: 6}, func(r *rank.Rank) error {
		if _, err := r.NewLowLatency("nope", 0); err == nil || !strings.Contains(err.Error(), `unknown group "nope"`) {
			return errors.New("unknown group accepted")
		}
		if _, err := r.NewLowLatency(rank.WorldGroup, 6); err == nil || !strings.Contains(err.Error(), "multiple of 4") {
			return errors.New("a largest tensor of 6 bytes accepted")
		}
		l, err := r.NewLowLatency(rank.WorldGroup, 64)
		if err != nil {
			return err
		}
		a, _ := r.Empty(16, device.Float32)
		big, _ := r.Empty(32, device.Float32)
		odd, _ := r.Empty(3, device.BFloat16)
		for _, c := range []struct {
			in, out rank.Tensor
			op      device.ReduceOp
			want    string
		}{
			{big, big, device.Sum, "above the instance's 64"},
			{a, big, device.Sum, "does not match"},
			{odd, odd, device.Sum, "not a multiple of 4"},
			{a, a, device.ReduceOp(9), "unsupported reduce op"},
			{rank.Tensor{DType: device.Float32, Numel: 4}, rank.Tensor{DType: device.Float32, Numel: 4}, device.Sum, "non-null"},
		} {
			if err := l.AllReduce(c.in, c.op, c.out); err == nil || !strings.Contains(err.Error(), c.want) {
				return errors.New("refusal: got " + errString(err) + ", want " + c.want)
			}
		}
		if err := l.AllReduce(a, device.Max, a); err != nil {
			return err
		}
		if err := l.Close(); err != nil {
			return err
		}
		if err := l.AllReduce(a, device.Sum, a); err == nil || !strings.Contains(err.Error(), "closed") {
			return errors.New("a closed instance accepted a call")
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

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}

// TestLowLatencyMissingPeerTimesOut: when rank 1 never calls, rank 0's
// asynchronous call returns at once and its Synchronize reports a kernel
// timeout naming rank 1.
func TestLowLatencyMissingPeerTimesOut(t *testing.T) {
	var syncErr error
	res, err := simjob.Simulate(simjob.Config{World: 2, Seed: 7, Timeout: time.Second}, func(r *rank.Rank) error {
		l, err := r.NewLowLatency(rank.WorldGroup, 64)
		if err != nil {
			return err
		}
		if r.ID() == 1 {
			return nil
		}
		a, _ := r.Empty(16, device.Float32)
		r.SetAsync(true)
		if err := l.AllReduce(a, device.Sum, a); err != nil {
			return err
		}
		syncErr = r.Synchronize()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	var ke *device.KernelError
	if !errors.As(syncErr, &ke) || ke.Peer != 1 || ke.Kernel != kernels.LowLatencyAllReduce {
		t.Fatalf("Synchronize = %v, want a low-latency kernel timeout naming rank 1", syncErr)
	}
	if !strings.Contains(syncErr.Error(), "data of call 1 did not arrive waiting for rank 1") {
		t.Fatalf("Synchronize = %v, want the call and the peer named", syncErr)
	}
}
