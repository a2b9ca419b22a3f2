package race_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/symmem/symmem/conformance"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/internal/barriermut"
	"github.com/symmem/symmem/internal/longtest"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/oracle"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/signal"
	"github.com/symmem/symmem/simjob"
)

// TestProtocolIsRaceFree: the unmutated kernels, in every form, over
// several iterations on one buffer, worlds 2 to 4 and several seeds, report
// no race and compute the right result.
func TestProtocolIsRaceFree(t *testing.T) {
	seeds := uint64(2)
	if longtest.Enabled() {
		seeds = 4
	}
	for world := 2; world <= 4; world++ {
		for _, f := range []form{oneShot, oneShotCopy, twoShot, twoShotOut} {
			for seed := uint64(1); seed <= seeds; seed++ {
				what := fmt.Sprintf("%s world %d seed %d", f, world, seed)
				clean(t, what, simulate(t, simjob.Config{World: world, Seed: seed}, reduceLoop(f, 3, 256)))
			}
		}
	}
	// Several blocks per kernel (each on its own channel).
	for _, f := range []form{oneShot, twoShotOut} {
		what := fmt.Sprintf("%s with 3 blocks", f)
		clean(t, what, simulate(t, simjob.Config{World: 2, Seed: 7}, reduceLoop(f, 2, 3*kernels.OneShotThreads*16)))
	}
}

// TestConformanceIsRaceFree: the self-checking conformance programs run
// without races on worlds of 2 and 3 (the long ones on 2 only; world 3
// runs one case by default, every case with SYMMEM_LONG=1).
// intra-node-comm is left out: its 10 MiB reductions take long and run the
// kernels covered above. pad-isolation is included: it reads its pad
// around channel 1, which peers may already be signalling.
func TestConformanceIsRaceFree(t *testing.T) {
	conformanceRaceFree(t, sim.Config{})
}

// TestProtocolIsRaceFreePTX: the kernels' PTX, in every form, at worlds 2
// to 4 and with 16-, 8- and 4-byte vectors (so the specialised entries and
// the generic ones), report no race and compute the right result.
func TestProtocolIsRaceFreePTX(t *testing.T) {
	dev := sim.Config{Kernels: sim.Kernels{PTX: true, MaxThreads: sim.SweepThreads, MaxBlocks: sim.SweepBlocks}}
	for world := 2; world <= 4; world++ {
		for i, f := range []form{oneShot, oneShotCopy, twoShot, twoShotOut} {
			size := []uint64{256, 264, 260, 256}[(i+world)%4]
			what := fmt.Sprintf("%s world %d, %d elements", f, world, size)
			clean(t, what, simulate(t, simjob.Config{World: world, Seed: uint64(world), Device: dev}, reduceLoop(f, 2, size)))
		}
	}
}

// TestConformanceIsRaceFreePTX is TestConformanceIsRaceFree with the
// kernels' PTX run thread by thread: the compiled kernels, every thread's
// access and every barrier of theirs, are race-free too.
// The cases that reduce many or large tensors (the reference table,
// sim-conformance's and graphs' hundreds of KiB, the leak check's cycles)
// take minutes to interpret thread by thread under the detector and are
// left out: TestProtocolIsRaceFreePTX runs every form of the all-reduce
// kernels instead.
func TestConformanceIsRaceFreePTX(t *testing.T) {
	conformanceRaceFree(t, sim.Config{Kernels: sim.Kernels{PTX: true, MaxThreads: sim.SweepThreads, MaxBlocks: sim.SweepBlocks}}, "allreduce-table", "sim-conformance", "graphs", "leaks")
}

// conformanceRaceFree runs the conformance cases, but those named in
// leave, on dev with the race detector.
func conformanceRaceFree(t *testing.T, dev sim.Config, leave ...string) {
	skip := map[string]bool{"intra-node-comm": true}
	for _, name := range leave {
		skip[name] = true
	}
	long := map[string]bool{"allreduce-table": true, "sim-conformance": true}
	for _, world := range []int{2, 3} {
		for _, c := range conformance.Cases(conformance.Options{Cycles: 3, Seed: 1}) {
			if !c.Fits(world) || skip[c.Name] || (long[c.Name] && world > 2) {
				continue
			}
			if world > 2 && !longtest.Enabled() && c.Name != "subgroup-forms" {
				continue // world 3 in the long sweep; one odd-world case by default
			}
			what := fmt.Sprintf("%s world %d", c.Name, world)
			clean(t, what, simulate(t, simjob.Config{World: world, Seed: 1, Device: dev}, c.Program))
		}
	}
}

// TestRelaxedStartBarrierRaces: with a relaxed wait in the start barrier,
// a peer's host write of its input is not ordered before this rank's read
// of it, and the report names the relaxed wait as the missing acquire.
func TestRelaxedStartBarrierRaces(t *testing.T) {
	m := barriermut.Mutation{Kernel: kernels.OneShotAllReduce, Barrier: 1, Wait: barriermut.Order(signal.Relaxed)}
	cfg := simjob.Config{World: 2, Seed: 1, Device: sim.Config{WrapBlock: m.Wrap}}
	rs := races(t, "relaxed/relaxed start barrier", simulate(t, cfg, reduceLoop(oneShot, 1, 256)))
	r := rs[0]
	if r.First.Op != "write" || r.First.Kind != sim.Store || r.Second.Kernel != kernels.OneShotAllReduce ||
		r.Second.Kind != sim.Load || r.First.Device == r.Second.Device || r.Owner != r.First.Device {
		t.Fatalf("want the peer's host write of its input against this rank's load of it, got\n%v", r)
	}
	for _, s := range []string{"no release/acquire at system scope", "put (relaxed, system)", "wait (relaxed, system)", "no acquire"} {
		if !strings.Contains(r.Missing, s) {
			t.Errorf("missing edge %q does not say %q", r.Missing, s)
		}
	}
}

// peerKernelThenReduce: rank 1 first overwrites its tensor with a kernel of
// its own (a one-shot all-reduce over the group {1} of another allocation,
// with this buffer as output), then every rank reduces the buffer.
func peerKernelThenReduce(r *rank.Rank) error {
	const numel = 64
	x, err := r.Alloc(numel * 4)
	if err != nil {
		return err
	}
	defer r.Free(x)
	if _, err := r.Rendezvous(x, rank.WorldGroup); err != nil {
		return err
	}
	in := rank.Tensor{Ptr: x, DType: device.Float32, Numel: numel}
	if err := r.Write(in, input(r.ID(), 0, numel)); err != nil {
		return err
	}
	if r.ID() == 1 {
		if err := r.NewGroup("solo", []int{1}); err != nil {
			return err
		}
		y, err := r.Alloc(numel * 4)
		if err != nil {
			return err
		}
		defer r.Free(y)
		if err := r.Write(rank.Tensor{Ptr: y, DType: device.Float32, Numel: numel}, input(1, 1, numel)); err != nil {
			return err
		}
		h, err := r.Rendezvous(y, "solo")
		if err != nil {
			return err
		}
		blocks, threads := kernels.Shape(kernels.OneShotAllReduce, numel, device.Float32, 1, r.Device().Attributes().SMCount)
		args := kernels.AllReduceArgs{
			World: 1, DType: device.Float32, Op: device.Sum, Numel: numel,
			BufferPtrs: h.BufferPtrsDev(), PadPtrs: h.SignalPadPtrsDev(), PadBytes: h.SignalPadSize(),
			Output: x, TimeoutNs: int64(r.Timeout()),
		}
		if err := r.Device().Launch(r.Stream(), device.Launch{Kernel: kernels.OneShotAllReduce, Blocks: blocks, Threads: threads, Args: args}); err != nil {
			return err
		}
		if err := r.Device().Synchronize(r.Stream()); err != nil {
			return err
		}
	}
	out, err := r.OneShotAllReduce(in, device.Sum, rank.WorldGroup)
	if err != nil {
		return err
	}
	defer r.FreeTensor(out)
	got, err := r.Read(out)
	if err != nil {
		return err
	}
	want, _ := oracle.AllReduce(device.Float32, device.Sum, [][]byte{input(0, 0, numel), input(1, 1, numel)})
	if !bytes.Equal(got, want) {
		return fmt.Errorf("rank %d: result differs from the reference", r.ID())
	}
	return nil
}

// TestPeerKernelWriteNeedsAcquire: what a peer's previous kernel wrote is
// published by the next kernel's launch (the kernel boundary), so the
// current start barrier (put relaxed, wait acquire) orders it before this
// rank's reads; the relaxed/relaxed form does not.
func TestPeerKernelWriteNeedsAcquire(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		clean(t, "current start barrier", simulate(t, simjob.Config{World: 2, Seed: seed}, peerKernelThenReduce))
	}
	relax := func(b kernels.Block) kernels.Block {
		if b.Grid() == 1 && b.Kernel() == kernels.OneShotAllReduce {
			return barriermut.Mutation{Kernel: kernels.OneShotAllReduce, Barrier: 1, Wait: barriermut.Order(signal.Relaxed)}.Wrap(b)
		}
		return b
	}
	cfg := simjob.Config{World: 2, Seed: 1, Device: sim.Config{WrapBlock: relax}}
	rs := races(t, "relaxed/relaxed start barrier", simulate(t, cfg, peerKernelThenReduce))
	found := false
	for _, r := range rs {
		if r.First.Device == 1 && r.First.Kernel == kernels.OneShotAllReduce && r.First.Kind == sim.Store &&
			r.Second.Device == 0 && r.Second.Kind == sim.Load && r.Owner == 1 {
			found = true
		}
	}
	if !found {
		t.Fatalf("no race between rank 1's kernel store and rank 0's load:\n%v", rs)
	}
}

// TestMissingEndBarrierRaces: without the end barrier a rank rewrites its
// buffer for the next iteration while a peer may still read it; the report
// says no signal passed between them.
func TestMissingEndBarrierRaces(t *testing.T) {
	m := barriermut.Mutation{Kernel: kernels.OneShotAllReduce, Barrier: 2, Skip: true}
	cfg := simjob.Config{World: 2, Seed: 1, Device: sim.Config{WrapBlock: m.Wrap}}
	rs := races(t, "no end barrier", simulate(t, cfg, reduceLoop(oneShot, 2, 256)))
	found := false
	for _, r := range rs {
		if r.First.Kind == sim.Load && r.First.Kernel == kernels.OneShotAllReduce && r.Second.Op == "write" &&
			r.Second.Kind == sim.Store && r.First.Device != r.Second.Device && strings.Contains(r.Missing, "no signal from device") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no race between a peer's kernel load and the rewrite of the buffer:\n%v", rs)
	}
}

// TestNarrowScopeDoesNotSynchronise: release and acquire at GPU scope do
// not order accesses of two devices.
func TestNarrowScopeDoesNotSynchronise(t *testing.T) {
	for _, s := range []signal.Scope{signal.GPU, signal.Block} {
		m := barriermut.Mutation{Kernel: kernels.OneShotAllReduce, Barrier: 1, Put: barriermut.Order(signal.Release), Scope: barriermut.Scope(s)}
		cfg := simjob.Config{World: 2, Seed: 1, Device: sim.Config{WrapBlock: m.Wrap}}
		rs := races(t, s.String()+" scope", simulate(t, cfg, reduceLoop(oneShot, 1, 256)))
		want := fmt.Sprintf("scopes %s and %s do not both reach system", s, s)
		found := false
		for _, r := range rs {
			found = found || strings.Contains(r.Missing, want)
		}
		if !found {
			t.Errorf("%s scope: no report says %q:\n%v", s, want, rs)
		}
	}
}

// TestHostReadNeedsBarrier: reading a peer's buffer from the host is
// ordered after the peer's write by a barrier, or by a Store key the peer
// set after writing and the reader read before reading, and by nothing else.
func TestHostReadNeedsBarrier(t *testing.T) {
	const (
		none = iota
		barrier
		storeKey
	)
	program := func(sync int) rank.Program {
		return signalProgram(func(r *rank.Rank, h *rank.SymmetricMemory) error {
			if r.ID() == 1 {
				own, err := h.GetBuffer(1, 16, device.Float32, 0)
				if err != nil {
					return err
				}
				if err := r.Write(own, input(1, 0, 16)); err != nil {
					return err
				}
			}
			switch sync {
			case barrier:
				if err := h.Barrier(0, r.Timeout()); err != nil {
					return err
				}
			case storeKey:
				if r.ID() == 1 {
					if err := r.Store().Set("written", nil); err != nil {
						return err
					}
				} else if _, err := r.Store().Get("written"); err != nil {
					return err
				}
			}
			if r.ID() == 0 {
				peer, err := h.GetBuffer(1, 16, device.Float32, 0)
				if err != nil {
					return err
				}
				if _, err := r.Read(peer); err != nil {
					return err
				}
			}
			return h.Barrier(1, r.Timeout())
		})
	}
	clean(t, "with a barrier", simulate(t, simjob.Config{World: 2, Seed: 1}, program(barrier)))
	clean(t, "with a Store key", simulate(t, simjob.Config{World: 2, Seed: 1}, program(storeKey)))
	rs := races(t, "unsynchronised", simulate(t, simjob.Config{World: 2, Seed: 1}, program(none)))
	r := rs[0]
	if r.First.Device != 1 || r.First.Op != "write" || r.Second.Device != 0 || r.Second.Op != "read" {
		t.Fatalf("want rank 1's write against rank 0's read, got\n%v", r)
	}
}

// TestReportIsDeterministic: the same seed gives the same report.
func TestReportIsDeterministic(t *testing.T) {
	m := barriermut.Mutation{Kernel: kernels.TwoShotAllReduce, Barrier: 2, Put: barriermut.Order(signal.Relaxed)}
	run := func() string {
		cfg := simjob.Config{World: 3, Seed: 5, Device: sim.Config{WrapBlock: m.Wrap}}
		res := simulate(t, cfg, reduceLoop(twoShotOut, 2, 256))
		if res.Races == nil {
			t.Fatal("no race with a relaxed middle barrier")
		}
		return res.Races.Error()
	}
	a, b := run(), run()
	if a != b {
		t.Fatalf("two runs of one seed differ:\n%s\n---\n%s", a, b)
	}
	if !strings.Contains(a, "publishes only what preceded the writer's last fence (or its kernel's launch)") {
		t.Errorf("the report does not explain the relaxed put:\n%s", a)
	}
}
