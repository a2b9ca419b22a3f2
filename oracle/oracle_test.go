package oracle

import (
	"bytes"
	"encoding/binary"
	"go/build"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/x448/float16"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/internal/longtest"
)

// bitsOf encodes exactly representable values (NaNs with their payloads)
// as little-endian elements of dt, for the tests' inputs.
func bitsOf(dt device.DType, vals ...float32) []byte {
	var b []byte
	for _, v := range vals {
		switch dt {
		case device.BFloat16:
			b = binary.LittleEndian.AppendUint16(b, uint16(math.Float32bits(v)>>16))
		case device.Float16:
			b = binary.LittleEndian.AppendUint16(b, float16.Fromfloat32(v).Bits())
		default:
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
	}
	return b
}

// TestRules: the arithmetic rules of the package doc, each on a case
// where breaking it changes the bits.
func TestRules(t *testing.T) {
	nan := float32(math.NaN())
	negZero := float32(math.Copysign(0, -1))
	inf := float32(math.Inf(1))
	for _, c := range []struct {
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
		// avg sums first: 2^127 + 2^127 overflows float32 before the
		// division; dividing first would give 2^127.
		{"avg sums, then divides", device.BFloat16, device.Avg, [][]float32{{0x1p127}, {0x1p127}}, []uint32{0x7f80}},
		{"sum of one keeps -0", device.Float32, device.Sum, [][]float32{{negZero}}, []uint32{0x80000000}},
		{"-0 + +0 is +0", device.Float32, device.Sum, [][]float32{{negZero}, {0}}, []uint32{0}},
		{"nan canonical", device.Float32, device.Sum, [][]float32{{math.Float32frombits(0x7fc00123)}, {1}}, []uint32{0x7fffffff}},
		{"inf - inf", device.Float16, device.Sum, [][]float32{{inf}, {-inf}}, []uint32{0x7fff}},
		{"max propagates nan", device.BFloat16, device.Max, [][]float32{{1}, {nan}, {2}}, []uint32{0x7fff}},
		{"max takes a nan of the last rank", device.Float32, device.Max, [][]float32{{1}, {2}, {-nan}}, []uint32{0x7fffffff}},
		{"min propagates nan", device.Float32, device.Min, [][]float32{{nan}, {-5}}, []uint32{0x7fffffff}},
		{"max lowest rank wins ties", device.Float32, device.Max, [][]float32{{negZero}, {0}}, []uint32{0x80000000}},
		{"min lowest rank wins ties", device.Float32, device.Min, [][]float32{{0}, {negZero}}, []uint32{0}},
		{"min tie after a smaller value", device.BFloat16, device.Min, [][]float32{{1}, {negZero}, {0}}, []uint32{0x8000}},
		{"max", device.Float16, device.Max, [][]float32{{-3}, {7}, {inf}, {2}}, []uint32{0x7c00}},
		{"min", device.Float16, device.Min, [][]float32{{-3}, {7}, {2}}, []uint32{0xc200}},
		{"fp16 overflow", device.Float16, device.Sum, [][]float32{{60000}, {60000}}, []uint32{0x7c00}},
		{"fp16 subnormal", device.Float16, device.Sum, [][]float32{{0x1p-24}, {0x1p-24}}, []uint32{0x0002}},
		{"bf16 to even", device.BFloat16, device.Sum, [][]float32{{1}, {0x1p-8}}, []uint32{0x3f80}},
		{"bf16 to even, up", device.BFloat16, device.Sum, [][]float32{{1 + 0x1p-7}, {0x1p-8}}, []uint32{0x3f82}},
		{"bf16 rounding overflow", device.BFloat16, device.Sum, [][]float32{{0x1.fep127}, {0x1p119}}, []uint32{0x7f80}},
		{"bf16 below the overflow", device.BFloat16, device.Sum, [][]float32{{0x1.fep127}, {0x1p118}}, []uint32{0x7f7f}},
		// 1.5 times the smallest subnormal: a tie, to even.
		{"bf16 subnormal", device.BFloat16, device.Avg, [][]float32{{0x1p-133}, {0x1p-132}}, []uint32{0x0002}},
		{"bf16 underflow keeps the sign", device.BFloat16, device.Avg, [][]float32{{-0x1p-133}, {0}}, []uint32{0x8000}},
	} {
		inputs := make([][]byte, len(c.inputs))
		for r, v := range c.inputs {
			inputs[r] = bitsOf(c.dt, v...)
		}
		got, err := AllReduce(c.dt, c.op, inputs)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
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
		if err := CheckClose(c.dt, c.op, inputs, got); err != nil {
			t.Errorf("%s: CheckClose rejects the reference: %v", c.name, err)
		}
	}
}

func TestInputErrors(t *testing.T) {
	f32s := func(v ...float32) []byte { return bitsOf(device.Float32, v...) }
	for _, c := range []struct {
		name   string
		dt     device.DType
		op     device.ReduceOp
		inputs [][]byte
		want   string
	}{
		{"no inputs", device.Float32, device.Sum, nil, "reference: no inputs"},
		{"lengths differ", device.Float32, device.Sum, [][]byte{f32s(1), f32s(1, 2)}, "input of rank 1 has 8 bytes, rank 0 has 4"},
		{"bad op", device.Float32, device.ReduceOp(9), [][]byte{f32s(1)}, "unsupported reduce op"},
		{"bad dtype", device.DType(9), device.Sum, [][]byte{{0}}, "reference: unsupported dtype"},
		{"partial element", device.BFloat16, device.Sum, [][]byte{{1, 2, 3}}, "3 bytes is not a whole number of bfloat16 elements"},
	} {
		if _, err := AllReduce(c.dt, c.op, c.inputs); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// lowPatterns are low halves of float32 bit patterns where rounding to a
// 16-bit type decides something: powers of two, one below and one above
// (ties and their neighbours at each rounding position), all ones. The
// rounding positions in the low half are bit 15 for bfloat16 (subnormals
// included) and bits 12 to 15 for binary16 (13 for normals, higher for
// subnormals); the long sweeps (SYMMEM_LONG=1) try every bit.
func lowPatterns() []uint32 {
	first := 12
	if longtest.Enabled() {
		first = 0
	}
	ps := []uint32{0, 1, 0xffff}
	for k := first; k < 16; k++ {
		ps = append(ps, 1<<k, 1<<k-1, 1<<k+1, 3<<k&0xffff)
	}
	return ps
}

// TestRoundMatchesX448: round, on binary16's parameters, gives what
// x448/float16 gives for every high half of a float32 (sign, exponent, top
// 7 significand bits) with each low pattern: the computation bfloat16
// results go through is right on another format.
func TestRoundMatchesX448(t *testing.T) {
	for hi := uint32(0); hi < 1<<16; hi++ {
		for _, lo := range lowPatterns() {
			f := math.Float32frombits(hi<<16 | lo)
			if f != f {
				continue
			}
			want := float16.Fromfloat32(f).Float32()
			if got := float32(round(float64(f), f16Format)); math.Float32bits(got) != math.Float32bits(want) {
				t.Fatalf("round(0x%08x) to binary16 = %v, x448 says %v", hi<<16|lo, got, want)
			}
		}
	}
}

// nearestBF16 is the bfloat16 nearest to the non-NaN f, found the long
// way: of the value truncated to bfloat16 and the next one away from zero,
// the nearer in float64, the one with an even significand on a tie.
func nearestBF16(f float32) uint16 {
	b := math.Float32bits(f)
	down := b &^ 0xffff
	if b == down || b&0x7fffffff >= 0x7f800000 {
		return uint16(b >> 16) // exact, or an infinity
	}
	up := down + 0x10000 // the next magnitude; past the largest finite: infinity
	x := math.Abs(float64(f))
	dd := x - math.Abs(float64(math.Float32frombits(down)))
	du := math.Abs(float64(math.Float32frombits(up))) - x
	if math.IsInf(float64(math.Float32frombits(up)), 0) {
		// The next power of two stands in for infinity: a value at or
		// past the midpoint rounds up, to infinity.
		du = math.Ldexp(1, 128) - x
	}
	switch {
	case dd < du, dd == du && down>>16&1 == 0:
		return uint16(down >> 16)
	}
	return uint16(up >> 16)
}

// TestBF16Rounding: bf16Bits against nearestBF16 on every high half
// with each low pattern, and on random bits.
func TestBF16Rounding(t *testing.T) {
	check := func(b uint32) {
		f := math.Float32frombits(b)
		if f != f {
			return
		}
		if got, want := bf16Bits(f), nearestBF16(f); got != want {
			t.Fatalf("bf16Bits(0x%08x) = 0x%04x, want 0x%04x", b, got, want)
		}
	}
	for hi := uint32(0); hi < 1<<16; hi++ {
		for _, lo := range lowPatterns() {
			check(hi<<16 | lo)
		}
	}
	rng := rand.New(rand.NewPCG(9, 10))
	for range 1 << 16 {
		check(rng.Uint32())
	}
}

// TestDecode: bfloat16 and binary16 elements decode exactly, NaNs as NaNs.
func TestDecode(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		b := binary.LittleEndian.AppendUint16(nil, uint16(h))
		bf := decode(device.BFloat16, b, 0)
		if uint16(math.Float32bits(bf)>>16) != uint16(h) || math.Float32bits(bf)&0xffff != 0 {
			t.Fatalf("bfloat16 0x%04x decoded to 0x%08x", h, math.Float32bits(bf))
		}
		f := decode(device.Float16, b, 0)
		isNaN := h&0x7c00 == 0x7c00 && h&0x3ff != 0
		if isNaN != (f != f) || !isNaN && float16.Fromfloat32(f).Bits() != uint16(h) {
			t.Fatalf("binary16 0x%04x decoded to %v", h, f)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	if _, err := Decode(device.DType(9), nil); err == nil || !strings.Contains(err.Error(), "unsupported dtype") {
		t.Errorf("Decode of a bad dtype: %v", err)
	}
	if _, err := Decode(device.Float16, []byte{1, 2, 3}); err == nil || !strings.Contains(err.Error(), "3 bytes is not a whole number of float16 elements") {
		t.Errorf("Decode of 3 bytes of float16: %v", err)
	}
	if vals, err := Decode(device.BFloat16, []byte{0x80, 0x3f, 0x00, 0xc0}); err != nil || len(vals) != 2 || vals[0] != 1 || vals[1] != -2 {
		t.Errorf("Decode(bfloat16 1, -2) = %v, %v", vals, err)
	}
}

// TestImportsNothingItChecks: the package, with everything it imports
// from this module, imports no package of the kernels or the simulator,
// so their arithmetic can never become the oracle's.
func TestImportsNothingItChecks(t *testing.T) {
	const module = "github.com/symmem/symmem"
	allowed := map[string]bool{module + "/oracle": true, module + "/device": true}
	seen := map[string]bool{}
	var visit func(path, dir string)
	visit = func(path, dir string) {
		if seen[path] {
			return
		}
		seen[path] = true
		if !allowed[path] {
			t.Errorf("the oracle depends on %s", path)
			return
		}
		pkg, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, imp := range pkg.Imports {
			if rel, ok := strings.CutPrefix(imp, module+"/"); ok {
				visit(imp, filepath.Join("..", filepath.FromSlash(rel)))
			}
		}
	}
	visit(module+"/oracle", ".")
	if !seen[module+"/device"] {
		t.Errorf("the walk never reached package device: %v", seen)
	}
}
