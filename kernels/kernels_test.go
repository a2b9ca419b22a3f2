package kernels

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/oracle"
)

func TestCheckAlignment(t *testing.T) {
	cases := []struct {
		off, size uint64
		dt        device.DType
		vec       int
		ok        bool
	}{
		{0, 4096, device.Float32, 16, true},
		{4, 8192, device.Float32, 4, true},
		{8, 8192, device.Float32, 8, true},
		{16, 8196, device.Float32, 4, true},
		{16, 8200, device.BFloat16, 8, true},
		{32, 32, device.Float16, 16, true},
		{2, 8, device.BFloat16, 0, false}, // offset not a multiple of 4
		{4, 6, device.BFloat16, 0, false}, // size not a multiple of 4
		{4, 2, device.Float16, 0, false},
		{6, 4, device.Float32, 0, false},
		{0, 0, device.Float32, 16, true}, // empty tensor
		{0, 4, device.DType(7), 0, false},
	}
	for _, c := range cases {
		vec, err := CheckAlignment(c.off, c.size, c.dt)
		if (err == nil) != c.ok || vec != c.vec {
			t.Errorf("CheckAlignment(%d, %d, %v) = %d, %v; want %d, ok=%v", c.off, c.size, c.dt, vec, err, c.vec, c.ok)
		}
		if err != nil && c.dt.Valid() && !strings.Contains(err.Error(), "multiple of 4") {
			t.Errorf("error %q does not state the required multiple", err)
		}
	}
}

func TestShape(t *testing.T) {
	cases := []struct {
		kernel          string
		numel           uint64
		dt              device.DType
		world, sm       int
		blocks, threads int
	}{
		{PutSignal, 0, device.Float32, 4, 132, 1, 1},
		{WaitSignal, 0, device.Float32, 8, 132, 1, 1},
		{Barrier, 0, device.Float32, 8, 132, 1, 8},
		{OneShotAllReduce, 1024, device.Float32, 4, 132, 1, 256},       // 256 vectors of 16 bytes
		{OneShotAllReduce, 1, device.Float32, 4, 132, 1, 32},           // one vector, a warp
		{OneShotAllReduce, 1, device.Float32, 40, 132, 1, 64},          // a thread per rank for the barrier
		{OneShotAllReduce, 1 << 20, device.Float32, 8, 132, 24, 512},   // capped at 24 blocks
		{OneShotAllReduce, 1 << 20, device.Float32, 8, 16, 16, 512},    // and at the SM count
		{OneShotAllReduce, 8192, device.BFloat16, 2, 132, 2, 512},      // 1024 vectors of 8 bf16
		{TwoShotAllReduce, 1 << 20, device.BFloat16, 8, 132, 16, 1024}, // 2^17 per rank, 16384 vectors
		{TwoShotAllReduce, 4096, device.Float32, 4, 132, 1, 256},
		{TwoShotAllReduce, 0, device.Float32, 4, 132, 1, 32},
		{"nope", 10, device.Float32, 4, 132, 0, 0},
	}
	for _, c := range cases {
		b, th := Shape(c.kernel, c.numel, c.dt, c.world, c.sm)
		if b != c.blocks || th != c.threads {
			t.Errorf("Shape(%s, %d, %v, %d, %d) = %d x %d, want %d x %d", c.kernel, c.numel, c.dt, c.world, c.sm, b, th, c.blocks, c.threads)
		}
	}
}

func TestChunk(t *testing.T) {
	// round_up(numel, vecElems*W) / W
	for _, c := range []struct{ numel, vec, w, want uint64 }{
		{1027, 1, 4, 257}, {1024, 4, 4, 256}, {1025, 4, 4, 260}, {1, 4, 8, 4}, {0, 4, 2, 0},
	} {
		if got := Chunk(c.numel, int(c.vec), int(c.w)); got != c.want {
			t.Errorf("Chunk(%d, %d, %d) = %d, want %d", c.numel, c.vec, c.w, got, c.want)
		}
	}
}

// TestReducerRules: the reducer the Go twins use follows the arithmetic
// rules of the package doc, on cases where breaking one changes the bits
// (package oracle's TestRules holds the reference to the same).
func TestReducerRules(t *testing.T) {
	nan := float32(math.NaN())
	negZero := float32(math.Copysign(0, -1))
	inf := float32(math.Inf(1))
	cases := []struct {
		name   string
		dt     device.DType
		op     device.ReduceOp
		inputs [][]float32
		want   []uint32 // float32 bits, or 16-bit patterns for half types
	}{
		// rank order: (1e8 + 1) rounds to 1e8, then -1e8 gives 0; another order gives 1.
		{"rank order", device.Float32, device.Sum, [][]float32{{1e8}, {1}, {-1e8}}, []uint32{0}},
		// round once: 1 + 2^-8 + 2^-8 = 1 + 2^-7 exactly in float32, which bf16 holds;
		// rounding after every step would give 1.
		{"round once", device.BFloat16, device.Sum, [][]float32{{1}, {1.0 / 256}, {1.0 / 256}}, []uint32{0x3f81}},
		{"avg", device.Float32, device.Avg, [][]float32{{1}, {2}}, []uint32{math.Float32bits(1.5)}},
		{"avg of one", device.Float32, device.Avg, [][]float32{{0.1}}, []uint32{math.Float32bits(0.1)}},
		{"sum of one keeps -0", device.Float32, device.Sum, [][]float32{{negZero}}, []uint32{0x80000000}},
		{"nan canonical", device.Float32, device.Sum, [][]float32{{math.Float32frombits(0x7fc00123)}, {1}}, []uint32{0x7fffffff}},
		{"inf - inf", device.Float16, device.Sum, [][]float32{{inf}, {-inf}}, []uint32{0x7fff}},
		{"max propagates nan", device.BFloat16, device.Max, [][]float32{{1}, {nan}, {2}}, []uint32{0x7fff}},
		{"min propagates nan", device.Float32, device.Min, [][]float32{{nan}, {-5}}, []uint32{0x7fffffff}},
		{"max lowest rank wins ties", device.Float32, device.Max, [][]float32{{negZero}, {0}}, []uint32{0x80000000}},
		{"min lowest rank wins ties", device.Float32, device.Min, [][]float32{{0}, {negZero}}, []uint32{0}},
		{"max", device.Float16, device.Max, [][]float32{{-3}, {7}, {inf}, {2}}, []uint32{0x7c00}},
		{"min", device.Float16, device.Min, [][]float32{{-3}, {7}, {2}}, []uint32{0xc200}},
		{"fp16 overflow", device.Float16, device.Sum, [][]float32{{60000}, {60000}}, []uint32{0x7c00}},
	}
	for _, c := range cases {
		inputs := make([][]byte, len(c.inputs))
		for r, v := range c.inputs {
			inputs[r], _ = Encode(c.dt, v)
		}
		got := make([]byte, len(inputs[0]))
		red := reducer{dt: c.dt, op: c.op}
		red.reduce(got, inputs)
		var want []byte
		for _, w := range c.want {
			if c.dt == device.Float32 {
				want = binary.LittleEndian.AppendUint32(want, w)
			} else {
				want = binary.LittleEndian.AppendUint16(want, uint16(w))
			}
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: got % x, want % x", c.name, got, want)
		}
		if err := oracle.CheckClose(c.dt, c.op, inputs, got); err != nil {
			t.Errorf("%s: CheckClose rejects the result: %v", c.name, err)
		}
	}
}

// TestReducerMatchesReference checks the kernels' vector reducer against
// package oracle's element-by-element reference on random data with
// specials.
func TestReducerMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	specials := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)), 3e38, 1e-40}
	for _, dt := range []device.DType{device.Float32, device.BFloat16, device.Float16} {
		for _, op := range []device.ReduceOp{device.Sum, device.Avg, device.Max, device.Min} {
			for w := 1; w <= 9; w++ {
				inputs := make([][]byte, w)
				for r := range inputs {
					vals := make([]float32, 257)
					for i := range vals {
						if rng.IntN(16) == 0 {
							vals[i] = specials[rng.IntN(len(specials))]
						} else {
							vals[i] = float32(rng.NormFloat64() * 100)
						}
					}
					inputs[r], _ = Encode(dt, vals)
				}
				want, err := oracle.AllReduce(dt, op, inputs)
				if err != nil {
					t.Fatal(err)
				}
				got := make([]byte, len(want))
				red := reducer{dt: dt, op: op}
				red.reduce(got, inputs)
				if !bytes.Equal(got, want) {
					t.Fatalf("%v %v world %d: reducer and reference differ", dt, op, w)
				}
				if err := oracle.CheckClose(dt, op, inputs, got); err != nil {
					t.Fatalf("%v %v world %d: %v", dt, op, w, err)
				}
			}
		}
	}
}

func TestRegistry(t *testing.T) {
	names := Names()
	if !sort.StringsAreSorted(names) {
		t.Errorf("Names() = %v, not sorted", names)
	}
	for _, n := range []string{Barrier, LowLatencyAllReduce, OneShotAllReduce, PutSignal, TwoShotAllReduce, WaitSignal} {
		k, ok := Lookup(n)
		if !ok || k.Name != n || k.ArgType() == nil || !slices.Contains(names, n) {
			t.Fatalf("Lookup(%s) = %+v, %v; Names() = %v", n, k, ok, names)
		}
	}
	if _, ok := Lookup("all_to_all"); ok {
		t.Fatal("unknown kernel found")
	}
}

func TestCheckArgs(t *testing.T) {
	sig := SignalArgs{Rank: 0, World: 4, Peer: 1, Channel: 3, PadPtrs: 0x1000, PadBytes: 64, TimeoutNs: 0}
	ar := AllReduceArgs{Rank: 1, World: 4, DType: device.BFloat16, Op: device.Sum, BufferPtrs: 0x1000,
		PadPtrs: 0x2000, PadBytes: 4096, Offset: 16, Numel: 8, Output: 0x3000}
	put, _ := Lookup(PutSignal)
	barrier, _ := Lookup(Barrier)
	one, _ := Lookup(OneShotAllReduce)
	two, _ := Lookup(TwoShotAllReduce)
	if err := put.Check(sig); err != nil {
		t.Fatal(err)
	}
	if err := put.Check(&sig); err != nil {
		t.Fatal(err)
	}
	if err := one.Check(ar); err != nil {
		t.Fatal(err)
	}
	inPlace := ar
	inPlace.Output = 0
	if err := two.Check(inPlace); err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		name string
		k    *Kernel
		args any
		want string
	}{
		{"wrong type", put, ar, "want kernels.SignalArgs"},
		{"nil pointer", one, (*AllReduceArgs)(nil), "want kernels.AllReduceArgs"},
		{"channel = max", put, with(sig, func(a *SignalArgs) { a.Channel = 4 }), "channel 4 out of range [0, 4)"},
		{"rank -1", put, with(sig, func(a *SignalArgs) { a.Rank = -1 }), "rank -1"},
		{"peer = world", put, with(sig, func(a *SignalArgs) { a.Peer = 4 }), "rank 4"},
		{"no pad size", put, with(sig, func(a *SignalArgs) { a.PadBytes = 0 }), "PadBytes is 0"},
		{"null pads", barrier, with(sig, func(a *SignalArgs) { a.PadPtrs = 0 }), "PadPtrs is null"},
		{"negative timeout", put, with(sig, func(a *SignalArgs) { a.TimeoutNs = -1 }), "negative timeout"},
		{"world 0", put, with(sig, func(a *SignalArgs) { a.World = 0 }), "world size 0"},
		{"bad dtype", one, withAR(ar, func(a *AllReduceArgs) { a.DType = 5 }), "dtype"},
		{"bad op", one, withAR(ar, func(a *AllReduceArgs) { a.Op = 5 }), "reduce op"},
		{"misaligned offset", one, withAR(ar, func(a *AllReduceArgs) { a.Offset = 2 }), "offset of 2 bytes"},
		{"odd size", one, withAR(ar, func(a *AllReduceArgs) { a.Numel = 3 }), "size of 6 bytes"},
		{"no output", one, withAR(ar, func(a *AllReduceArgs) { a.Output = 0 }), "Output is null"},
		{"two-shot input", two, withAR(ar, func(a *AllReduceArgs) { a.Input = 0x4000 }), "Input must be null"},
		{"misaligned output", one, withAR(ar, func(a *AllReduceArgs) { a.Output = 0x3004 }), "not aligned"},
		{"pad too small", one, withAR(ar, func(a *AllReduceArgs) { a.PadBytes = 8 }), "no channel"},
		{"overflow", one, withAR(ar, func(a *AllReduceArgs) { a.Numel = math.MaxUint64 / 2 }), "overflow"},
	}
	for _, c := range bad {
		err := c.k.Check(c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

func with(a SignalArgs, f func(*SignalArgs)) SignalArgs { f(&a); return a }

func withAR(a AllReduceArgs, f func(*AllReduceArgs)) AllReduceArgs { f(&a); return a }
