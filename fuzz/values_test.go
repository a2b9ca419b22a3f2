package fuzz

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/x448/float16"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
)

// A seed's inputs must never change: users replay failures by seed. These
// tests hold the inputs drawn through source to the way they were first
// drawn, through math/rand/v2's Rand, bit for bit.

// TestSourceMatchesRand: source and rand.Rand over PCGs seeded alike draw
// the same numbers, for every method, bounds small and large (the largest
// reject about a quarter of their draws), in random interleavings;
// intPow2 draws what IntN does for powers of two.
func TestSourceMatchesRand(t *testing.T) {
	bounds := []int{1, 2, 3, 4, 5, 8, 9, 14, 17, 100, 117, 1 << 20, 1<<31 - 1, 1<<62 + 1, 3 << 61, math.MaxInt}
	pick := rand.New(rand.NewPCG(9, 10))
	for s := uint64(0); s < 8; s++ {
		want := rand.New(rand.NewPCG(s*0x9e3779b97f4a7c15, s+1))
		var got source
		got.seed(s*0x9e3779b97f4a7c15, s+1)
		for i := 0; i < 1<<18; i++ {
			switch k := pick.IntN(len(bounds) + 3); k {
			case len(bounds) + 2:
				n := 1 << pick.IntN(63)
				if g, w := got.intPow2(n), want.IntN(n); g != w {
					t.Fatalf("seed %d draw %d: intPow2(%d) %d, Rand says %d", s, i, n, g, w)
				}
			case len(bounds):
				if g, w := got.float64(), want.Float64(); math.Float64bits(g) != math.Float64bits(w) {
					t.Fatalf("seed %d draw %d: float64 %v, Rand says %v", s, i, g, w)
				}
			case len(bounds) + 1:
				if g, w := got.uint32(), want.Uint32(); g != w {
					t.Fatalf("seed %d draw %d: uint32 %d, Rand says %d", s, i, g, w)
				}
			default:
				if g, w := got.intN(bounds[k]), want.IntN(bounds[k]); g != w {
					t.Fatalf("seed %d draw %d: intN(%d) %d, Rand says %d", s, i, bounds[k], g, w)
				}
			}
		}
	}
}

// TestMakeInputMatchesRand: makeInput draws what randInput draws, for
// every dtype, odd and even sizes, ranks, steps, indices and replays, and
// enough seeds that about a quarter of them draw special values.
func TestMakeInputMatchesRand(t *testing.T) {
	specials := 0
	for _, dt := range []device.DType{device.Float32, device.BFloat16, device.Float16} {
		for _, numel := range []uint64{1, 2, 3, 16, 17, 18, 35, 255, 1031} {
			c := Coll{Bytes: numel * uint64(dt.Size()), DType: dt}
			for seed := uint64(0); seed < 64; seed++ {
				s := seed * 0x2545f4914f6cdd1d
				r, step, idx, it := int(seed%5), int(seed%7), int(seed%3), int(seed%2)
				want := randInput(s, r, step, idx, it, c)
				if got := makeInput(s, r, step, idx, it, c); !bytes.Equal(got, want) {
					t.Fatalf("%v numel %d seed %d rank %d step %d idx %d replay %d: makeInput differs from randInput", dt, numel, s, r, step, idx, it)
				}
				shared := rand.New(rand.NewPCG(s^uint64(step)<<40^uint64(idx)<<32^uint64(it)<<24, 0x5bec1a1))
				if shared.IntN(specialShare) == 0 {
					specials++
				}
			}
		}
	}
	if specials < 50 {
		t.Fatalf("only %d inputs with special values: the test does not cover them", specials)
	}
}

// encodeWithX448 is kernels.Encode as first written: binary16 through
// x448/float16.
func encodeWithX448(dt device.DType, vals []float32) []byte {
	b := make([]byte, len(vals)*dt.Size())
	for i, v := range vals {
		switch dt {
		case device.BFloat16:
			binary.LittleEndian.PutUint16(b[2*i:], kernels.BF16FromFloat32(v))
		case device.Float16:
			binary.LittleEndian.PutUint16(b[2*i:], float16.Fromfloat32(v).Bits())
		default:
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
	}
	return b
}

// randInput is makeInput as first written: math/rand/v2 through its
// Rand, and the plain values rounded through x448/float16 for binary16.
func randInput(seed uint64, r, step, idx, it int, c Coll) []byte {
	call := seed ^ uint64(step)<<40 ^ uint64(idx)<<32 ^ uint64(it)<<24
	rng := rand.New(rand.NewPCG(call, uint64(r)+1))
	numel := c.Bytes / uint64(c.DType.Size())
	vals := make([]float32, numel)
	for i := range vals {
		vals[i] = randPlainValue(rng, i)
	}
	b := encodeWithX448(c.DType, vals)
	// The themes are drawn from a generator every rank shares.
	shared := rand.New(rand.NewPCG(call, 0x5bec1a1))
	if shared.IntN(specialShare) != 0 {
		return b
	}
	db := dtypeBits[c.DType]
	// The largest exponent of the rounding theme, shared.
	base := db.minExp + 12 + shared.IntN(db.maxExp-db.minExp-11)
	for i := range vals {
		th := theme(shared.IntN(2 * int(numThemes)))
		if th >= numThemes {
			continue
		}
		if v, ok := randSpecialBits(rng, db, th, base, r); ok {
			putBits(b, i, db.size, v)
		}
	}
	return b
}

// randPlainValue is plainValue as first written.
func randPlainValue(rng *rand.Rand, i int) float32 {
	if i%17 == 0 {
		return float32(rng.IntN(9) - 4)
	}
	return float32(rng.Float64()*2 - 1)
}

// randSpecialBits is specialBits as first written.
func randSpecialBits(rng *rand.Rand, db bitsOf, th theme, base, r int) (bits uint32, ok bool) {
	sign := uint32(0)
	if rng.IntN(2) == 0 {
		sign = db.sign
	}
	switch th {
	case themeZero:
		if rng.IntN(8) == 0 {
			return sign | 1, true
		}
		return sign, true
	case themeInf:
		if rng.IntN(3) == 0 {
			return 0, false
		}
		return sign | db.inf, true
	case themeNaN:
		if r == 0 && rng.IntN(3) != 0 || rng.IntN(2) == 0 {
			return 0, false // most NaNs arrive from ranks other than 0
		}
		payload := rng.Uint32() & db.payload
		if rng.IntN(2) == 0 {
			return sign | db.inf | db.quiet | payload, true
		}
		return sign | db.inf | max(payload, 1), true // signalling: a payload but no quiet bit
	case themeHuge:
		if rng.IntN(2) == 0 {
			return sign | db.maxFin, true
		}
		return sign | (db.maxFin - 1<<db.mantBits), true // half of it, about
	case themeTiny:
		switch rng.IntN(4) {
		case 0:
			return sign | db.minNorm, true
		case 1:
			return sign | db.maxSub, true
		}
		return sign | (1 + rng.Uint32()%db.maxSub), true
	case themeRounding:
		// 2^(base-k) for k in {0, 12, 24, 25, 30}, times 1 or 1.5: the
		// float32 accumulator cannot hold the exact sum of values that
		// far apart, so it depends on the order of additions.
		e := base - []int{0, 12, 24, 25, 30}[rng.IntN(5)]
		if e < db.minExp || e > db.maxExp {
			return 0, false
		}
		exp := uint32(e+(1<<(db.size*8-db.mantBits-2))-1) << db.mantBits
		mant := uint32(0)
		if rng.IntN(2) == 0 {
			mant = 1 << (db.mantBits - 1)
		}
		return sign | exp | mant, true
	}
	return 0, false
}

// benchmarkInputs draws rank 1's input to a 4 KiB collective of each
// dtype per iteration, a fresh seed each time, a quarter of them with
// special values as in fuzz runs; it reports ns per element.
func benchmarkInputs(b *testing.B, draw func(seed uint64, r, step, idx, it int, c Coll) []byte) {
	for _, dt := range []device.DType{device.Float32, device.BFloat16, device.Float16} {
		c := Coll{Bytes: 4096, DType: dt}
		b.Run(dt.String(), func(b *testing.B) {
			seed := uint64(0)
			for b.Loop() {
				seed++
				draw(seed, 1, 0, 0, 0, c)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(4096/dt.Size()), "ns/element")
		})
	}
}

// BenchmarkMakeInput is the cost of drawing inputs.
func BenchmarkMakeInput(b *testing.B) { benchmarkInputs(b, makeInput) }

// BenchmarkRandInput is the same through math/rand/v2's Rand and
// x448/float16, as inputs were first drawn.
func BenchmarkRandInput(b *testing.B) { benchmarkInputs(b, randInput) }
