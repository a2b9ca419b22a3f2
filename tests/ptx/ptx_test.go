package ptx

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/symmem/symmem/conformance"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/internal/longtest"
	"github.com/symmem/symmem/internal/simtest"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/simjob"
	"github.com/symmem/symmem/workload"
)

// ptxDevice is the simulated device configuration that runs the kernels'
// PTX, on grids of at most three blocks of two warps (the suite's sweep
// shape: code for a second warp and a third block runs).
var ptxDevice = sim.Config{Kernels: sim.Kernels{PTX: true, MaxThreads: sim.SweepThreads, MaxBlocks: sim.SweepBlocks}}

// TestPTXConformance runs the self-checking conformance cases with the
// kernels' PTX, thread by thread, on grids of up to three blocks of two
// warps: the reference table (every dtype, form, offset and size, checked
// bitwise), signals, bounds, groups, bad inputs, leaks, and graph replays
// at world 2, under go test -race too. The default run covers worlds 2
// and 5 (the reference table and the leak check at world 2 only); the long
// sweep (SYMMEM_LONG=1) every case at every world from 2 to 8. Left out
// are the cases whose tensors (300 KiB, 10 MiB) take minutes to interpret:
// sim-conformance (the bitwise comparison with the Go twins is
// TestPTXMatchesGoTwins here) and intra-node-comm.
func TestPTXConformance(t *testing.T) {
	worlds := []int{2, 5}
	if longtest.Enabled() {
		worlds = []int{2, 3, 4, 5, 6, 7, 8}
	}
	for _, world := range worlds {
		for _, c := range conformance.Cases(conformance.Options{Cycles: 3, Seed: 7}) {
			switch {
			case !c.Fits(world), c.Name == "sim-conformance", c.Name == "intra-node-comm":
				continue
			case c.Name == "graphs" && world > 2:
				continue
			case (c.Name == "allreduce-table" || c.Name == "leaks") && world > 2 && !longtest.Enabled():
				continue
			}
			t.Run(fmt.Sprintf("%s/world%d", c.Name, world), func(t *testing.T) {
				simtest.Simulate(t, simjob.Config{World: world, Seed: uint64(world), Device: ptxDevice}, c.Program)
			})
		}
	}
}

// TestPTXMatchesGoTwins is the differential test: the same inputs (random
// bit patterns, so NaNs, infinities, subnormals and overflowing sums
// included) reduced by every algorithm, dtype and op, at a world size with
// specialised entry points (4) and one without (3), with 16-byte and
// 4-byte vectors, give bitwise the same results with the Go twins and
// with the kernels' PTX, on grids of any shape.
func TestPTXMatchesGoTwins(t *testing.T) {
	// At world 3 the PTX also runs on grids of 3 blocks of 8 threads: the
	// kernels are right for any shape.
	odd := sim.Config{Kernels: sim.Kernels{PTX: true, MaxThreads: 8, MaxBlocks: 3}}
	for _, world := range []int{3, 4} {
		twin := differential(t, world, sim.Config{})
		devs := []sim.Config{ptxDevice}
		if world == 3 {
			devs = append(devs, odd)
		}
		for _, dev := range devs {
			ptx := differential(t, world, dev)
			if len(twin) == 0 || len(twin) != len(ptx) {
				t.Fatalf("world %d: %d twin results, %d PTX results", world, len(twin), len(ptx))
			}
			for i := range twin {
				if twin[i].what != ptx[i].what {
					t.Fatalf("world %d: result %d is %s with the twins, %s with PTX", world, i, twin[i].what, ptx[i].what)
				}
				if !bytes.Equal(twin[i].out, ptx[i].out) {
					t.Errorf("world %d, %+v: %s: PTX result differs from the Go twin's", world, dev.Kernels, twin[i].what)
				}
			}
		}
	}
}

type labelled struct {
	what string
	out  []byte
}

// differential runs every reduction of TestPTXMatchesGoTwins on world ranks
// and returns rank 0's results in order (the program checks that every
// rank got the same).
func differential(t *testing.T, world int, dev sim.Config) []labelled {
	t.Helper()
	results := make([][]labelled, world)
	program := func(r *rank.Rank) error {
		const size = 256 // bytes of the tensors with 16-byte vectors
		buf, err := r.Alloc(2 * size)
		if err != nil {
			return err
		}
		defer r.Free(buf)
		ll, err := r.NewLowLatency(rank.WorldGroup, size)
		if err != nil {
			return err
		}
		defer ll.Close()
		for _, dt := range []device.DType{device.Float32, device.BFloat16, device.Float16} {
			for _, op := range []device.ReduceOp{device.Sum, device.Avg, device.Max, device.Min} {
				for _, shape := range []struct{ off, bytes uint64 }{{0, size}, {4, size - 12}} {
					numel := shape.bytes / uint64(dt.Size())
					in := rank.Tensor{Ptr: buf.Add(shape.off), DType: dt, Numel: numel}
					for _, algo := range []string{"one-shot", "two-shot", "ll"} {
						what := fmt.Sprintf("%v %v %s offset %d", dt, op, algo, shape.off)
						input := specialInputs(r.ID(), world, shape.bytes, dt, uint64(op)*7+shape.off)
						if err := r.Write(in, input); err != nil {
							return err
						}
						var got []byte
						switch algo {
						case "ll":
							out, err := r.Empty(numel, dt)
							if err != nil {
								return err
							}
							if err := ll.AllReduce(in, op, out); err != nil {
								return fmt.Errorf("%s: %w", what, err)
							}
							got, err = r.Read(out)
							if err != nil {
								return err
							}
							if err := r.FreeTensor(out); err != nil {
								return err
							}
						default:
							if got, err = conformance.RunForm(r, algo, in, op); err != nil {
								return fmt.Errorf("%s: %w", what, err)
							}
						}
						results[r.ID()] = append(results[r.ID()], labelled{what, got})
					}
				}
			}
		}
		return nil
	}
	simtest.Simulate(t, simjob.Config{World: world, Seed: 5, Device: dev}, program)
	for r := 1; r < world; r++ {
		for i, x := range results[r] {
			if !bytes.Equal(x.out, results[0][i].out) {
				t.Fatalf("world %d: %s: rank %d's result differs from rank 0's", world, x.what, r)
			}
		}
	}
	return results[0]
}

// specialInputs is rank r's input of n bytes of dt: mostly random bit
// patterns (every class of value, NaNs with payloads included), some
// values near the type's largest (sums overflow) and ties of rounding.
func specialInputs(r, world int, n uint64, dt device.DType, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, uint64(r*world+1)))
	b := make([]byte, n)
	size := dt.Size()
	for i := 0; i+size <= len(b); i += size {
		var v uint32
		switch k := rng.IntN(8); {
		case k < 4:
			v = rng.Uint32() // any value at all
		case k < 6:
			// Moderate values, so that most sums are finite.
			f := float32(rng.NormFloat64() * 100)
			v = math.Float32bits(f)
			if dt != device.Float32 {
				v = uint32(kernels.BF16FromFloat32(f))
				if dt == device.Float16 {
					v = uint32(kernels.F16FromFloat32(f))
				}
			}
		case k < 7:
			// Near the largest finite value.
			switch dt {
			case device.Float32:
				v = 0x7f7fffff - rng.Uint32N(16)
			default:
				v = 0x7bff - rng.Uint32N(16)
				if dt == device.BFloat16 {
					v = 0x7f7f - rng.Uint32N(16)
				}
			}
			v |= rng.Uint32N(2) << uint(8*size-1)
		default:
			// Subnormals.
			v = rng.Uint32N(1<<10) | rng.Uint32N(2)<<uint(8*size-1)
		}
		for j := 0; j < size; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

// TestPTXSameSeedSameTrace: in PTX mode a seed fixes the schedule of every
// thread, so the same seed gives the same trace hash, and another seed
// another one.
func TestPTXSameSeedSameTrace(t *testing.T) {
	spec := workload.Spec{World: 3, Bytes: 1 << 10, DType: device.BFloat16, Op: device.Sum, Algo: workload.TwoShot, Seed: 1}
	trace := func(seed uint64) string {
		inputs := spec.Inputs()
		results := make([]workload.RankResult, spec.World)
		res := simtest.Simulate(t, simjob.Config{World: spec.World, Seed: seed, Device: ptxDevice}, spec.Program(inputs, results))
		if v := spec.Check(inputs, results); !v.OK() {
			t.Fatalf("seed %d: %v", seed, v.Problems)
		}
		return res.Trace
	}
	a, b, c := trace(1), trace(1), trace(2)
	if a != b {
		t.Fatalf("seed 1 gave traces %s and %s", a, b)
	}
	if a == c {
		t.Fatalf("seeds 1 and 2 gave the same trace %s", a)
	}
}

// TestPTXErrorsMatchGoTwins: a kernel that gives up reports through its
// error record the same error as the Go twin: a low-latency call whose
// peer never sends, and a wait for a signal never put.
func TestPTXErrorsMatchGoTwins(t *testing.T) {
	program := func(r *rank.Rank) error {
		ll, err := r.NewLowLatency(rank.WorldGroup, 64)
		if err != nil {
			return err
		}
		defer ll.Close()
		buf, err := r.Alloc(64)
		if err != nil {
			return err
		}
		defer r.Free(buf)
		h, err := r.Rendezvous(buf, rank.WorldGroup)
		if err != nil {
			return err
		}
		if r.ID() == 1 {
			return nil // never sends, never signals
		}
		in := rank.Tensor{Ptr: buf, DType: device.Float32, Numel: 16}
		out, err := r.Empty(16, device.Float32)
		if err != nil {
			return err
		}
		defer r.FreeTensor(out)
		return errors.Join(ll.AllReduce(in, device.Sum, out), h.WaitSignal(1, 0, 30*time.Millisecond))
	}
	errs := map[bool]string{}
	for _, ptx := range []bool{false, true} {
		res, err := simjob.Simulate(simjob.Config{World: 2, Seed: 1, Timeout: 50 * time.Millisecond,
			Device: sim.Config{Kernels: sim.Kernels{PTX: ptx, MaxThreads: sim.SweepThreads, MaxBlocks: sim.SweepBlocks}}}, program)
		if err != nil {
			t.Fatal(err)
		}
		if res.Errs[0] == nil {
			t.Fatalf("PTX %v: rank 0 succeeded", ptx)
		}
		for _, want := range []string{"data of call 1 did not arrive", "wait timed out"} {
			if !strings.Contains(res.Errs[0].Error(), want) {
				t.Errorf("PTX %v: rank 0's error does not say %q:\n%v", ptx, want, res.Errs[0])
			}
		}
		errs[ptx] = res.Errs[0].Error()
	}
	if errs[false] != errs[true] {
		t.Errorf("errors differ:\ntwin: %s\nPTX:  %s", errs[false], errs[true])
	}
	t.Logf("rank 0: %s", errs[true])
}
