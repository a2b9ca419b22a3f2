package ptx

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRsqrtTableIsTheGPUs: the embedded table holds the differences the
// GPU counted (testdata/rsqrt/verify.txt, written by the run that wrote
// the table).
func TestRsqrtTableIsTheGPUs(t *testing.T) {
	table, err := rsqrtTable()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[int]int{}
	for _, d := range table {
		counts[int(d)]++
	}
	report, err := os.ReadFile(filepath.Join("testdata", "rsqrt", "verify.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]int{}
	for _, line := range strings.Split(string(report), "\n") {
		var d, n int
		if _, err := fmt.Sscanf(line, "delta %d: %d", &d, &n); err == nil {
			want[d] = n
		}
	}
	if len(want) == 0 || fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Errorf("table deltas %v, the GPU's %v", counts, want)
	}
	if !strings.Contains(string(report), "rsqrt.approx.f32: 0 of 2^32 inputs differ") ||
		!strings.Contains(string(report), "rsqrt.approx.ftz.f32: 0 of 2^32 inputs differ") {
		t.Errorf("the GPU's check of the model did not pass:\n%s", report)
	}
}

// rsqrtModel is the model of rsqrt.approx.f32 written from its
// definition with float arithmetic (the interpreter's works on bits):
// scale x by a power of 4 into [1, 4), look the result up, scale back.
func rsqrtModel(x float32, ftz bool, table []int8) float32 {
	v := float64(x)
	if ftz && math.Abs(v) < 0x1p-126 {
		v = math.Copysign(0, v)
	}
	switch {
	case v == 0 && math.Signbit(v):
		return float32(math.Inf(-1))
	case v == 0:
		return float32(math.Inf(1))
	case v != v, v < 0:
		return math.Float32frombits(0x7fffffff)
	case math.IsInf(v, 1):
		return 0
	}
	_, e := math.Frexp(v) // v = f * 2^e, f in [0.5, 1)
	k := (e - 1) >> 1     // floor((e-1)/2)
	xr := float32(math.Ldexp(v, -2*k))
	b := math.Float32bits(xr)
	idx := (b>>23-127)<<23 | b&0x7fffff
	ref := float32(1 / math.Sqrt(float64(xr)))
	r := math.Float32frombits(uint32(int32(math.Float32bits(ref)) + int32(table[idx])))
	return float32(math.Ldexp(float64(r), -k))
}

// TestRsqrtApprox: the interpreter's rsqrt.approx.f32 (and .ftz) is the
// model over edge values, every power of two, subnormals and a million
// spread bit patterns, and a kernel runs it.
func TestRsqrtApprox(t *testing.T) {
	table, err := rsqrtTable()
	if err != nil {
		t.Fatal(err)
	}
	inputs := []uint32{0, 0x80000000, 1, 0x80000001, 0x007fffff, 0x00800000, 0x7f7fffff, 0x7f800000, 0xff800000,
		0x7fc00000, 0x7f800001, 0xffc00123, 0x3f800000, 0x40000000, 0x407fffff, 0xbf800000}
	for e := uint32(0); e < 255; e++ {
		inputs = append(inputs, e<<23, e<<23|0x400001, e<<23|0x7fffff)
	}
	for i, u := uint32(0), uint32(12345); i < 1<<20; i++ {
		u = u*1664525 + 1013904223
		inputs = append(inputs, u)
	}
	bad := 0
	for _, u := range inputs {
		for _, ftz := range []bool{false, true} {
			got := uint32(rsqrtApprox(uint64(u), ftz, table))
			want := math.Float32bits(rsqrtModel(math.Float32frombits(u), ftz, table))
			if got != want {
				if bad++; bad <= 5 {
					t.Errorf("rsqrt.approx (ftz %v) of %#08x = %#08x, the model %#08x", ftz, u, got, want)
				}
			}
		}
	}
	text := `.visible .entry k(.param .u64 p)
{
	.reg .f32 %f<4>;
	.reg .b64 %rd<2>;
	ld.param.u64 %rd1, [p];
	ld.global.f32 %f1, [%rd1];
	rsqrt.approx.f32 %f2, %f1;
	rsqrt.approx.ftz.f32 %f3, %f1;
	st.global.v2.f32 [%rd1+8], {%f2, %f3};
	ret;
}
`
	buf, err := runOne(t, text, u32s(0x00000001))
	if err != nil {
		t.Fatal(err)
	}
	if got := binary.LittleEndian.Uint32(buf[8:]); got != uint32(rsqrtApprox(1, false, table)) || got>>23 != 127+74 { // 2^74.5
		t.Errorf("rsqrt.approx.f32 of the smallest subnormal: %#08x", got)
	}
	if got := binary.LittleEndian.Uint32(buf[12:]); got != 0x7f800000 {
		t.Errorf("rsqrt.approx.ftz.f32 of the smallest subnormal: %#08x, want +inf", got)
	}
}
