package oracle

import (
	"fmt"
	"math"

	"github.com/symmem/symmem/device"
)

// Epsilon is the unit roundoff of dt (half the distance from 1 to the next
// representable value).
func Epsilon(dt device.DType) float64 {
	switch dt {
	case device.BFloat16:
		return math.Ldexp(1, -8)
	case device.Float16:
		return math.Ldexp(1, -11)
	}
	return math.Ldexp(1, -24)
}

// maxFinite is the largest finite value of dt.
func maxFinite(dt device.DType) float64 {
	switch dt {
	case device.BFloat16:
		return bf16Format.maxFinite
	case device.Float16:
		return f16Format.maxFinite
	}
	return math.MaxFloat32
}

// CheckClose checks got, an all-reduce result, against the exact result of
// reducing inputs in float64. sum and avg may differ by the rounding of W-1
// float32 additions, a division and the final rounding to dt:
// |got - exact| <= (W+1)*eps32*sum|x| + eps(dt)*|exact| + the smallest
// subnormal of dt. max and min must be exact. A NaN anywhere in an element's
// inputs must give NaN; a result beyond dt's range must give an infinity of
// the same sign, and an infinity is accepted wherever the float32
// accumulator may overflow. It names the first element that fails.
func CheckClose(dt device.DType, op device.ReduceOp, inputs [][]byte, got []byte) error {
	if err := checkInputs(dt, op, inputs); err != nil {
		return fmt.Errorf("check: %w", err)
	}
	if len(got) != len(inputs[0]) {
		return fmt.Errorf("check: result has %d bytes, inputs have %d", len(got), len(inputs[0]))
	}
	w := float64(len(inputs))
	tiny := math.Ldexp(1, -149)
	switch dt {
	case device.BFloat16:
		tiny = math.Ldexp(1, -133)
	case device.Float16:
		tiny = math.Ldexp(1, -24)
	}
	n := len(got) / dt.Size()
	for i := 0; i < n; i++ {
		var exact, mag, sumAbs float64
		nan := false
		for r, in := range inputs {
			x := float64(decode(dt, in, i))
			nan = nan || math.IsNaN(x)
			switch {
			case r == 0:
				exact = x
			case op == device.Sum || op == device.Avg:
				exact += x
			case op == device.Max:
				exact = math.Max(exact, x)
			case op == device.Min:
				exact = math.Min(exact, x)
			}
			mag += math.Abs(x)
		}
		sumAbs = mag
		if op == device.Avg {
			exact /= w
			mag /= w
		}
		g := float64(decode(dt, got, i))
		switch {
		case nan || math.IsNaN(exact):
			if !math.IsNaN(g) {
				return fmt.Errorf("element %d: got %v, want NaN", i, g)
			}
			continue
		case math.IsNaN(g):
			return fmt.Errorf("element %d: got NaN, want %v", i, exact)
		}
		if op == device.Max || op == device.Min {
			if g != exact {
				return fmt.Errorf("element %d: %v: got %v, want %v", i, op, g, exact)
			}
			continue
		}
		if math.IsInf(exact, 0) {
			if g != exact {
				return fmt.Errorf("element %d: got %v, want %v", i, g, exact)
			}
			continue
		}
		tol := ((w+1)*Epsilon(device.Float32)*mag+Epsilon(dt)*math.Abs(exact))*(1+Epsilon(dt)) + tiny
		if math.IsInf(g, 0) {
			// The float32 accumulator may overflow (either sign, once it
			// is infinite it stays so), or the rounding to dt may.
			if sumAbs >= math.MaxFloat32 ||
				(math.Abs(exact)+tol >= maxFinite(dt) && math.Signbit(g) == math.Signbit(exact)) {
				continue
			}
			return fmt.Errorf("element %d: got %v, want %v", i, g, exact)
		}
		if math.Abs(g-exact) > tol {
			return fmt.Errorf("element %d: %v: got %v, want %v (tolerance %v)", i, op, g, exact, tol)
		}
	}
	return nil
}
