package workload

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/symmem/symmem/device"
)

// TestValidateNamesEachField: every problem of a spec is reported at once,
// each as a FieldError naming its field; huge offsets and sizes are
// refused before any sum of them is taken.
func TestValidateNamesEachField(t *testing.T) {
	ok := Spec{World: 2, Bytes: 64, DType: device.Float32, Op: device.Sum, Algo: OneShot}
	if err := ok.Validate(); err != nil {
		t.Fatalf("%+v: %v", ok, err)
	}
	for _, tc := range []struct {
		spec   Spec
		fields []string
	}{
		{Spec{World: 0, Bytes: 3, DType: device.Float32, Op: device.Sum, Offset: 2}, []string{"world", "bytes", "offset"}},
		{Spec{World: 2, Bytes: 64, DType: device.Float32, Op: device.Sum, Offset: math.MaxUint64 - 3}, []string{"offset"}},
		{Spec{World: 2, Bytes: 1 << 40, DType: device.Float32, Op: device.Sum}, []string{"bytes"}},
		{Spec{World: 2, Bytes: 64, DType: device.DType(9), Op: device.ReduceOp(9), Algo: Algo(7)}, []string{"dtype", "op", "algo"}},
	} {
		err := tc.spec.Validate()
		var got []string
		for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
			var fe *FieldError
			if !errors.As(e, &fe) {
				t.Fatalf("%+v: %v is not a FieldError", tc.spec, e)
			}
			got = append(got, fe.Field)
		}
		if strings.Join(got, ",") != strings.Join(tc.fields, ",") {
			t.Errorf("%+v: fields %v (%v), want %v", tc.spec, got, err, tc.fields)
		}
	}
}

// TestSizeArithmeticDoesNotWrap: SumBytes and CheckSpan refuse what would
// wrap around 64 bits, and accept what fits exactly.
func TestSizeArithmeticDoesNotWrap(t *testing.T) {
	if n, err := SumBytes(1, 2, 3); err != nil || n != 6 {
		t.Errorf("SumBytes(1, 2, 3) = %d, %v", n, err)
	}
	if n, err := SumBytes(math.MaxUint64-1, 1); err != nil || n != math.MaxUint64 {
		t.Errorf("SumBytes(max-1, 1) = %d, %v", n, err)
	}
	if _, err := SumBytes(math.MaxUint64-15, 64, 16); err == nil || !strings.Contains(err.Error(), "overflows 64 bits") {
		t.Errorf("SumBytes wrapping around: %v", err)
	}
	for _, c := range []struct {
		offset, bytes, size uint64
		fits                bool
	}{
		{0, 64, 64, true},
		{64, 0, 64, true},
		{16, 48, 64, true},
		{16, 49, 64, false},
		{math.MaxUint64 - 15, 16, 1 << 20, false}, // offset+bytes wraps to 0
		{16, math.MaxUint64, 1 << 20, false},
	} {
		if err := CheckSpan(c.offset, c.bytes, c.size); (err == nil) != c.fits {
			t.Errorf("CheckSpan(%d, %d, %d) = %v, want fits %v", c.offset, c.bytes, c.size, err, c.fits)
		}
	}
	s := Spec{World: 2, Bytes: 64, DType: device.Float32, Op: device.Sum, Offset: math.MaxUint64 - 3}
	if _, err := s.BufferBytes(); err == nil {
		t.Errorf("BufferBytes of an offset near 2^64 did not fail")
	}
}
