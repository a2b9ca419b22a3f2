package oracle

import (
	"math"
	"strings"
	"testing"

	"github.com/symmem/symmem/device"
)

// TestCheckCloseSpecials: NaN, infinities and -0 under CheckClose's
// rules, and the overflow it must accept.
func TestCheckCloseSpecials(t *testing.T) {
	inf, negZero := float32(math.Inf(1)), float32(math.Copysign(0, -1))
	enc := bitsOf
	for _, c := range []struct {
		name   string
		dt     device.DType
		op     device.ReduceOp
		inputs [][]float32
		got    float32
		ok     bool
	}{
		{"inf + 1 is inf", device.Float32, device.Sum, [][]float32{{inf}, {1}}, inf, true},
		{"inf + 1 is not finite", device.Float32, device.Sum, [][]float32{{inf}, {1}}, 3e38, false},
		{"inf + 1 is not -inf", device.Float32, device.Sum, [][]float32{{inf}, {1}}, -inf, false},
		{"float32 accumulator overflow", device.Float32, device.Sum, [][]float32{{3e38}, {3e38}, {-3e38}}, inf, true},
		{"bf16 rounding overflow", device.BFloat16, device.Sum, [][]float32{{3.38e38}, {0.01e38}}, inf, true},
		{"bf16 overflow of the wrong sign", device.BFloat16, device.Sum, [][]float32{{3.38e38}, {0.01e38}}, -inf, false},
		{"fp16 overflow", device.Float16, device.Avg, [][]float32{{65504}, {65504}}, 65504, true},
		{"an infinity where none can be", device.Float16, device.Sum, [][]float32{{1}, {2}}, inf, false},
		{"-0 + -0", device.Float32, device.Sum, [][]float32{{negZero}, {negZero}}, negZero, true},
		{"max of -0 and 0 exact", device.Float32, device.Max, [][]float32{{negZero}, {0}}, 0, true},
		{"min wrong", device.BFloat16, device.Min, [][]float32{{1}, {2}}, 2, false},
		{"nan for a number", device.Float32, device.Max, [][]float32{{1}, {2}}, float32(math.NaN()), false},
		{"inf - inf is nan", device.Float32, device.Sum, [][]float32{{inf}, {-inf}}, float32(math.NaN()), true},
		{"inf - inf is not inf", device.Float32, device.Sum, [][]float32{{inf}, {-inf}}, inf, false},
	} {
		inputs := make([][]byte, len(c.inputs))
		for r, v := range c.inputs {
			inputs[r] = enc(c.dt, v...)
		}
		err := CheckClose(c.dt, c.op, inputs, enc(c.dt, c.got))
		if (err == nil) != c.ok {
			t.Errorf("%s: CheckClose(%v) = %v, want ok %v", c.name, c.got, err, c.ok)
		}
	}
	if err := CheckClose(device.DType(9), device.Sum, [][]byte{{0, 0, 0, 0}}, []byte{0, 0, 0, 0}); err == nil || !strings.HasPrefix(err.Error(), "check: unsupported dtype") {
		t.Errorf("CheckClose of a bad dtype: %v", err)
	}
	for dt, want := range map[device.DType]float64{device.Float32: math.MaxFloat32, device.Float16: 65504, device.BFloat16: 0x1.fep127} {
		if got := maxFinite(dt); got != want {
			t.Errorf("maxFinite(%v) = %v, want %v", dt, got, want)
		}
	}
	if Epsilon(device.Float32) != 0x1p-24 || Epsilon(device.BFloat16) != 0x1p-8 || Epsilon(device.Float16) != 0x1p-11 {
		t.Error("Epsilon")
	}
}

func TestCheckCloseCatchesWrongResults(t *testing.T) {
	f32s := func(v ...float32) []byte { return bitsOf(device.Float32, v...) }
	inputs := [][]byte{f32s(1, 2, 3), f32s(4, 5, 6)}
	if err := CheckClose(device.Float32, device.Sum, inputs, f32s(5, 7, 9)); err != nil {
		t.Fatal(err)
	}
	err := CheckClose(device.Float32, device.Sum, inputs, f32s(5, 7.01, 9))
	if err == nil || !strings.Contains(err.Error(), "element 1") {
		t.Fatalf("a wrong element passed or was not named: %v", err)
	}
	if err := CheckClose(device.Float32, device.Max, inputs, f32s(4, 5, 6.0000005)); err == nil {
		t.Fatal("max must be exact")
	}
	if err := CheckClose(device.Float32, device.Sum, inputs, f32s(5, float32(math.NaN()), 9)); err == nil {
		t.Fatal("a NaN passed")
	}
	if err := CheckClose(device.Float32, device.Sum, [][]byte{f32s(float32(math.NaN()))}, f32s(1)); err == nil {
		t.Fatal("a NaN input must give NaN")
	}
	if err := CheckClose(device.Float32, device.Sum, inputs, f32s(5, 7)); err == nil {
		t.Fatal("a short result passed")
	}
}
