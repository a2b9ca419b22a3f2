package ptxcheck

import (
	"strings"
	"testing"
)

// shared32PTX takes a shared array's address into a 32-bit register, as
// nvcc does for `__shared__ T channels[N]` indexed by a thread (MSCCL++'s
// allreducePacket), and stores and loads through it with st.shared and
// ld.shared.
const shared32PTX = `.version 8.0
.target sm_90
.address_size 64

.visible .entry stage(.param .u64 out)
{
	.shared .align 8 .b8 buf[256];
	.reg .b32 %r<8>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [out];
	cvta.to.global.u64 %rd1, %rd1;
	mov.u32 %r1, %tid.x;
	mov.u32 %r2, buf;
	mad.lo.s32 %r3, %r1, 8, %r2;
	cvt.u64.u32 %rd2, %r1;
	add.s64 %rd2, %rd2, 100;
	st.shared.u64 [%r3], %rd2;
	bar.sync 0;
	xor.b32 %r4, %r1, 1;
	mad.lo.s32 %r5, %r4, 8, %r2;
	ld.shared.u64 %rd3, [%r5];
	mul.wide.u32 %rd2, %r1, 8;
	add.s64 %rd2, %rd1, %rd2;
	st.global.u64 [%rd2], %rd3;
	ret;
}
`

// TestSharedAddressIn32Bits: a shared variable's address moved into a
// 32-bit register (mov.u32 %r, buf) is its offset in the block's shared
// memory, and st.shared/ld.shared through it reach that memory: each
// thread reads its neighbour's word (before, the store failed with
// "address 0x0 is not in the shared window").
func TestSharedAddressIn32Bits(t *testing.T) {
	src, err := Parse("stage.ptx", shared32PTX)
	if err != nil {
		t.Fatal(err)
	}
	harness := `{"buffers": [{"name": "out", "kind": "plain", "bytes": 256}],
		"steps": [{"launch": {"entry": "stage", "grid": 1, "block": 32, "params": [{"ptr": "out"}]}}, {"sync": true},
		{"check": {"buffer": "out", "dtype": "u64", "count": 32, "value": "100 + i + 1 - 2*(i % 2)"}}]}`
	rep, err := RunProgram(program(t, harness), src, Options{Worlds: []int{2}, Seeds: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		t.Errorf("%s: %s\n%s", f.Kind, f.Title, strings.Join(f.Details, "\n"))
	}
}
