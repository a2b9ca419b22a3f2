package kernels

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/oracle"
)

func TestBF16RoundToNearestEven(t *testing.T) {
	cases := []struct {
		in   uint32
		want uint16
	}{
		{0x3f800000, 0x3f80}, // 1
		{0x3f808000, 0x3f80}, // tie, even below: down
		{0x3f818000, 0x3f82}, // tie, odd below: up
		{0x3f808001, 0x3f81}, // above the tie: up
		{0x3f807fff, 0x3f80}, // below the tie: down
		{0xbf818000, 0xbf82}, // negative tie, odd: away from zero
		{0x7f7fffff, 0x7f80}, // max float rounds to +inf
		{0x7f7f7fff, 0x7f7f}, // just below the tie: largest bf16
		{0xff7fffff, 0xff80}, // to -inf
		{0x7f800000, 0x7f80}, // +inf
		{0xff800000, 0xff80}, // -inf
		{0x80000000, 0x8000}, // -0
		{0x00000001, 0x0000}, // tiny subnormal rounds to zero
		{0x00018000, 0x0002}, // subnormal tie, odd: up
		{0x7fc00000, 0x7fc0}, // quiet NaN
		{0x7f800001, 0x7fc0}, // signalling NaN with payload only in the low bits stays NaN
		{0xff812345, 0xffc1}, // negative NaN keeps sign and top payload, quiet bit set
	}
	for _, c := range cases {
		if got := BF16FromFloat32(math.Float32frombits(c.in)); got != c.want {
			t.Errorf("BF16FromFloat32(0x%08x) = 0x%04x, want 0x%04x", c.in, got, c.want)
		}
	}
}

// rneBF16 rounds f to bfloat16 with big.Float, an independent
// implementation of round-to-nearest-even.
func rneBF16(f float32) uint16 {
	if math.IsInf(float64(f), 0) || f == 0 {
		return uint16(math.Float32bits(f) >> 16)
	}
	// bfloat16 has float32's exponent range: rounding the float32 to 8
	// significant bits is exact for normals; subnormals are handled by
	// rounding at the fixed bit 2^-133.
	x := new(big.Float).SetFloat64(float64(f))
	exp := x.MantExp(nil) // f = mant * 2^exp, 0.5 <= |mant| < 1
	prec := uint(8)
	if exp-1 < -126 { // subnormal in bfloat16
		keep := 8 - (-126 - (exp - 1))
		if keep <= 0 {
			// below half the smallest subnormal, or a tie that rounds to 0
			min := math.Ldexp(1, -133)
			a := math.Abs(float64(f))
			sign := math.Float32bits(f) & 0x80000000
			switch {
			case a > min/2 && keep == 0:
				return uint16((sign | 0x00010000) >> 16)
			default:
				return uint16(sign >> 16)
			}
		}
		prec = uint(keep)
	}
	r, _ := new(big.Float).SetMode(big.ToNearestEven).SetPrec(prec).Set(x).Float32()
	return uint16(math.Float32bits(r) >> 16)
}

func TestBF16AgainstBigFloat(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 100000; i++ {
		bits := rng.Uint32()
		if i%4 == 0 {
			bits = bits&0xffff8000 | 0x8000 // exact ties
		}
		f := math.Float32frombits(bits)
		if math.IsNaN(float64(f)) {
			continue
		}
		if got, want := BF16FromFloat32(f), rneBF16(f); got != want {
			t.Fatalf("BF16FromFloat32(0x%08x) = 0x%04x, big.Float says 0x%04x", bits, got, want)
		}
	}
}

func TestBF16RoundTrip(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		f := BF16ToFloat32(uint16(h))
		got := BF16FromFloat32(f)
		if math.IsNaN(float64(f)) {
			if got != uint16(h)|0x0040 {
				t.Fatalf("NaN 0x%04x came back as 0x%04x, want it quieted: 0x%04x", h, got, h|0x0040)
			}
			continue
		}
		if got != uint16(h) {
			t.Fatalf("bf16 0x%04x -> %v -> 0x%04x", h, f, got)
		}
	}
}

func TestF16RoundTripAndRNE(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		f := F16ToFloat32(uint16(h))
		got := F16FromFloat32(f)
		if math.IsNaN(float64(f)) {
			if got&0x7c00 != 0x7c00 || got&0x3ff == 0 {
				t.Fatalf("NaN 0x%04x came back as 0x%04x", h, got)
			}
			continue
		}
		if got != uint16(h) {
			t.Fatalf("f16 0x%04x -> %v -> 0x%04x", h, f, got)
		}
	}
	cases := []struct {
		in   float64
		want uint16
	}{
		{1, 0x3c00},
		{1 + math.Ldexp(1, -11), 0x3c00},   // tie, even below: down
		{1 + 3*math.Ldexp(1, -11), 0x3c02}, // tie, odd below: up
		{65504, 0x7bff},
		{65519, 0x7bff},
		{65520, 0x7c00}, // tie between max and 2^16: to even, which overflows
		{-65520, 0xfc00},
		{math.Ldexp(1, -24), 0x0001},     // smallest subnormal
		{math.Ldexp(1, -25), 0x0000},     // tie with zero: even
		{3 * math.Ldexp(1, -25), 0x0002}, // subnormal tie, odd below: up
		{math.Copysign(0, -1), 0x8000},
	}
	for _, c := range cases {
		if got := F16FromFloat32(float32(c.in)); got != c.want {
			t.Errorf("F16FromFloat32(%v) = 0x%04x, want 0x%04x", c.in, got, c.want)
		}
	}
}

func TestEncodeDecode(t *testing.T) {
	vals := []float32{0, 1, -2.5, 1e-3, 3e4}
	for _, dt := range []device.DType{device.Float32, device.BFloat16, device.Float16} {
		b, err := Encode(dt, vals)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != len(vals)*dt.Size() {
			t.Fatalf("%v: %d bytes", dt, len(b))
		}
		back, err := Decode(dt, b)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			if math.Abs(float64(back[i]-v)) > oracle.Epsilon(dt)*2*math.Abs(float64(v)) {
				t.Errorf("%v: %v came back as %v", dt, v, back[i])
			}
		}
	}
	if _, err := Decode(device.Float32, make([]byte, 6)); err == nil {
		t.Error("decode of a partial element accepted")
	}
	if _, err := Encode(device.DType(9), vals); err == nil {
		t.Error("encode of an unknown dtype accepted")
	}
}
