package fuzz

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/oracle"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/signal"
	"github.com/symmem/symmem/simjob"
)

// elementBits reads element i of a little-endian input of dt as raw bits.
func elementBits(dt device.DType, b []byte, i int) uint32 {
	if dt.Size() == 2 {
		return uint32(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return binary.LittleEndian.Uint32(b[4*i:])
}

// TestInputsDrawSpecialValues: in every dtype, some inputs carry NaNs
// (quiet and signalling, both signs, payloads other than the canonical
// one), infinities, both zeros, subnormals and the largest finite value,
// and the ranks' values meet: a NaN arrives from a rank other than 0 where
// rank 0 holds a number, +0 meets -0, and largest values meet.
func TestInputsDrawSpecialValues(t *testing.T) {
	for _, dt := range []device.DType{device.Float32, device.BFloat16, device.Float16} {
		db := dtypeBits[dt]
		c := Coll{Bytes: 256 * uint64(dt.Size()), DType: dt}
		seen := map[string]bool{}
		for call := range 64 {
			in := make([][]byte, 4)
			for r := range in {
				in[r] = makeInput(uint64(call), r, call%6, call%3, 0, c)
			}
			for i := range 256 {
				var nanAt, zeroSigns, huge int
				for r := range in {
					v := elementBits(dt, in[r], i)
					mag := v &^ db.sign
					switch {
					case mag > db.inf && mag&db.quiet != 0:
						seen["quiet NaN"] = true
						nanAt |= 1 << r
						if v&db.sign != 0 {
							seen["negative NaN"] = true
						}
						if mag&db.payload != 0 {
							seen["NaN payload"] = true
						}
					case mag > db.inf:
						seen["signalling NaN"] = true
						nanAt |= 1 << r
					case mag == db.inf:
						seen["infinity"] = true
					case mag == 0:
						zeroSigns |= 1 << (v >> (8*dt.Size() - 1))
					case mag <= db.maxSub:
						seen["subnormal"] = true
					case mag == db.maxFin:
						huge++
					}
				}
				if nanAt&1 == 0 && nanAt != 0 {
					seen["NaN from a rank other than 0"] = true
				}
				if zeroSigns == 3 {
					seen["+0 meets -0"] = true
				}
				if huge >= 2 {
					seen["largest values meet"] = true
				}
			}
		}
		for _, want := range []string{"quiet NaN", "negative NaN", "NaN payload", "signalling NaN", "infinity", "subnormal",
			"NaN from a rank other than 0", "+0 meets -0", "largest values meet"} {
			if !seen[want] {
				t.Errorf("%v: 64 collectives' inputs drew no %s", dt, want)
			}
		}
	}
}

// TestSpecialValuesMeetTheReference: the Go twins and the reference agree
// bitwise on inputs full of special values, every reduction, every dtype;
// every NaN result is the canonical NaN whatever the inputs' payloads.
func TestSpecialValuesMeetTheReference(t *testing.T) {
	p := Program{World: 3, Groups: [][]int{{0, 1, 2}}, Bufs: []uint64{4096}}
	for _, dt := range []device.DType{device.Float32, device.BFloat16, device.Float16} {
		for _, op := range []device.ReduceOp{device.Sum, device.Avg, device.Max, device.Min} {
			p.Steps = append(p.Steps, Step{Kind: StepColl, Colls: []Coll{{Form: OneShotOut, Offset: 64, Bytes: 1024, DType: dt, Op: op}}})
		}
	}
	// Find an input seed whose first collective carries special values.
	var seed uint64
	for ; seed < 64; seed++ {
		b := makeInput(seed, 1, 0, 0, 0, p.Steps[0].Colls[0])
		if hasNaN(b) {
			break
		}
	}
	o, err := Run(Case{Program: p, InputSeed: seed, Seed: 1, Strategy: StrategyRandom})
	if err != nil {
		t.Fatal(err)
	}
	if o.Failed() {
		t.Fatalf("%v\n%s", o.Failure, o.Case.Command())
	}
	nans := 0
	for _, s := range p.Steps {
		c := s.Colls[0]
		in := make([][]byte, 3)
		for r := range in {
			in[r] = makeInput(seed, r, 0, 0, 0, c)
		}
		want, err := oracle.AllReduce(c.DType, c.Op, in)
		if err != nil {
			t.Fatal(err)
		}
		db := dtypeBits[c.DType]
		canonical := uint32(kernels.CanonicalNaN32)
		if db.size == 2 {
			canonical = uint32(kernels.CanonicalNaNBF16)
		}
		for i := range int(c.Bytes) / db.size {
			if v := elementBits(c.DType, want, i); v&^db.sign > db.inf {
				nans++
				if v != canonical {
					t.Fatalf("%v %v element %d: the reference stores NaN %#x, want the canonical %#x", c.DType, c.Op, i, v, canonical)
				}
			}
		}
	}
	if nans == 0 {
		t.Fatal("no reduction produced a NaN: the inputs carried none")
	}
}

func hasNaN(f32 []byte) bool {
	for i := 0; i+4 <= len(f32); i += 4 {
		if math.IsNaN(float64(math.Float32frombits(binary.LittleEndian.Uint32(f32[i:])))) {
			return true
		}
	}
	return false
}

// TestProgramsDrawLargeSizes: default programs draw, now and then, tensors
// on both sides of 256 KiB and of several MiB, within the simulator's
// memory estimate, the low-latency form never past its largest size; the
// buffers hold only what the slots need.
func TestProgramsDrawLargeSizes(t *testing.T) {
	sizes := map[uint64]bool{}
	var total, large int
	for seed := range uint64(2000) {
		p := DrawProgram(seed, nil, nil, nil)
		var bufs uint64
		for _, b := range p.Bufs {
			bufs += b
		}
		for _, s := range p.Steps {
			for _, c := range s.Colls {
				total++
				if c.Bytes > 65536 {
					large++
					sizes[c.Bytes] = true
					if est := simjob.EstimateSimMemory(p.World, c.Bytes); est > maxDrawnMemory {
						t.Fatalf("seed %d: %d bytes on %d ranks: estimate %d over %d", seed, c.Bytes, p.World, est, maxDrawnMemory)
					}
				}
				if c.Form == LL && c.Bytes > rank.LowLatencyMaxBytes {
					t.Fatalf("seed %d: ll of %d bytes", seed, c.Bytes)
				}
			}
		}
		if bufs > 2*(3<<20)+(1<<20) {
			t.Fatalf("seed %d: %d bytes of buffers: %s", seed, bufs, p)
		}
	}
	for _, n := range []uint64{256<<10 - 4, 256<<10 + 16, 3 << 20} {
		if !sizes[n] {
			t.Errorf("2000 programs drew no tensor of %d bytes (drew %v)", n, sizes)
		}
	}
	if large*10 > total {
		t.Errorf("%d of %d collectives are large: the average case is no longer cheap", large, total)
	}
}

// TestTimeoutStep: a wait nothing signals ends as the timeout error the
// device gives, on the Go twins and on the interpreted PTX (whose
// spinning thread sleeps until the launch's timeout, so the run stays far
// below its step bound), and the rank goes on to its next step; a kernel
// that swallowed the timeout is a wrong result.
func TestTimeoutStep(t *testing.T) {
	p, err := ParseProgram("world=3 groups=0,2 bufs=4096; timeout g1 b0 ch3; one-shot g0 b0@64 64 float32 sum")
	if err != nil {
		t.Fatal(err)
	}
	for _, ptx := range []bool{false, true} {
		c := Case{Program: p, InputSeed: 1, Seed: 1, Strategy: StrategyRandom, Kernels: sim.Kernels{PTX: ptx}}
		o, err := Run(c)
		if err != nil {
			t.Fatal(err)
		}
		if o.Failed() {
			t.Fatalf("ptx %t: %v", ptx, o.Failure)
		}
		if o.Verdicts[0].Checked != 2 || o.Verdicts[1].Checked != 1 || o.Verdicts[2].Checked != 2 {
			t.Fatalf("ptx %t: verdicts %+v, want the timeout checked on ranks 0 and 2 and the all-reduce on all", ptx, o.Verdicts)
		}
		if o.VirtualTime < DefaultTimeout/8 || o.Steps > 20000 {
			t.Fatalf("ptx %t: %d steps, %v virtual: want the wait to sleep to its timeout", ptx, o.Steps, o.VirtualTime)
		}
	}
	c := Case{Program: p, InputSeed: 1, Seed: 1, Strategy: StrategyRandom, Instrument: func(cfg *simjob.Config) {
		cfg.Device.WrapBlock = func(b kernels.Block) kernels.Block {
			if b.Kernel() != kernels.WaitSignal {
				return b
			}
			return &swallowTimeout{Block: b}
		}
	}}
	o, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	if o.Failure == nil || o.Failure.Kind != WrongResult || !strings.Contains(o.Failure.Detail, "returned success") {
		t.Fatalf("a wait that swallowed its timeout: failure %v, want a wrong result", o.Failure)
	}
}

// swallowTimeout pretends a wait that timed out found its signal.
type swallowTimeout struct {
	kernels.Block
	timedOut bool
}

func (b *swallowTimeout) WaitU32(p device.Ptr, what string, ready func(uint32) bool, timeout time.Duration) error {
	err := b.Block.WaitU32(p, what, ready, timeout)
	if errors.Is(err, kernels.ErrWaitTimeout) {
		b.timedOut = true
		return nil
	}
	return err
}

func (b *swallowTimeout) CAS32(p device.Ptr, old, new uint32, o signal.Order, s signal.Scope) (uint32, error) {
	if b.timedOut {
		return old, nil
	}
	return b.Block.CAS32(p, old, new, o, s)
}

// TestStepBudgetCoversPTXRuns: the step bound a case gets by default grows
// with its program, so that a fault-free run of interpreted PTX kernels
// (every thread's peer access a scheduling point) ends far below it.
func TestStepBudgetCoversPTXRuns(t *testing.T) {
	p, err := ParseProgram("world=4 bufs=16384; ll g0 b0@64 4096 float32 sum")
	if err != nil {
		t.Fatal(err)
	}
	c := Case{Program: p, InputSeed: 1, Seed: 1, Strategy: StrategyRandom, Kernels: sim.Kernels{PTX: true}}
	o, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	if o.Failed() {
		t.Fatalf("%v", o.Failure)
	}
	if budget := c.maxSteps(); o.Steps*2 > budget {
		t.Fatalf("a fault-free run took %d steps of its budget of %d", o.Steps, budget)
	}
	t.Logf("%d steps, budget %d", o.Steps, c.maxSteps())
	// A program 64 times larger (as large as the low-latency all-reduce
	// goes) gets a budget above 64 times the steps this one took, and
	// above the Go twins' budget for it.
	p.Steps[0].Colls[0].Bytes *= 64
	p.Bufs[0] *= 64
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if budget := StepBudget(p, true); budget < 64*o.Steps {
		t.Fatalf("budget %d for 64 times the bytes, which take about %d steps", budget, 64*o.Steps)
	}
	if StepBudget(p, false) >= StepBudget(p, true) {
		t.Fatal("the Go twins' budget is not below the PTX one")
	}
}
