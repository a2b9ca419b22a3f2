package kernels

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/oracle"
	"github.com/symmem/symmem/signal"
)

// arJob is the memory of an all-reduce job on a memSpace: every rank's
// buffer, signal pad, local input and output, and the pointer arrays.
type arJob struct {
	m                 *memSpace
	world             int
	padBytes          uint64
	bufs, pads        []device.Ptr
	inputs, outputs   []device.Ptr
	bufPtrs, padPtrs  device.Ptr
	bufBytes, ioBytes uint64
}

func newARJob(t *testing.T, world int, bufBytes, ioBytes uint64) *arJob {
	t.Helper()
	j := &arJob{m: newMemSpace(world*int(bufBytes+ioBytes*2+8192) + 1<<16), world: world, padBytes: 4096,
		bufBytes: bufBytes, ioBytes: ioBytes}
	for range world {
		j.bufs = append(j.bufs, j.m.alloc(t, bufBytes))
		j.pads = append(j.pads, j.m.alloc(t, j.padBytes))
		j.inputs = append(j.inputs, j.m.alloc(t, ioBytes))
		j.outputs = append(j.outputs, j.m.alloc(t, ioBytes))
	}
	j.bufPtrs, j.padPtrs = j.m.ptrArray(t, j.bufs), j.m.ptrArray(t, j.pads)
	return j
}

// args are rank r's arguments for a tensor of numel elements of dt at
// offset in every buffer.
func (j *arJob) args(r int, dt device.DType, op device.ReduceOp, offset, numel uint64) AllReduceArgs {
	return AllReduceArgs{Rank: int32(r), World: int32(j.world), DType: dt, Op: op, BufferPtrs: j.bufPtrs,
		PadPtrs: j.padPtrs, PadBytes: j.padBytes, Offset: offset, Numel: numel, TimeoutNs: int64(10 * time.Second)}
}

// randomInputs are world tensors of numel random elements of dt, with a
// few specials.
func randomInputs(rng *rand.Rand, world int, dt device.DType, numel int) [][]byte {
	specials := []float32{0, float32(math.Copysign(0, -1)), 1e30, -3}
	in := make([][]byte, world)
	for r := range in {
		v := make([]float32, numel)
		for i := range v {
			if rng.IntN(50) == 0 {
				v[i] = specials[rng.IntN(len(specials))]
			} else {
				v[i] = float32(rng.NormFloat64())
			}
		}
		in[r], _ = Encode(dt, v)
	}
	return in
}

func noErrors(t *testing.T, what string, errs []error) {
	t.Helper()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("%s: rank %d: %v", what, r, err)
		}
	}
}

func allRanks(world int) []int {
	r := make([]int, world)
	for i := range r {
		r[i] = i
	}
	return r
}

// TestCollectivesOnGoMemory: the one-shot (plain and copy forms),
// two-shot (in place and out-of-place) and low-latency kernels compute
// reference (package oracle) bitwise, on several worlds, dtypes, ops and grids.
func TestCollectivesOnGoMemory(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const numel, offset = 1000, 64
	for _, c := range []struct {
		kernel          string
		form            string
		world           int
		dt              device.DType
		op              device.ReduceOp
		blocks, threads int // 0: the reference shape
	}{
		{OneShotAllReduce, "", 1, device.Float32, device.Sum, 0, 0},
		{OneShotAllReduce, "", 3, device.BFloat16, device.Sum, 3, 32},
		{OneShotAllReduce, "copy", 2, device.Float16, device.Max, 0, 0},
		{OneShotAllReduce, "copy", 4, device.Float32, device.Avg, 2, 64},
		{TwoShotAllReduce, "", 3, device.BFloat16, device.Sum, 2, 32},
		{TwoShotAllReduce, "", 2, device.Float32, device.Min, 0, 0},
		{TwoShotAllReduce, "out", 3, device.Float32, device.Sum, 3, 32},
		{TwoShotAllReduce, "out", 4, device.Float16, device.Avg, 0, 0},
		{LowLatencyAllReduce, "", 2, device.BFloat16, device.Sum, 0, 0},
		{LowLatencyAllReduce, "", 3, device.Float32, device.Max, 3, 64},
	} {
		name := fmt.Sprintf("%s %s world %d %v %v", c.kernel, c.form, c.world, c.dt, c.op)
		t.Run(name, func(t *testing.T) {
			bytesN := uint64(numel * c.dt.Size())
			slot, ws := LowLatencyWorkspace(bytesN, c.world)
			j := newARJob(t, c.world, offset+max(bytesN, ws), bytesN)
			blocks, threads := c.blocks, c.threads
			if blocks == 0 {
				blocks, threads = Shape(c.kernel, numel, c.dt, c.world, 0)
			}
			// Low-latency calls alternate between workspace halves: run
			// two, with new inputs.
			calls := 1
			if c.kernel == LowLatencyAllReduce {
				calls = 2
			}
			for call := range calls {
				inputs := randomInputs(rng, c.world, c.dt, numel)
				for r, in := range inputs {
					switch {
					case c.kernel == LowLatencyAllReduce || c.form == "copy":
						j.m.write(t, j.inputs[r], in)
					default:
						j.m.write(t, j.bufs[r].Add(offset), in)
					}
				}
				errs := launchAll(j.m, c.kernel, allRanks(c.world), blocks, threads, func(r int) any {
					a := j.args(r, c.dt, c.op, offset, numel)
					switch {
					case c.kernel == LowLatencyAllReduce:
						a.Input, a.Output, a.SlotBytes = j.inputs[r], j.outputs[r], slot
					case c.kernel == OneShotAllReduce:
						a.Output = j.outputs[r]
						if c.form == "copy" {
							a.Input = j.inputs[r]
						}
					case c.form == "out":
						a.Output = j.outputs[r]
					}
					return a
				})
				noErrors(t, fmt.Sprintf("call %d", call), errs)
				want, err := oracle.AllReduce(c.dt, c.op, inputs)
				if err != nil {
					t.Fatal(err)
				}
				for r := range c.world {
					at := j.outputs[r]
					if c.kernel == TwoShotAllReduce && c.form == "" {
						at = j.bufs[r].Add(offset)
					}
					if got := j.m.read(t, at, bytesN); !bytes.Equal(got, want) {
						t.Fatalf("call %d: rank %d's result differs from the reference", call, r)
					}
				}
			}
		})
	}
}

// TestCollectiveOfNothing: a tensor of no elements is a no-op.
func TestCollectiveOfNothing(t *testing.T) {
	j := newARJob(t, 2, 1024, 64)
	for _, k := range []string{OneShotAllReduce, TwoShotAllReduce, LowLatencyAllReduce} {
		errs := launchAll(j.m, k, allRanks(2), 1, 32, func(r int) any {
			a := j.args(r, device.Float32, device.Sum, 0, 0)
			a.Output, a.Input, a.SlotBytes = j.outputs[r], j.inputs[r], 8
			if k == TwoShotAllReduce {
				a.Input = 0
			}
			return a
		})
		noErrors(t, k, errs)
	}
}

// TestCollectiveErrors: what a collective kernel finds wrong on the
// device is reported with the kernel, rank and block.
func TestCollectiveErrors(t *testing.T) {
	const numel = 64
	for _, c := range []struct {
		name    string
		kernel  string
		blocks  int
		ranks   []int // the ranks that run (default: both)
		change  func(t *testing.T, j *arJob, r int, a *AllReduceArgs)
		rank    int // whose error is checked
		want    string
		timeout bool // want a *device.KernelError of a wait that timed out
	}{
		{name: "null buffer pointer", kernel: OneShotAllReduce, change: func(t *testing.T, j *arJob, r int, a *AllReduceArgs) {
			a.BufferPtrs = j.m.ptrArray(t, []device.Ptr{j.bufs[0], 0})
		}, want: "kernel one_shot_all_reduce block 0: buffer[1] is null"},
		{name: "unmapped pad array", kernel: TwoShotAllReduce, change: func(t *testing.T, j *arJob, r int, a *AllReduceArgs) {
			a.PadPtrs = 0x100
		}, want: "kernel two_shot_all_reduce block 0: reading pad array at"},
		{name: "misaligned tensor", kernel: OneShotAllReduce, change: func(t *testing.T, j *arJob, r int, a *AllReduceArgs) {
			a.BufferPtrs = j.m.ptrArray(t, []device.Ptr{j.bufs[0], j.bufs[1] + 4})
		}, want: "kernel one_shot_all_reduce: tensor of rank 1 at"},
		{name: "output over the tensor", kernel: OneShotAllReduce, change: func(t *testing.T, j *arJob, r int, a *AllReduceArgs) {
			a.Output = j.bufs[r].Add(a.Offset + 16)
		}, want: "overlaps this rank's buffer tensor"},
		{name: "grid beyond the pad", kernel: OneShotAllReduce, blocks: 2, change: func(t *testing.T, j *arJob, r int, a *AllReduceArgs) {
			a.PadBytes = signal.SlotBytes * 2 // one channel for world 2
		}, rank: 0, want: "kernel one_shot_all_reduce block 1 of 2: grid too large for the pad"},
		{name: "peer tensor unmapped", kernel: TwoShotAllReduce, change: func(t *testing.T, j *arJob, r int, a *AllReduceArgs) {
			a.BufferPtrs = j.m.ptrArray(t, []device.Ptr{j.bufs[0], 0x4000_0000})
		}, want: "kernel two_shot_all_reduce rank 0 block 0: reading rank 1's tensor"},
		{name: "unmapped input", kernel: OneShotAllReduce, change: func(t *testing.T, j *arJob, r int, a *AllReduceArgs) {
			a.Input = 0x4000_0000
		}, want: "kernel one_shot_all_reduce rank 0 block 0: reading Input"},
		{name: "unmapped output", kernel: OneShotAllReduce, change: func(t *testing.T, j *arJob, r int, a *AllReduceArgs) {
			a.Output = 0x4000_0000
		}, want: "kernel one_shot_all_reduce rank 0 block 0: writing Output"},
		{name: "unmapped out-of-place output", kernel: TwoShotAllReduce, change: func(t *testing.T, j *arJob, r int, a *AllReduceArgs) {
			a.Output = 0x4000_0000
		}, want: "kernel two_shot_all_reduce rank 0 block 0: writing Output"},
		{name: "peer missing", kernel: OneShotAllReduce, ranks: []int{0}, change: func(t *testing.T, j *arJob, r int, a *AllReduceArgs) {
			a.TimeoutNs = int64(time.Millisecond)
		}, want: "wait timed out (no signal arrived)", timeout: true},
		{name: "low-latency peer missing", kernel: LowLatencyAllReduce, ranks: []int{0}, change: func(t *testing.T, j *arJob, r int, a *AllReduceArgs) {
			a.TimeoutNs = int64(time.Millisecond)
		}, want: "data of call 1 did not arrive", timeout: true},
		{name: "low-latency input unmapped", kernel: LowLatencyAllReduce, change: func(t *testing.T, j *arJob, r int, a *AllReduceArgs) {
			a.Input = 0x4000_0000
		}, want: "kernel ll_all_reduce rank 0 block 0: reading Input"},
		{name: "low-latency buffer unmapped", kernel: LowLatencyAllReduce, change: func(t *testing.T, j *arJob, r int, a *AllReduceArgs) {
			a.BufferPtrs = j.m.ptrArray(t, []device.Ptr{0x4000_0000, 0x4000_0000})
		}, want: "kernel ll_all_reduce rank 0 block 0: reading the call number"},
	} {
		t.Run(c.name, func(t *testing.T) {
			slot, ws := LowLatencyWorkspace(4*numel, 2)
			j := newARJob(t, 2, 4*numel+ws+64, 4*numel)
			ranks := c.ranks
			if ranks == nil {
				ranks = allRanks(2)
			}
			blocks := max(c.blocks, 1)
			errs := launchAll(j.m, c.kernel, ranks, blocks, 32, func(r int) any {
				a := j.args(r, device.Float32, device.Sum, 64, numel)
				a.TimeoutNs = int64(2 * time.Second)
				a.Output = j.outputs[r]
				if c.kernel == LowLatencyAllReduce {
					a.Input, a.SlotBytes = j.inputs[r], slot
				}
				if c.kernel == TwoShotAllReduce {
					a.Output = 0
				}
				c.change(t, j, r, &a)
				return a
			})
			err := errs[c.rank]
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("rank %d: error %v, want it to contain %q", c.rank, err, c.want)
			}
			var ke *device.KernelError
			if c.timeout && (!errors.As(err, &ke) || ke.Peer != 1 || ke.Timeout != time.Millisecond) {
				t.Errorf("error %#v is not a timeout waiting for rank 1", err)
			}
		})
	}
}

// TestSignalKernels: a put is seen by the matching wait; a second put
// before its wait finds the slot pending, a wait without a put times out,
// and a slot holding what no signal writes is reported as corrupt.
func TestSignalKernels(t *testing.T) {
	m := newMemSpace(1 << 16)
	pads := []device.Ptr{m.alloc(t, 4096), m.alloc(t, 4096), m.alloc(t, 4096)}
	padPtrs := m.ptrArray(t, pads)
	args := func(rank, peer int, timeout time.Duration) SignalArgs {
		return SignalArgs{Rank: int32(rank), World: 3, Peer: int32(peer), Channel: 2, PadPtrs: padPtrs, PadBytes: 4096,
			TimeoutNs: int64(timeout)}
	}
	run := func(kernel string, a SignalArgs) error {
		return launchAll(m, kernel, []int{int(a.Rank)}, 1, 1, func(int) any { return a })[0]
	}
	if err := run(PutSignal, args(0, 1, time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := run(WaitSignal, args(1, 0, time.Second)); err != nil {
		t.Fatalf("wait after a put: %v", err)
	}
	var ke *device.KernelError
	err := run(WaitSignal, args(1, 0, time.Millisecond))
	if !errors.As(err, &ke) || ke.Reason != "wait timed out (no signal arrived)" || ke.Rank != 1 || ke.Peer != 0 || ke.Channel != 2 {
		t.Errorf("wait without a put: %v", err)
	}
	if err := run(PutSignal, args(0, 2, time.Second)); err != nil {
		t.Fatal(err)
	}
	err = run(PutSignal, args(0, 2, time.Millisecond))
	if !errors.As(err, &ke) || ke.Reason != "put timed out (previous signal still pending in pad of rank 2)" {
		t.Errorf("second put before the wait: %v", err)
	}
	put, err := signal.Locate(signal.Put, 1, 2, 2, 3, 4096)
	if err != nil {
		t.Fatal(err)
	}
	m.write(t, pads[2].Add(put.Offset), []byte{0x78, 0x56, 0x34, 0x12})
	err = run(PutSignal, args(1, 2, time.Second))
	if !errors.As(err, &ke) || ke.Reason != "put found pad of rank 2 slot holding 0x12345678 (pad not zeroed or overwritten)" {
		t.Errorf("put into a corrupt slot: %v", err)
	}
	// Blocks other than 0 do nothing; bad arguments fail before memory.
	if err := launchAll(m, WaitSignal, []int{1}, 2, 1, func(int) any { return args(1, 0, time.Millisecond) })[0]; err == nil {
		t.Error("block 0 of a wait without a put succeeded")
	}
	if err := run(PutSignal, SignalArgs{World: 3, Peer: 1, PadBytes: 4096}); err == nil || !strings.Contains(err.Error(), "PadPtrs is null") {
		t.Errorf("put without pads: %v", err)
	}
	if err := run(PutSignal, SignalArgs{World: 3, Peer: 1, PadPtrs: 0x100, PadBytes: 4096}); err == nil || !strings.Contains(err.Error(), "reading pad array at") {
		t.Errorf("put with an unmapped pad array: %v", err)
	}
}

// TestBarrierKernel: a barrier of every rank passes; one rank alone times
// out waiting for the first peer that did not come.
func TestBarrierKernel(t *testing.T) {
	m := newMemSpace(1 << 16)
	pads := []device.Ptr{m.alloc(t, 4096), m.alloc(t, 4096), m.alloc(t, 4096)}
	padPtrs := m.ptrArray(t, pads)
	args := func(r int, timeout time.Duration) any {
		return SignalArgs{Rank: int32(r), World: 3, Channel: 1, PadPtrs: padPtrs, PadBytes: 4096, TimeoutNs: int64(timeout)}
	}
	for round := range 3 {
		noErrors(t, fmt.Sprintf("barrier %d", round), launchAll(m, Barrier, allRanks(3), 1, 32, func(r int) any { return args(r, time.Second) }))
	}
	err := launchAll(m, Barrier, []int{2}, 1, 32, func(r int) any { return args(r, time.Millisecond) })[0]
	var ke *device.KernelError
	if !errors.As(err, &ke) || ke.Rank != 2 || ke.Peer != 0 || ke.Reason != "wait timed out (no signal arrived)" {
		t.Errorf("barrier of one rank: %v", err)
	}
}
