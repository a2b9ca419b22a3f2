package race_test

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/device/sim/ptx"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/oracle"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/simjob"
)

// llLoop returns a program that runs the low-latency all-reduce iters
// times on numel float32 elements, checking every result.
func llLoop(iters int, numel uint64) rank.Program {
	return func(r *rank.Rank) error {
		ll, err := r.NewLowLatency(rank.WorldGroup, 4*numel)
		if err != nil {
			return err
		}
		defer ll.Close()
		in, err := r.Empty(numel, device.Float32)
		if err != nil {
			return err
		}
		out, err := r.Empty(numel, device.Float32)
		if err != nil {
			return err
		}
		for it := range iters {
			ins := make([][]byte, r.World())
			for p := range ins {
				ins[p] = input(p, it, int(numel))
			}
			if err := r.Write(in, ins[r.ID()]); err != nil {
				return err
			}
			if err := ll.AllReduce(in, device.Sum, out); err != nil {
				return err
			}
			got, err := r.Read(out)
			if err != nil {
				return err
			}
			want, _ := oracle.AllReduce(device.Float32, device.Sum, ins)
			if !bytes.Equal(got, want) {
				return fmt.Errorf("rank %d iteration %d: result differs from the reference", r.ID(), it)
			}
		}
		return nil
	}
}

// TestSharedMemoryIsChecked: the low-latency kernel's thread 0 stores the
// call number in shared memory and the block's barrier (bar.red) publishes
// it to the other threads, which load it: race-free. Replace that barrier
// by a plain predicate copy and the shared store and loads race, which the
// detector reports on the block's shared memory.
func TestSharedMemoryIsChecked(t *testing.T) {
	text, err := kernels.PTX()
	if err != nil {
		t.Fatal(err)
	}
	entry := strings.Index(text, ".entry ll_all_reduce(")
	if entry < 0 {
		t.Fatal("no ll_all_reduce entry in the kernels' PTX")
	}
	bar := regexp.MustCompile(`bar\.red\.or\.pred\s+(%p\d+), 0, (%p\d+);`)
	loc := bar.FindStringSubmatchIndex(text[entry:])
	if loc == nil {
		t.Fatal("no bar.red in ll_all_reduce")
	}
	m := bar.FindStringSubmatch(text[entry:])
	mutant := text[:entry+loc[0]] + "or.pred " + m[1] + ", " + m[2] + ", " + m[2] + ";" + text[entry+loc[1]:]
	run := func(text string) simjob.Result {
		mod, err := ptx.Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		cfg := simjob.Config{World: 2, Seed: 3, Device: sim.Config{Kernels: sim.Kernels{PTX: true, Module: mod}}}
		return simulate(t, cfg, llLoop(2, 64))
	}
	clean(t, "the low-latency kernel's PTX", run(text))
	found := false
	for _, r := range races(t, "the low-latency kernel without its barrier", run(mutant)) {
		if r.First.Shared && r.Second.Shared {
			found = true
			if r.First.Block != r.Second.Block || r.First.Lane == r.Second.Lane {
				t.Errorf("a shared-memory race between different blocks or one lane:\n%v", r)
			}
			if s := r.String(); !strings.Contains(s, "shared memory of device") || !strings.Contains(s, "no bar.sync") {
				t.Errorf("the report does not say it is shared memory without a bar.sync:\n%s", s)
			}
		}
	}
	if !found {
		t.Fatal("no race on shared memory reported")
	}
}

// TestLowLatencyIsRaceFreePTX: the low-latency kernel's PTX over several
// blocks is race-free: the last block to count itself done resets the
// counter with plain stores, ordered after the other blocks' increments
// because its own increment observed them.
func TestLowLatencyIsRaceFreePTX(t *testing.T) {
	// 520 words take two blocks of 512 threads (run as two blocks of 32).
	dev := sim.Config{Kernels: sim.Kernels{PTX: true}}
	clean(t, "world 2", simulate(t, simjob.Config{World: 2, Seed: 2, Device: dev}, llLoop(2, 520)))
}

// flagAt is flag's offset in flagPTX's shared memory: after data.
const flagAt = 4

// flagPTX: thread 0 stores 42 to data in shared memory, then 1 to flag
// with STRONG; thread 32 (the second warp) polls flag with STRONGLD until
// it reads 1, then loads data and stores it to global word 0. FENCE goes
// between the two accesses of each thread.
const flagPTX = `
.version 8.0
.target sm_90
.address_size 64
.visible .entry flag(.param .u64 p)
{
	.shared .align 4 .b8 data[4];
	.shared .align 4 .b8 flag[4];
	.reg .pred %p<3>;
	.reg .b32 %r<6>;
	.reg .b64 %rd<2>;
	ld.param.u64 %rd1, [p];
	mov.u32 %r1, %tid.x;
	setp.eq.u32 %p1, %r1, 0;
	@%p1 bra WRITER;
	setp.ne.u32 %p2, %r1, 32;
	@%p2 bra DONE;
POLL:
	STRONGLD.u32 %r2, [flag];
	setp.ne.u32 %p2, %r2, 1;
	@%p2 bra POLL;
	FENCE
	ld.shared.u32 %r3, [data];
	st.global.u32 [%rd1], %r3;
	bra DONE;
WRITER:
	mov.u32 %r4, 42;
	st.shared.u32 [data], %r4;
	FENCE
	mov.u32 %r5, 1;
	STRONG.u32 [flag], %r5;
DONE:
	ret;
}
`

// TestStrongSharedAccessesDoNotRace: strong accesses of shared memory
// (volatile, relaxed, release and acquire ones) reach the detector as
// strong ones: a flag that two warps poll and set with them never races,
// and with fences of the block's scope (or release and acquire) it orders
// the plain data before it; without them the data races, and the flag
// still does not.
func TestStrongSharedAccessesDoNotRace(t *testing.T) {
	for _, c := range []struct {
		name               string
		load, store, fence string
		dataRaces          bool
	}{
		{"volatile with fences", "ld.volatile.shared", "st.volatile.shared", "fence.acq_rel.cta;", false},
		{"relaxed with fences", "ld.relaxed.cta.shared", "st.relaxed.cta.shared", "fence.acq_rel.cta;", false},
		{"acquire and release", "ld.acquire.cta.shared", "st.release.cta.shared", "", false},
		{"volatile", "ld.volatile.shared", "st.volatile.shared", "", true},
		{"relaxed", "ld.relaxed.cta.shared", "st.relaxed.cta.shared", "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := strings.NewReplacer("STRONGLD", c.load, "STRONG", c.store, "FENCE", c.fence).Replace(flagPTX)
			mod, err := ptx.Parse(src)
			if err != nil {
				t.Fatal(err)
			}
			l := ptxLaunch{mod: mod, entry: "flag", grid: 1, block: 64, zeroed: 4}
			for seed := uint64(1); seed <= 6; seed++ {
				var dataRaced bool
				for _, r := range l.races(t, sim.Kernels{PTX: true}, seed, nil) {
					if !r.First.Shared || !r.Second.Shared {
						t.Fatalf("seed %d: a race off shared memory:\n%v", seed, r)
					}
					if r.First.PhysOffset != r.Second.PhysOffset || r.First.Size != 4 {
						t.Fatalf("seed %d: a race across the two words:\n%v", seed, r)
					}
					if r.First.PhysOffset == flagAt {
						t.Errorf("seed %d: strong accesses of the flag race:\n%v", seed, r)
						continue
					}
					dataRaced = true
				}
				if dataRaced != c.dataRaces {
					t.Errorf("seed %d: the data raced: %v, want %v", seed, dataRaced, c.dataRaces)
				}
			}
		})
	}
}
