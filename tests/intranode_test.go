package tests

import (
	"fmt"
	"testing"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/workload"
)

var enabled = rank.IntraNodeOptions{Enabled: true}

// TestIntraNodeCommUsage ports the reference test: sums of 4 KiB, 512 KiB
// and 10 MiB use the service (counter 1, 2, 3) with the right result; avg
// and 10 MiB + 2 bytes do not.
func TestIntraNodeCommUsage(t *testing.T) {
	const world = 2
	sizes := []uint64{4 << 10, 512 << 10, 10 << 20}
	inputs := make([][][]byte, len(sizes))
	for i, n := range sizes {
		inputs[i] = workload.Spec{World: world, Bytes: n, DType: device.BFloat16, Seed: uint64(i)}.Inputs()
	}
	got := make([][][]byte, len(sizes))
	for i := range got {
		got[i] = make([][]byte, world)
	}
	simulate(t, rank.SimConfig{World: world, Seed: 1}, func(r *rank.Rank) error {
		c := r.NewIntraNodeComm(enabled)
		if !c.Rendezvous() {
			return fmt.Errorf("rendezvous refused on a fully connected host")
		}
		defer c.Close()
		for i, n := range sizes {
			t, err := r.Empty(n/2, device.BFloat16)
			if err != nil {
				return err
			}
			if err := r.Write(t, inputs[i][r.ID()]); err != nil {
				return err
			}
			algo := c.SelectAlgo(t, device.Sum)
			want := rank.AlgoOneShot
			if n > rank.OneShotMaxBytes {
				want = rank.AlgoTwoShot
			}
			if algo != want {
				return fmt.Errorf("%d bytes: selected %v, want %v", n, algo, want)
			}
			if err := c.AllReduce(t, algo); err != nil {
				return err
			}
			if c.Uses() != i+1 {
				return fmt.Errorf("after %d bytes: uses = %d, want %d", n, c.Uses(), i+1)
			}
			if got[i][r.ID()], err = r.Read(t); err != nil {
				return err
			}
			if err := r.FreeTensor(t); err != nil {
				return err
			}
		}
		avg, err := r.Empty(2048, device.BFloat16)
		if err != nil {
			return err
		}
		if a := c.SelectAlgo(avg, device.Avg); a != rank.AlgoNone {
			return fmt.Errorf("avg selected %v", a)
		}
		odd, err := r.Empty((10<<20+2)/2, device.BFloat16)
		if err != nil {
			return err
		}
		if a := c.SelectAlgo(odd, device.Sum); a != rank.AlgoNone {
			return fmt.Errorf("10 MiB + 2 bytes selected %v", a)
		}
		if err := c.AllReduce(avg, rank.AlgoNone); err == nil {
			return fmt.Errorf("all-reduce with algorithm none accepted")
		}
		if c.Uses() != len(sizes) {
			return fmt.Errorf("uses = %d after refused calls, want %d", c.Uses(), len(sizes))
		}
		return nil
	})
	for i := range sizes {
		want, _ := kernels.Reference(device.BFloat16, device.Sum, inputs[i])
		for r := range world {
			if string(got[i][r]) != string(want) {
				t.Errorf("%d bytes rank %d: result differs from the reference", sizes[i], r)
			}
		}
	}
}

// TestIntraNodeCommSelection covers the size, dtype and alignment rules.
func TestIntraNodeCommSelection(t *testing.T) {
	simulate(t, rank.SimConfig{World: 2, Seed: 2}, func(r *rank.Rank) error {
		c := r.NewIntraNodeComm(enabled)
		if !c.Rendezvous() {
			return fmt.Errorf("rendezvous refused")
		}
		defer c.Close()
		base, err := r.Empty(8<<20, device.Float32)
		if err != nil {
			return err
		}
		defer r.FreeTensor(base)
		for _, tc := range []struct {
			dt    device.DType
			bytes uint64
			shift uint64 // byte offset from an aligned address
			want  rank.Algo
		}{
			{device.Float32, 256 << 10, 0, rank.AlgoOneShot},
			{device.Float32, 256<<10 + 4, 0, rank.AlgoTwoShot},
			{device.Float16, 1 << 20, 0, rank.AlgoTwoShot},
			{device.BFloat16, 10 << 20, 0, rank.AlgoTwoShot},
			{device.BFloat16, 10<<20 + 4, 0, rank.AlgoNone},
			{device.BFloat16, 6, 0, rank.AlgoNone},
			{device.BFloat16, 8, 2, rank.AlgoNone},
			{device.Float32, 8, 4, rank.AlgoOneShot},
		} {
			tn := rank.Tensor{Ptr: base.Ptr.Add(tc.shift), DType: tc.dt, Numel: tc.bytes / uint64(tc.dt.Size())}
			if got := c.SelectAlgo(tn, device.Sum); got != tc.want {
				return fmt.Errorf("%v %d bytes at +%d: %v, want %v", tc.dt, tc.bytes, tc.shift, got, tc.want)
			}
		}
		return nil
	})
}

// TestIntraNodeCommRefusals: the service declines, without error, when it is
// disabled, the world is too small, ranks are on different hosts, or the
// NVLink topology is not fully connected (unless told to assume it is).
func TestIntraNodeCommRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  rank.SimConfig
		opts rank.IntraNodeOptions
		want bool
	}{
		{"disabled", rank.SimConfig{World: 2}, rank.IntraNodeOptions{}, false},
		{"world 1", rank.SimConfig{World: 1}, enabled, false},
		{"world 9", rank.SimConfig{World: 9}, enabled, false},
		{"two hosts", rank.SimConfig{World: 2, Hosts: []string{"a", "b"}}, enabled, false},
		{"ring of 4", rank.SimConfig{World: 4, Device: sim.Config{Topology: sim.Ring()}}, enabled, false},
		{"no nvlink", rank.SimConfig{World: 2, Device: sim.Config{Topology: sim.None()}}, enabled, false},
		{"no nvlink, forced", rank.SimConfig{World: 2, Device: sim.Config{Topology: sim.None()}},
			rank.IntraNodeOptions{Enabled: true, AssumeFullyConnected: true}, true},
		{"ring of 3 is a full mesh", rank.SimConfig{World: 3, Device: sim.Config{Topology: sim.Ring()}}, enabled, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := make([]bool, tc.cfg.World)
			simulate(t, tc.cfg, func(r *rank.Rank) error {
				c := r.NewIntraNodeComm(tc.opts)
				got[r.ID()] = c.Rendezvous()
				return c.Close()
			})
			for i, g := range got {
				if g != tc.want {
					t.Errorf("rank %d: Rendezvous = %v, want %v", i, g, tc.want)
				}
			}
		})
	}
}
