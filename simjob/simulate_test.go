package simjob

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/oracle"
	"github.com/symmem/symmem/rank"
)

func TestSimulateOneShot(t *testing.T) {
	const world, numel = 4, 64
	outs := make([][]byte, world)
	ins := make([][]byte, world)
	for i := range ins {
		vals := make([]float32, numel)
		for j := range vals {
			vals[j] = float32(i*100 + j)
		}
		ins[i], _ = kernels.Encode(device.Float32, vals)
	}
	res, err := Simulate(Config{World: world, Seed: 1}, func(r *rank.Rank) error {
		p, err := r.Alloc(numel * 4)
		if err != nil {
			return err
		}
		in := rank.Tensor{Ptr: p, DType: device.Float32, Numel: numel}
		if err := r.Write(in, ins[r.ID()]); err != nil {
			return err
		}
		out, err := r.OneShotAllReduce(in, device.Sum, rank.WorldGroup)
		if err != nil {
			return err
		}
		outs[r.ID()], err = r.Read(out)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	want, _ := oracle.AllReduce(device.Float32, device.Sum, ins)
	for i, o := range outs {
		if !bytes.Equal(o, want) {
			t.Fatalf("rank %d: result differs from the reference", i)
		}
	}
}

// TestMissingRankTimesOutNamingIt: when rank 2 never joins a rendezvous, the
// others fail within the timeout (virtual time) with an error naming the
// rank's missing key, and the simulation itself does not deadlock.
func TestMissingRankTimesOutNamingIt(t *testing.T) {
	res, err := Simulate(Config{World: 3, Seed: 2, Timeout: 2 * time.Second}, func(r *rank.Rank) error {
		if r.ID() == 2 {
			return nil
		}
		p, err := r.Alloc(64)
		if err != nil {
			return err
		}
		_, err = r.Rendezvous(p, rank.WorldGroup)
		return err
	})
	if err != nil {
		t.Fatalf("simulation: %v", err)
	}
	for i := range 2 {
		if res.Errs[i] == nil || !strings.Contains(res.Errs[i].Error(), "/2") || !strings.Contains(res.Errs[i].Error(), "ranks [2]") {
			t.Errorf("rank %d: %v, want a timeout naming rank 2's key", i, res.Errs[i])
		}
	}
	if res.VirtualTime < 2*time.Second || res.VirtualTime > time.Minute {
		t.Errorf("virtual time %v, want about the 2 s timeout", res.VirtualTime)
	}
}

// TestDeadlockIsReported: with no timeout, ranks waiting for a signal that
// never comes leave the scheduler with nothing to run: the report names the
// blocked kernel lanes.
func TestDeadlockIsReported(t *testing.T) {
	_, err := Simulate(Config{World: 2, Seed: 3}, func(r *rank.Rank) error {
		p, err := r.Alloc(64)
		if err != nil {
			return err
		}
		h, err := r.Rendezvous(p, rank.WorldGroup)
		if err != nil {
			return err
		}
		return h.WaitSignal(1-r.ID(), 0, 0) // both wait, nobody puts
	})
	var d *actor.DeadlockError
	if !errors.As(err, &d) {
		t.Fatalf("Simulate = %v, want a deadlock", err)
	}
	if len(d.Blocked) < 2 {
		t.Fatalf("deadlock names %d blocked tasks, want both ranks' waits: %v", len(d.Blocked), err)
	}
}
