package tests

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/actor/store"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/internal/longtest"
	"github.com/symmem/symmem/oracle"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/simjob"
	"github.com/symmem/symmem/workload"
)

// soakCyclesEnv names the environment variable that sets the number of
// soak cycles; the default run uses soakShortCycles, the long sweep
// (SYMMEM_LONG=1, as CI runs it) soakCIcycles.
const (
	soakCyclesEnv   = "SYMMEM_SOAK_CYCLES"
	soakShortCycles = 40
	soakCIcycles    = 300
)

// soakWorlds are the world sizes of the soak's simulations: the cycles are
// split evenly between them, one simulation each, so a per-cycle leak
// inside a simulation accumulates over as many cycles as possible, and the
// host is also checked for what a finished simulation fails to release.
var soakWorlds = []int{2, 4}

// soakHeapSlack is how much the live host heap (after a GC) may grow over
// the soak, in bytes: a fixed allowance for the runtime's own caches, which
// move by tens of KiB between two measurements whatever the cycle count; a
// per-cycle leak of a few hundred bytes exceeds it over the full soak.
const soakHeapSlack = 4 << 20

// soakSpecs are the checked all-reduces a soak cycles through: small sizes,
// both algorithms, every dtype, a non-zero offset.
func soakSpecs(world int, seed uint64) []workload.Spec {
	return []workload.Spec{
		{World: world, Bytes: 4 << 10, DType: device.BFloat16, Op: device.Sum, Algo: workload.OneShot, Seed: seed},
		{World: world, Bytes: 8 << 10, DType: device.Float32, Op: device.Avg, Algo: workload.TwoShot, Offset: 16, Seed: seed + 1},
		{World: world, Bytes: 2 << 10, DType: device.Float16, Op: device.Max, Algo: workload.OneShot, Offset: 64, Seed: seed + 2},
		{World: world, Bytes: 6 << 10, DType: device.BFloat16, Op: device.Min, Algo: workload.TwoShot, Seed: seed + 3},
	}
}

// checkedSpec is a spec with its inputs and the result every rank must
// produce, computed once.
type checkedSpec struct {
	workload.Spec
	inputs [][]byte
	want   []byte
}

func prepareSpecs(world int, seed uint64) ([]checkedSpec, error) {
	var out []checkedSpec
	for _, s := range soakSpecs(world, seed) {
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("soak spec %+v: %w", s, err)
		}
		inputs := s.Inputs()
		want, err := oracle.AllReduce(s.DType, s.Op, inputs)
		if err != nil {
			return nil, fmt.Errorf("soak spec %+v: reference: %w", s, err)
		}
		out = append(out, checkedSpec{Spec: s, inputs: inputs, want: want})
	}
	return out, nil
}

// hostUsage is what the soak measures of the test process.
type hostUsage struct {
	goroutines int
	fds        int
	heap       uint64 // live heap bytes after a GC
}

func (u hostUsage) String() string {
	return fmt.Sprintf("%d goroutines, %d open fds, %.2f MiB heap", u.goroutines, u.fds, float64(u.heap)/(1<<20))
}

func measureHost(t *testing.T) hostUsage {
	t.Helper()
	return hostUsage{goroutines: runtime.NumGoroutine(), fds: countFDs(t), heap: liveHeap()}
}

// liveHeap is the heap in use after two collections (the second one also
// drops what sync.Pools kept through the first), less the simulator's pool
// of recycled granules, which keeps bytes between simulations by design.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc - min(ms.HeapAlloc, sim.PooledBytes())
}

func countFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count open fds: %v", err)
	}
	return len(ents)
}

// settledHost measures the test process once the goroutines of finished
// simulations have returned. The scheduler keeps a bounded pool of idle
// task goroutines for later runs: they are released first. A released or
// finished goroutine may still be on its way out, so it waits for the
// count to drop to want, giving up after a generous bound (the
// measurement then shows the leak).
func settledHost(t *testing.T, want int) hostUsage {
	t.Helper()
	actor.ReleaseWorkers()
	for start := time.Now(); runtime.NumGoroutine() > want && time.Since(start) < 10*time.Second; {
		time.Sleep(time.Millisecond)
	}
	return measureHost(t)
}

// deviceUsage is what one rank measures of its simulated device.
type deviceUsage struct {
	used uint64 // device memory in use: total minus free
	fds  int    // fds open in the simulated process
}

func measureDevice(r *rank.Rank) (deviceUsage, error) {
	mi, ok := r.Device().(device.MemInfo)
	if !ok {
		return deviceUsage{}, fmt.Errorf("rank %d: device %T reports no memory", r.ID(), r.Device())
	}
	fc, ok := r.Device().(device.FDCounter)
	if !ok {
		return deviceUsage{}, fmt.Errorf("rank %d: device %T counts no fds", r.ID(), r.Device())
	}
	free, total, err := mi.MemInfo()
	if err != nil {
		return deviceUsage{}, fmt.Errorf("rank %d: device memory: %w", r.ID(), err)
	}
	return deviceUsage{used: total - free, fds: fc.OpenFDs()}, nil
}

// soakRun is what one simulation of the soak reports.
type soakRun struct {
	initial       []deviceUsage // per rank, before the first cycle
	before, after []deviceUsage // per rank, after the warm-up and at the end
	heapBefore    uint64        // rank 0's view of the live heap after the warm-up
	heapAfter     uint64        // and at the end
	virtual       time.Duration
}

func newSoakRun(world int) *soakRun {
	return &soakRun{initial: make([]deviceUsage, world), before: make([]deviceUsage, world), after: make([]deviceUsage, world)}
}

// soakProgram runs cycles checked all-reduces, cycling through specs. Each
// cycle allocates a symmetric buffer, rendezvouses on it (the collective's
// first use), all-reduces and frees it. After one warm-up pass over the
// specs (which creates the lazily built state) and at the end, the ranks
// line up on Store barriers and measure their devices; rank 0 also measures
// the host heap, since a per-cycle leak may be released when the
// simulation ends.
func soakProgram(specs []checkedSpec, cycles int, run *soakRun) rank.Program {
	return func(r *rank.Rank) error {
		all := make([]int, r.World())
		for i := range all {
			all[i] = i
		}
		ex, err := store.NewExchange(r.Store(), "soak", store.Group{Name: "world", Ranks: all}, r.ID())
		if err != nil {
			return err
		}
		results := make([]workload.RankResult, r.World())
		cycle := func(i int) error {
			s := specs[i%len(specs)]
			if err := s.Program(s.inputs, results)(r); err != nil {
				return fmt.Errorf("cycle %d (%v %v %v, %d bytes): %w", i, s.DType, s.Op, s.Algo, s.Bytes, err)
			}
			res := results[r.ID()]
			if !bytes.Equal(res.Output, s.want) {
				return fmt.Errorf("cycle %d (%v %v %v, %d bytes): rank %d's result differs from the reference", i, s.DType, s.Op, s.Algo, s.Bytes, r.ID())
			}
			if v := s.CheckRank(s.inputs, r.ID(), res); !v.OK() {
				return fmt.Errorf("cycle %d: %v", i, v.Problems)
			}
			return nil
		}
		measure := func(into []deviceUsage, heap *uint64) error {
			// Barriers on both sides: no rank is mid-operation while any
			// rank measures.
			if err := ex.Barrier(); err != nil {
				return err
			}
			u, err := measureDevice(r)
			if err != nil {
				return err
			}
			into[r.ID()] = u
			if r.ID() == 0 {
				*heap = liveHeap()
			}
			return ex.Barrier()
		}
		if err := measure(run.initial, new(uint64)); err != nil {
			return err
		}
		for i := range len(specs) {
			if err := cycle(i); err != nil {
				return fmt.Errorf("warm-up %w", err)
			}
		}
		if err := measure(run.before, &run.heapBefore); err != nil {
			return err
		}
		for i := range cycles {
			if err := cycle(i); err != nil {
				return err
			}
		}
		return measure(run.after, &run.heapAfter)
	}
}

// TestSoak runs alloc / rendezvous / all-reduce / free cycles on the
// simulator, every result checked, in simulations of world 2 and 4, and
// checks that the simulated devices' memory and fds, the test process's
// goroutines and fds, and its live heap (within soakHeapSlack) end where
// they started. SYMMEM_SOAK_CYCLES sets the number of cycles (40 by
// default, 300 in the long sweep; the full soak is 10000).
func TestSoak(t *testing.T) {
	cycles := soakShortCycles
	if longtest.Enabled() {
		cycles = soakCIcycles
	}
	if v := os.Getenv(soakCyclesEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number of cycles", soakCyclesEnv, v)
		}
		cycles = n
	}
	// Warm the process-wide state (package-level caches, the runtime's
	// pools, the simulator's pool of granules) with one small run of each
	// world before the baseline.
	idle := runtime.NumGoroutine()
	for _, world := range soakWorlds {
		if err := soakSimulation(world, 1, 1, newSoakRun(world)); err != nil {
			t.Fatal(err)
		}
	}
	start := settledHost(t, idle)
	wall := time.Now()
	var virtual time.Duration
	for i, world := range soakWorlds {
		n := cycles / len(soakWorlds)
		if i < cycles%len(soakWorlds) {
			n++
		}
		if n == 0 {
			continue
		}
		run := newSoakRun(world)
		if err := soakSimulation(world, uint64(i)+1, n, run); err != nil {
			t.Fatalf("soak world %d (%d cycles): %v", world, n, err)
		}
		for r := range world {
			if run.after[r] != run.before[r] {
				t.Fatalf("soak world %d: rank %d's device went from %d bytes in use and %d fds to %d and %d over %d cycles",
					world, r, run.before[r].used, run.before[r].fds, run.after[r].used, run.after[r].fds, n)
			}
		}
		growth := int64(run.heapAfter) - int64(run.heapBefore)
		t.Logf("world %d: %d cycles, virtual %v; device per rank: %d bytes in use and %d fds before the first cycle, %d and %d after the warm-up and at the end; live heap %+d bytes inside the simulation",
			world, n, run.virtual, run.initial[0].used, run.initial[0].fds, run.before[0].used, run.before[0].fds, growth)
		if growth > soakHeapSlack {
			t.Fatalf("soak world %d: live heap grew by %d bytes over %d cycles inside the simulation (slack %d)",
				world, growth, n, soakHeapSlack)
		}
		virtual += run.virtual
	}
	elapsed := time.Since(wall)
	end := settledHost(t, start.goroutines)
	t.Logf("%d cycles over worlds %v: wall %v, virtual %v, %.0f cycles/s",
		cycles, soakWorlds, elapsed.Round(time.Millisecond), virtual, float64(cycles)/elapsed.Seconds())
	t.Logf("host at start: %v", start)
	t.Logf("host at end:   %v", end)
	if end.goroutines > start.goroutines {
		var stacks strings.Builder
		_ = pprof.Lookup("goroutine").WriteTo(&stacks, 1)
		t.Errorf("goroutines: %d at start, %d at end; the live ones:\n%s", start.goroutines, end.goroutines, stacks.String())
	}
	if end.fds > start.fds {
		t.Errorf("open fds: %d at start, %d at end", start.fds, end.fds)
	}
	if growth := int64(end.heap) - int64(start.heap); growth > soakHeapSlack {
		t.Errorf("live heap grew by %d bytes over the soak (slack %d)", growth, soakHeapSlack)
	}
}

// soakSimulation runs one simulation of the soak and fills run.
func soakSimulation(world int, seed uint64, cycles int, run *soakRun) error {
	specs, err := prepareSpecs(world, seed)
	if err != nil {
		return err
	}
	res, err := simjob.Simulate(simjob.Config{World: world, Seed: seed}, soakProgram(specs, cycles, run))
	if err != nil {
		return fmt.Errorf("simulation (seed %d): %w", seed, err)
	}
	if err := res.Err(); err != nil {
		return fmt.Errorf("ranks (seed %d): %w", seed, err)
	}
	run.virtual = res.VirtualTime
	return nil
}
