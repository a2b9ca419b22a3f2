package tests

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/oracle"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/simjob"
	"github.com/symmem/symmem/workload"
)

// interleavedGroups is a program in which one allocation is rendezvoused on
// the world and on pairs {0,1}, {2,3}, ... and collectives on those groups
// are interleaved, each result checked against the reference. Every group
// must have signal pad slots of its own: were the pairs' signals to land in
// the world's slots, a barrier of one group would consume a signal of
// another (a hang, a race or a wrong result).
func interleavedGroups(seed uint64, rounds int) rank.Program {
	return func(r *rank.Rank) error {
		const numel = 256
		w := r.World()
		pair := fmt.Sprintf("pair%d", r.ID()/2)
		for p := 0; p < w/2; p++ {
			if err := r.NewGroup(fmt.Sprintf("pair%d", p), []int{2 * p, 2*p + 1}); err != nil {
				return err
			}
		}
		buf, err := r.Alloc(numel * 4)
		if err != nil {
			return err
		}
		defer r.Free(buf)
		for _, g := range []string{rank.WorldGroup, pair} {
			if _, err := r.Rendezvous(buf, g); err != nil {
				return err
			}
		}
		in := rank.Tensor{Ptr: buf, DType: device.Float32, Numel: numel}
		step := func(round int, group string, members []int, form string) error {
			all := workload.Spec{World: w, Bytes: numel * 4, DType: device.Float32, Seed: seed + uint64(round)}.Inputs()
			inputs := make([][]byte, len(members))
			for i, m := range members {
				inputs[i] = all[m]
			}
			want, err := oracle.AllReduce(device.Float32, device.Sum, inputs)
			if err != nil {
				return err
			}
			if err := r.Write(in, all[r.ID()]); err != nil {
				return err
			}
			var got []byte
			switch form {
			case "one-shot":
				out, err := r.OneShotAllReduce(in, device.Sum, group)
				if err != nil {
					return err
				}
				if got, err = r.Read(out); err != nil {
					return err
				}
				if err := r.FreeTensor(out); err != nil {
					return err
				}
			case "two-shot":
				if err := r.TwoShotAllReduce(in, device.Sum, group); err != nil {
					return err
				}
				if got, err = r.Read(in); err != nil {
					return err
				}
			}
			if !bytes.Equal(got, want) {
				return fmt.Errorf("round %d: %s on %s: rank %d's result differs from the reference", round, form, group, r.ID())
			}
			return nil
		}
		world := make([]int, w)
		for i := range world {
			world[i] = i
		}
		pairMembers := []int{r.ID() &^ 1, r.ID() | 1}
		for round := range rounds {
			form := []string{"one-shot", "two-shot"}[round%2]
			if err := step(round, pair, pairMembers, form); err != nil {
				return err
			}
			if err := step(round, rank.WorldGroup, world, form); err != nil {
				return err
			}
		}
		return nil
	}
}

// TestGroupsOnOneAllocationHaveTheirOwnPads runs interleaved collectives of
// the world and of pairs on one allocation under random and PCT schedules
// with the race detector, at worlds 4, 6 and 8.
func TestGroupsOnOneAllocationHaveTheirOwnPads(t *testing.T) {
	for _, w := range []int{4, 6, 8} {
		for seed := uint64(1); seed <= 4; seed++ {
			var strategy actor.Strategy = actor.NewRandomWalk(seed)
			name := "random"
			if seed%2 == 0 {
				strategy, name = actor.NewPCT(seed, 3, 200_000), "pct"
			}
			t.Run(fmt.Sprintf("world%d/%s/seed%d", w, name, seed), func(t *testing.T) {
				cfg := simjob.Config{World: w, Seed: seed, Strategy: strategy, RaceDetector: true}
				cfg.Device.SMCount = 4
				simulate(t, cfg, interleavedGroups(seed, 4))
			})
		}
	}
}

// TestPadRegionsAreDistinctPerGroup checks the handles' pads directly: on
// one allocation, the world's and a pair's pads never overlap, and every
// member of a group sees the same pad addresses for it.
func TestPadRegionsAreDistinctPerGroup(t *testing.T) {
	const w = 4
	simulate(t, simjob.Config{World: w, Seed: 1}, func(r *rank.Rank) error {
		pair := fmt.Sprintf("pair%d", r.ID()/2)
		if err := r.NewGroup(pair, []int{r.ID() &^ 1, r.ID() | 1}); err != nil {
			return err
		}
		buf, err := r.Alloc(4096)
		if err != nil {
			return err
		}
		defer r.Free(buf)
		hw, err := r.Rendezvous(buf, rank.WorldGroup)
		if err != nil {
			return err
		}
		hp, err := r.Rendezvous(buf, pair)
		if err != nil {
			return err
		}
		mine, err := hw.GetSignalPad(hw.Rank())
		if err != nil {
			return err
		}
		other, err := hp.GetSignalPad(hp.Rank())
		if err != nil {
			return err
		}
		if mine.Ptr < other.Ptr+device.Ptr(other.Bytes) && other.Ptr < mine.Ptr+device.Ptr(mine.Bytes) {
			return fmt.Errorf("rank %d: world pad %v+%d overlaps pair pad %v+%d", r.ID(), mine.Ptr, mine.Bytes, other.Ptr, other.Bytes)
		}
		return nil
	})
}

// TestPadBudget: an allocation serves rank.PadRegions groups; a rendezvous
// on one more is refused with an error naming the budget, and the groups
// already rendezvoused keep working.
func TestPadBudget(t *testing.T) {
	res, err := simjob.Simulate(simjob.Config{World: 2, Seed: 1}, func(r *rank.Rank) error {
		buf, err := r.Alloc(64)
		if err != nil {
			return err
		}
		defer r.Free(buf)
		for g := range rank.PadRegions + 1 {
			name := fmt.Sprintf("g%d", g)
			if err := r.NewGroup(name, []int{0, 1}); err != nil {
				return err
			}
			_, err := r.Rendezvous(buf, name)
			if g < rank.PadRegions && err != nil {
				return err
			}
			if g == rank.PadRegions {
				if err == nil {
					return fmt.Errorf("rendezvous on group %d of one allocation: no error", g+1)
				}
				if !strings.Contains(err.Error(), "rank.PadRegions") {
					return fmt.Errorf("refusal does not name the pad budget: %v", err)
				}
			}
		}
		h, err := r.Rendezvous(buf, "g3")
		if err != nil {
			return err
		}
		return h.Barrier(0, time.Second)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestSubgroupTimeoutNamesGlobalRanks: on group {2,3}, a barrier that rank 3
// never joins times out on rank 2 with an error naming the group and the
// global ranks (rank 2 waiting for rank 3), not their positions.
func TestSubgroupTimeoutNamesGlobalRanks(t *testing.T) {
	res, err := simjob.Simulate(simjob.Config{World: 4, Seed: 1, Timeout: time.Second}, func(r *rank.Rank) error {
		if r.ID() < 2 {
			return nil
		}
		if err := r.NewGroup("back", []int{2, 3}); err != nil {
			return err
		}
		buf, err := r.Alloc(64)
		if err != nil {
			return err
		}
		defer r.Free(buf)
		h, err := r.Rendezvous(buf, "back")
		if err != nil {
			return err
		}
		if r.ID() == 3 {
			return nil
		}
		return h.Barrier(0, time.Second)
	})
	if err != nil {
		t.Fatal(err)
	}
	got := res.Errs[2]
	if got == nil {
		t.Fatal("rank 2's barrier without rank 3: no error")
	}
	for _, want := range []string{`group "back"`, "rank 2 (position 0)", "waiting for rank 3 (position 1)"} {
		if !strings.Contains(got.Error(), want) {
			t.Errorf("rank 2's error does not say %q: %v", want, got)
		}
	}
	for i, e := range res.Errs {
		if i != 2 && e != nil {
			t.Errorf("rank %d: %v", i, e)
		}
	}
}
