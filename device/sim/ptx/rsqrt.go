package ptx

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"fmt"
	"io"
	"math"
	"sync"
)

// rsqrt.approx.f32 is the GPU's reciprocal square root approximation,
// which no formula gives bit for bit. The interpreter reproduces it from
// what an H200 computed (testdata/rsqrt/rsqrt.cu): for each f32 x' in
// [1, 4), the difference in units of the last place between the GPU's
// result and (float)(1.0/sqrt((double)x')) (a signed byte, -2 to 1). Any
// other positive finite x is x' * 4^k and its result that of x' times
// 2^-k, exactly; NaNs and negative inputs give the canonical NaN, +0 +inf,
// -0 -inf, +inf +0; .ftz flushes a subnormal input to a zero of its sign
// first. The GPU checked this model against every one of the 2^32
// inputs, with and without .ftz (testdata/rsqrt/verify.txt).

//go:embed rsqrt_table.bin.gz
var rsqrtTableGz []byte

// rsqrtTable is the table, unpacked on first use.
var rsqrtTable = sync.OnceValues(func() ([]int8, error) {
	b, err := gunzip(rsqrtTableGz)
	if err != nil {
		return nil, fmt.Errorf("rsqrt.approx table: %w", err)
	}
	if len(b) != 1<<24 {
		return nil, fmt.Errorf("rsqrt.approx table: %d bytes, want %d", len(b), 1<<24)
	}
	t := make([]int8, len(b))
	for i, v := range b {
		t[i] = int8(v)
	}
	return t, nil
})

// rsqrtApprox is rsqrt.approx{.ftz}.f32 of bits u (the table loaded).
func rsqrtApprox(u uint64, ftz bool, table []int8) uint64 {
	sign, exp, man := u>>31&1, u>>23&0xff, u&0x7fffff
	switch {
	case exp == 0xff && man != 0:
		return fmtF32.nan()
	case ftz && exp == 0:
		man = 0
	}
	switch {
	case exp == 0 && man == 0 && sign == 1:
		return 0xff800000
	case exp == 0 && man == 0:
		return 0x7f800000
	case sign == 1:
		return fmtF32.nan()
	case exp == 0xff:
		return 0
	}
	e := int(exp) - 127
	if exp == 0 {
		e = -126
		for man&0x800000 == 0 {
			man <<= 1
			e--
		}
		man &= 0x7fffff
	}
	par := e & 1
	k := (e - par) / 2
	x := math.Float32frombits(uint32(127+par)<<23 | uint32(man))
	ref := math.Float32bits(float32(1 / math.Sqrt(float64(x))))
	r := int64(ref) + int64(table[uint64(par)<<23|man])
	return uint64(r - int64(k)<<23)
}

func gunzip(b []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}
