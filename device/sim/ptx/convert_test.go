package ptx

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/x448/float16"
)

// TestF16ToF32Exhaustive: every binary16 value converts exactly.
func TestF16ToF32Exhaustive(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		got := F16ToF32(uint16(h))
		want := float16.Frombits(uint16(h)).Float32()
		if want != want {
			if got == got {
				t.Fatalf("F16ToF32(%#04x) = %v, want a NaN", h, got)
			}
			continue
		}
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("F16ToF32(%#04x) = %#08x, want %#08x", h, math.Float32bits(got), math.Float32bits(want))
		}
	}
}

// TestF32ToF16RoundsToNearestEven compares with an independent conversion
// on random bit patterns and on every tie and boundary of the subnormal
// and overflow ranges.
func TestF32ToF16RoundsToNearestEven(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(b uint32) {
		f := math.Float32frombits(b)
		got := F32ToF16(f)
		if f != f {
			if got != 0x7fff {
				t.Fatalf("F32ToF16(NaN %#08x) = %#04x, want 0x7fff", b, got)
			}
			return
		}
		if want := float16.Fromfloat32(f).Bits(); got != want {
			t.Fatalf("F32ToF16(%#08x = %v) = %#04x, want %#04x", b, f, got, want)
		}
	}
	for i := 0; i < 1<<20; i++ {
		check(rng.Uint32())
	}
	for h := uint32(0); h < 1<<15; h++ {
		// h's value, and the points half an f16 ulp either side of it.
		f := float16.Frombits(uint16(h)).Float32()
		if f != f || math.IsInf(float64(f), 0) {
			continue
		}
		b := math.Float32bits(f)
		for _, d := range []int32{-1, 0, 1, 1 << 12, 1<<12 - 1, 1<<12 + 1, -(1 << 12)} {
			check(uint32(int32(b) + d))
			check(uint32(int32(b)+d) | 1<<31)
		}
	}
}

// TestF32ToBF16RoundsToNearestEven checks ties, carries and overflow.
func TestF32ToBF16RoundsToNearestEven(t *testing.T) {
	for _, c := range []struct {
		in   uint32
		want uint16
	}{
		{0x3f800000, 0x3f80}, // 1
		{0x3f808000, 0x3f80}, // tie, even stays
		{0x3f818000, 0x3f82}, // tie, odd rounds up
		{0x3f808001, 0x3f81}, // above the tie
		{0x7f7fffff, 0x7f80}, // largest float overflows to infinity
		{0xff7fffff, 0xff80},
		{0x00000001, 0x0000}, // subnormal rounds to zero
		{0x7f800000, 0x7f80},
		{0x7fc00001, 0x7fff}, // NaN is canonical
		{0xffc00000, 0x7fff},
	} {
		if got := F32ToBF16(math.Float32frombits(c.in)); got != c.want {
			t.Errorf("F32ToBF16(%#08x) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
}
