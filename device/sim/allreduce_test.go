package sim

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/oracle"
)

type variant struct {
	name   string
	kernel string
	copy   bool // one-shot "_copy": input from a local tensor
	out    bool // two-shot "_out"
}

var variants = []variant{
	{"one-shot", kernels.OneShotAllReduce, false, false},
	{"one-shot-copy", kernels.OneShotAllReduce, true, false},
	{"two-shot", kernels.TwoShotAllReduce, false, false},
	{"two-shot-out", kernels.TwoShotAllReduce, false, true},
}

var (
	dtypes = []device.DType{device.Float32, device.BFloat16, device.Float16}
	ops    = []device.ReduceOp{device.Sum, device.Avg, device.Max, device.Min}
)

// randomInput makes numel elements of dt: mostly moderate values, with
// occasional specials (NaN, infinities, signed zeros, subnormals, huge).
func randomInput(rng *rand.Rand, dt device.DType, numel int) []byte {
	vals := make([]float32, numel)
	specials := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.Copysign(0, -1)), 0, 1e-40, -3e-8, 60000, -65000, 3e38}
	for i := range vals {
		if rng.IntN(64) == 0 {
			vals[i] = specials[rng.IntN(len(specials))]
			continue
		}
		vals[i] = float32((rng.Float64()*2 - 1) * math.Ldexp(1, rng.IntN(12)-4))
	}
	b, err := kernels.Encode(dt, vals)
	if err != nil {
		panic(err)
	}
	return b
}

type reduceCase struct {
	v              variant
	dt             device.DType
	op             device.ReduceOp
	offset, numel  uint64
	blocks, thread int // 0: kernels.Shape
}

func (c reduceCase) String() string {
	return fmt.Sprintf("%s/%v/%v/off%d/n%d", c.v.name, c.dt, c.op, c.offset, c.numel)
}

const sentinel = 0xa5

// allReduce runs c on every rank of h with the given inputs and returns
// every rank's result. It checks that bytes around the tensor in the buffer
// are untouched and that the pads are zero afterwards.
func (h *harness) allReduce(c reduceCase, inputs [][]byte) ([][]byte, error) {
	size := c.numel * uint64(c.dt.Size())
	results := make([][]byte, h.n)
	blocks, threads := c.blocks, c.thread
	if blocks == 0 {
		blocks, threads = kernels.Shape(c.v.kernel, c.numel, c.dt, h.n, DefaultSMCount)
	}
	const margin = 64
	errs := h.ranks(func(r int) error {
		d := h.dev(r)
		region := bytes.Repeat([]byte{sentinel}, int(c.offset+size+margin))
		if !c.v.copy {
			copy(region[c.offset:], inputs[r])
		}
		if err := d.Write(0, h.buf(r), region); err != nil {
			return err
		}
		a := h.allReduceArgs(r, c.dt, c.op, c.offset, c.numel)
		if c.v.copy {
			a.Input = h.local[r] + inOff
			if err := d.Write(0, a.Input, inputs[r]); err != nil {
				return err
			}
		}
		if c.v.kernel == kernels.OneShotAllReduce || c.v.out {
			a.Output = h.local[r] + outOff
			if err := d.Write(0, a.Output, bytes.Repeat([]byte{sentinel}, int(size+margin))); err != nil {
				return err
			}
		}
		if err := h.launch(r, c.v.kernel, blocks, threads, a); err != nil {
			return err
		}
		got := make([]byte, c.offset+size+margin)
		if err := d.Read(0, got, h.buf(r)); err != nil {
			return err
		}
		after := got[c.offset+size:]
		inPlace := c.v.kernel == kernels.TwoShotAllReduce && !c.v.out
		switch {
		case inPlace:
			results[r] = got[c.offset : c.offset+size]
		case c.v.copy && !bytes.Equal(got[c.offset:c.offset+size], inputs[r]):
			return fmt.Errorf("rank %d: buffer does not hold the copied input", r)
		case !c.v.copy && !bytes.Equal(got[c.offset:c.offset+size], inputs[r]) && c.v.kernel == kernels.OneShotAllReduce:
			return fmt.Errorf("rank %d: one-shot modified its input", r)
		}
		for i, b := range append(got[:c.offset:c.offset], after...) {
			if b != sentinel {
				return fmt.Errorf("rank %d: buffer byte %d outside the tensor changed to 0x%02x", r, i, b)
			}
		}
		if a.Output != 0 {
			out := make([]byte, size+margin)
			if err := d.Read(0, out, a.Output); err != nil {
				return err
			}
			for i, b := range out[size:] {
				if b != sentinel {
					return fmt.Errorf("rank %d: output byte %d past the tensor changed", r, int(size)+i)
				}
			}
			results[r] = out[:size]
		}
		return nil
	})
	for r, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("rank %d: %w", r, err)
		}
	}
	var perr error
	h.run(func() error { perr = h.padsZero(); return nil })
	return results, perr
}

// check compares every rank's result with the reference, bitwise.
func checkResults(t *testing.T, c reduceCase, inputs, results [][]byte) {
	t.Helper()
	want, err := oracle.AllReduce(c.dt, c.op, inputs)
	if err != nil {
		t.Fatal(err)
	}
	if err := oracle.CheckClose(c.dt, c.op, inputs, want); err != nil {
		t.Fatalf("%v: reference is not close to the exact result: %v", c, err)
	}
	for r, got := range results {
		if !bytes.Equal(got, want) {
			for i := 0; i < len(got); i += c.dt.Size() {
				if !bytes.Equal(got[i:i+c.dt.Size()], want[i:i+c.dt.Size()]) {
					t.Fatalf("%v: rank %d element %d: got % x, want % x", c, r, i/c.dt.Size(), got[i:i+c.dt.Size()], want[i:i+c.dt.Size()])
				}
			}
		}
	}
}

func TestAllReduceMatchesReference(t *testing.T) {
	numels := map[device.DType][]uint64{
		device.Float32:  {1, 1027, 2048, 3, 4096 + 1},
		device.BFloat16: {2, 1030, 4096, 6, 514},
		device.Float16:  {2, 1030, 4096, 6, 514},
	}
	offsets := []uint64{0, 4, 8, 16, 36}
	for world := 1; world <= 8; world++ {
		h := newHarness(t, world, uint64(world))
		rng := rand.New(rand.NewPCG(uint64(world), 7))
		i := 0
		for _, v := range variants {
			for _, dt := range dtypes {
				for _, op := range ops {
					i++
					c := reduceCase{v: v, dt: dt, op: op,
						offset: offsets[i%len(offsets)], numel: numels[dt][i%len(numels[dt])]}
					inputs := make([][]byte, world)
					for r := range inputs {
						inputs[r] = randomInput(rng, dt, int(c.numel))
					}
					results, err := h.allReduce(c, inputs)
					if err != nil {
						t.Fatalf("world %d %v: %v", world, c, err)
					}
					checkResults(t, c, inputs, results)
				}
			}
		}
	}
}
