package kernels

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/x448/float16"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/internal/longtest"
	"github.com/symmem/symmem/oracle"
)

// The package's conversions and reductions are written for speed; these
// tests hold them to straightforward implementations, bit for bit: the
// binary16 conversions of github.com/x448/float16 and a reduction that
// converts every element of every rank on its own, through x448/float16
// and math/big (rneBF16), never through the package's conversions.

// TestF16ToFloat32MatchesX448: every binary16 value, NaNs included.
func TestF16ToFloat32MatchesX448(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		got := math.Float32bits(F16ToFloat32(uint16(h)))
		want := math.Float32bits(float16.Frombits(uint16(h)).Float32())
		if got != want {
			t.Fatalf("F16ToFloat32(0x%04x) = 0x%08x, x448 says 0x%08x", h, got, want)
		}
	}
}

// lowPatterns are low halves of float32 bit patterns where rounding to
// binary16 decides something: every power of two, one below and one
// above (ties and their neighbours at every rounding position), all ones.
func lowPatterns() []uint32 {
	ps := []uint32{0, 0xffff}
	for k := 0; k < 16; k++ {
		ps = append(ps, 1<<k, 1<<k-1, 1<<k+1, 3<<k&0xffff)
	}
	return ps
}

// TestF16FromFloat32MatchesX448 tries every high half (sign, exponent,
// the top 7 significand bits) with each low pattern, then random bits.
// TestF16FromFloat32Exhaustive tries all 2^32 in the long sweeps.
func TestF16FromFloat32MatchesX448(t *testing.T) {
	check := func(b uint32) {
		f := math.Float32frombits(b)
		if got, want := F16FromFloat32(f), float16.Fromfloat32(f).Bits(); got != want {
			t.Fatalf("F16FromFloat32(0x%08x) = 0x%04x, x448 says 0x%04x", b, got, want)
		}
	}
	lows := lowPatterns()
	for hi := uint32(0); hi < 1<<16; hi++ {
		for _, lo := range lows {
			check(hi<<16 | lo)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 1 << 20 {
		check(rng.Uint32())
	}
}

func TestF16FromFloat32Exhaustive(t *testing.T) {
	longtest.Require(t, "F16FromFloat32 against x448 over every float32")
	for b := uint64(0); b < 1<<32; b++ {
		f := math.Float32frombits(uint32(b))
		if got, want := F16FromFloat32(f), float16.Fromfloat32(f).Bits(); got != want {
			t.Fatalf("F16FromFloat32(0x%08x) = 0x%04x, x448 says 0x%04x", b, got, want)
		}
	}
}

// elementwiseLoad is element i of b as float32, converted on its own.
func elementwiseLoad(dt device.DType, b []byte, i int) float32 {
	switch dt {
	case device.BFloat16:
		return math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16)
	case device.Float16:
		return float16.Frombits(binary.LittleEndian.Uint16(b[2*i:])).Float32()
	}
	return math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
}

// elementwiseStore writes v as element i of b, NaN canonical.
func elementwiseStore(dt device.DType, b []byte, i int, v float32) {
	nan := v != v
	switch dt {
	case device.BFloat16:
		h := CanonicalNaNBF16
		if !nan {
			h = rneBF16(v)
		}
		binary.LittleEndian.PutUint16(b[2*i:], h)
	case device.Float16:
		h := CanonicalNaNF16
		if !nan {
			h = float16.Fromfloat32(v).Bits()
		}
		binary.LittleEndian.PutUint16(b[2*i:], h)
	default:
		w := CanonicalNaN32
		if !nan {
			w = math.Float32bits(v)
		}
		binary.LittleEndian.PutUint32(b[4*i:], w)
	}
}

// elementwiseReference is the all-reduce of inputs computed element by
// element, rank by rank, as the kernels' arithmetic rules say.
func elementwiseReference(dt device.DType, op device.ReduceOp, inputs [][]byte) []byte {
	out := make([]byte, len(inputs[0]))
	for i := 0; i < len(out)/dt.Size(); i++ {
		acc := elementwiseLoad(dt, inputs[0], i)
		for _, in := range inputs[1:] {
			x := elementwiseLoad(dt, in, i)
			switch op {
			case device.Sum, device.Avg:
				acc = float32(acc + x)
			case device.Max:
				if x != x || x > acc {
					acc = x
				}
			case device.Min:
				if x != x || x < acc {
					acc = x
				}
			}
		}
		if op == device.Avg {
			acc = float32(acc / float32(len(inputs)))
		}
		elementwiseStore(dt, out, i, acc)
	}
	return out
}

// mixedInput is n elements of dt: uniformly random bit patterns (every
// special value among them), values in [-1, 1), zeros and large values
// that overflow when summed, in random proportions.
func mixedInput(rng *rand.Rand, dt device.DType, n int) []byte {
	b := make([]byte, n*dt.Size())
	for i := 0; i < n; i++ {
		var v float32
		switch rng.IntN(5) {
		case 0, 1:
			if dt.Size() == 2 {
				binary.LittleEndian.PutUint16(b[2*i:], uint16(rng.Uint32()))
			} else {
				binary.LittleEndian.PutUint32(b[4*i:], rng.Uint32())
			}
			continue
		case 2:
			v = float32(rng.Float64()*2 - 1)
		case 3:
			v = float32(math.Copysign(0, float64(rng.IntN(2))-0.5))
		case 4:
			v = maxFinite[dt] * float32(rng.IntN(3)-1)
		}
		elementwiseStore(dt, b, i, v)
	}
	return b
}

// maxFinite is the largest finite value of each dtype.
var maxFinite = map[device.DType]float32{device.Float32: math.MaxFloat32, device.BFloat16: 0x1.fep127, device.Float16: 65504}

var allDTypes = []device.DType{device.Float32, device.BFloat16, device.Float16}
var allOps = []device.ReduceOp{device.Sum, device.Avg, device.Max, device.Min}

// TestReductionsMatchElementwise: the reference (package oracle) and the
// reducer the Go kernels use agree bitwise with the element-by-element
// reduction through x448/float16, for every dtype and op, worlds 1 to 8,
// odd sizes, special values.
func TestReductionsMatchElementwise(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var red reducer
	for _, dt := range allDTypes {
		for _, op := range allOps {
			for world := 1; world <= 8; world++ {
				for _, n := range []int{1, 3, 17, 256, 1001} {
					inputs := make([][]byte, world)
					for r := range inputs {
						inputs[r] = mixedInput(rng, dt, n)
					}
					want := elementwiseReference(dt, op, inputs)
					got, err := oracle.AllReduce(dt, op, inputs)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got, want) {
						t.Fatalf("%v %v world %d numel %d: Reference differs from the elementwise reduction", dt, op, world, n)
					}
					red.dt, red.op = dt, op
					got = make([]byte, len(want))
					red.reduce(got, inputs)
					if !bytes.Equal(got, want) {
						t.Fatalf("%v %v world %d numel %d: reducer differs from the elementwise reduction", dt, op, world, n)
					}
				}
			}
		}
	}
}

// TestDecodeMatchesElementwise: Decode converts every element as the
// elementwise conversion does, bitwise (NaN payloads included).
func TestDecodeMatchesElementwise(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, dt := range allDTypes {
		b := mixedInput(rng, dt, 4099)
		vals, err := Decode(dt, b)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			if w := elementwiseLoad(dt, b, i); math.Float32bits(v) != math.Float32bits(w) {
				t.Fatalf("%v element %d: 0x%08x, want 0x%08x", dt, i, math.Float32bits(v), math.Float32bits(w))
			}
		}
	}
}

// benchmarkReductions reduces 4 KiB from each of 4 ranks per iteration,
// for each dtype, with sums, and reports ns per element.
func benchmarkReductions(b *testing.B, reduce func(dt device.DType, inputs [][]byte) []byte) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, dt := range allDTypes {
		n := 4096 / dt.Size()
		inputs := make([][]byte, 4)
		for r := range inputs {
			vals := make([]float32, n)
			for i := range vals {
				vals[i] = float32(rng.Float64()*2 - 1)
			}
			inputs[r], _ = Encode(dt, vals)
		}
		b.Run(dt.String(), func(b *testing.B) {
			for b.Loop() {
				reduce(dt, inputs)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/element")
		})
	}
}

// BenchmarkReference is the cost of the fuzzer's reference results
// (package oracle).
func BenchmarkReference(b *testing.B) {
	benchmarkReductions(b, func(dt device.DType, inputs [][]byte) []byte {
		out, err := oracle.AllReduce(dt, device.Sum, inputs)
		if err != nil {
			b.Fatal(err)
		}
		return out
	})
}

// BenchmarkReducer is the cost of the Go kernels' reductions.
func BenchmarkReducer(b *testing.B) {
	red := reducer{op: device.Sum}
	out := make([]byte, 4096)
	benchmarkReductions(b, func(dt device.DType, inputs [][]byte) []byte {
		red.dt = dt
		red.reduce(out, inputs)
		return out
	})
}

// BenchmarkElementwiseReference is the same element by element through
// x448/float16, as the reference and the reducer first converted.
func BenchmarkElementwiseReference(b *testing.B) {
	benchmarkReductions(b, func(dt device.DType, inputs [][]byte) []byte {
		return elementwiseReference(dt, device.Sum, inputs)
	})
}
