package tests

import (
	"fmt"
	"testing"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/simjob"
)

var enabled = rank.IntraNodeOptions{Enabled: true}

// TestIntraNodeCommSelection covers the size, dtype and alignment rules.
func TestIntraNodeCommSelection(t *testing.T) {
	simulate(t, simjob.Config{World: 2, Seed: 2}, func(r *rank.Rank) error {
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
		cfg  simjob.Config
		opts rank.IntraNodeOptions
		want bool
	}{
		{"disabled", simjob.Config{World: 2}, rank.IntraNodeOptions{}, false},
		{"world 1", simjob.Config{World: 1}, enabled, false},
		{"world 9", simjob.Config{World: 9}, enabled, false},
		{"two hosts", simjob.Config{World: 2, Hosts: []string{"a", "b"}}, enabled, false},
		{"ring of 4", simjob.Config{World: 4, Device: sim.Config{Topology: sim.Ring()}}, enabled, false},
		{"no nvlink", simjob.Config{World: 2, Device: sim.Config{Topology: sim.None()}}, enabled, false},
		{"no nvlink, forced", simjob.Config{World: 2, Device: sim.Config{Topology: sim.None()}},
			rank.IntraNodeOptions{Enabled: true, AssumeFullyConnected: true}, true},
		{"ring of 3 is a full mesh", simjob.Config{World: 3, Device: sim.Config{Topology: sim.Ring()}}, enabled, true},
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
