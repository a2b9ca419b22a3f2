package ptxcheck

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// negZeroPTX does what FlashInfer's Lamport kernel does with the -0.0
// sentinel (trtllm_allreduce.cuh, Reducer<T, R, true>): a 16-byte load of
// the input and a volatile 16-byte store of it (the push), then the test
// for "not arrived", a bitwise compare of each 16-bit half with 0x8000
// (is_negative_zero since FlashInfer #1136). It also makes the values an
// upstream layer could hand the kernel: -0 + -0 in f32, a negative product
// below f32's normal range with and without .ftz (flushed to a
// sign-preserving zero: -0.0), and that product rounded to f16 and bf16.
const negZeroPTX = `.version 8.0
.target sm_90
.address_size 64

.visible .entry negzero(.param .u64 in, .param .u64 out)
{
	.reg .pred %p<3>;
	.reg .b16 %rs<5>;
	.reg .f32 %f<6>;
	.reg .b32 %r<12>;
	.reg .b64 %rd<3>;
	ld.param.u64 %rd1, [in];
	cvta.to.global.u64 %rd1, %rd1;
	ld.param.u64 %rd2, [out];
	cvta.to.global.u64 %rd2, %rd2;
	ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd1];
	st.volatile.global.v4.b32 [%rd2], {%r1, %r2, %r3, %r4};
	mov.b32 {%rs1, %rs2}, %r1;
	setp.eq.s16 %p1, %rs1, -32768;
	setp.eq.s16 %p2, %rs2, -32768;
	selp.u32 %r5, 1, 0, %p1;
	selp.u32 %r6, 1, 0, %p2;
	st.global.u32 [%rd2+16], %r5;
	st.global.u32 [%rd2+20], %r6;
	cvt.f32.f16 %f1, %rs1;
	add.f32 %f2, %f1, %f1;
	mov.b32 %r7, %f2;
	st.global.u32 [%rd2+24], %r7;
	mul.ftz.f32 %f3, 0f9C800000, 0f1C800000;
	mov.b32 %r8, %f3;
	st.global.u32 [%rd2+28], %r8;
	mul.rn.f32 %f4, 0f9C800000, 0f1C800000;
	mov.b32 %r9, %f4;
	st.global.u32 [%rd2+32], %r9;
	cvt.rn.f16.f32 %rs3, %f4;
	cvt.u32.u16 %r10, %rs3;
	st.global.u32 [%rd2+36], %r10;
	cvt.rn.bf16.f32 %rs4, %f4;
	cvt.u32.u16 %r11, %rs4;
	st.global.u32 [%rd2+40], %r11;
	ret;
}
`

// TestLamportNegativeZeroBits: the simulator keeps -0.0 as the GPU does,
// which FlashInfer's Lamport protocol depends on. The 16-byte copy keeps
// every sentinel bit; the bitwise test finds 0x8000 and not +0.0; -0 + -0
// is -0; -2^-70 * 2^-70 = -2^-140 is the f32 subnormal 0x80000200, which
// .ftz flushes to -0.0 (PTX: subnormal results flush to sign-preserving
// zero), and which rounds to -0.0 in f16 (below 2^-25) and in bf16 (below
// 2^-134) alike. Any of these in a Lamport kernel's input is "not
// arrived" (docs/peers.md, K).
func TestLamportNegativeZeroBits(t *testing.T) {
	src, err := Parse("negzero.ptx", negZeroPTX)
	if err != nil {
		t.Fatal(err)
	}
	// in: word 0 holds the halves -0.0 (low) and +0.0 (high); words 1-3
	// are two -0.0 halves each.
	want := []string{"32768", "2147516416", "2147516416", "2147516416", "1", "0", "2147483648", "2147483648", "2147484160", "32768", "32768"}
	var sum []string
	for k, w := range want {
		sum = append(sum, fmt.Sprintf("(i == %d)*%s", k, w))
	}
	harness := `{"buffers": [{"name": "in", "kind": "plain", "bytes": 16}, {"name": "out", "kind": "plain", "bytes": 44}],
		"steps": [{"write": {"buffer": "in", "dtype": "u32", "value": "(i == 0)*32768 + (i != 0)*2147516416"}},
		{"launch": {"entry": "negzero", "grid": 1, "block": 1, "params": [{"ptr": "in"}, {"ptr": "out"}]}}, {"sync": true},
		{"check": {"buffer": "out", "dtype": "u32", "value": "` + strings.Join(sum, " + ") + `"}}]}`
	rep, err := RunProgram(program(t, harness), src, Options{Worlds: []int{2}, Seeds: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		t.Errorf("%s: %s\n%s", f.Kind, f.Title, strings.Join(f.Details, "\n"))
	}
}

// TestLamportNegativeZeroInput: an input element equal to -0.0 hangs
// FlashInfer's Lamport all-reduce (docs/peers.md, K): the peers take the
// pushed -0.0 for "not arrived" and poll it for ever. In the world-2
// harness at the small size, element 1 of rank 1's input in the first
// call is 0 (+0.0). Written again as +0.0 the run is clean; written as
// -0.0, the same number to the arithmetic, rank 0 hangs in its poll (and
// rank 1 in the next call, whose push from rank 0 never comes).
func TestLamportNegativeZeroInput(t *testing.T) {
	if _, err := os.Stat(peersDir); err != nil {
		t.Skipf("no shipped kernels at %s (a fresh clone has none): %v", peersDir, err)
	}
	src := load(t, peersDir+"/ptx/flashinfer_trtllm_sm90.ptx")
	for _, c := range []struct {
		value string
		hang  bool
	}{{"-0", true}, {"0", false}} {
		p, err := LoadHarness("../examples/peers/flashinfer_trtllm_lamport_norm_w2.json")
		if err != nil {
			t.Fatal(err)
		}
		// The first repeat of launches is the f16 one: its steps are the
		// writes of the input and the residual, the launch and the checks.
		i := slices.IndexFunc(p.Steps, func(s Step) bool { return s.Repeat != nil })
		if i < 0 {
			t.Fatal("the harness has no repeat")
		}
		calls := p.Steps[i].Repeat
		if calls.Steps[0].Write == nil || calls.Steps[0].Write.Buffer != "in" || calls.Steps[0].Write.DType != "f16" {
			t.Fatalf("the first call's first step is not the f16 write of in: %+v", calls.Steps[0])
		}
		zero := Step{When: "(rank == 1)*(iter == 0)", Write: &Write{Buffer: "in", Fill: Fill{DType: "f16", Value: Expr(c.value), Offset: "2", Count: "1"}}}
		calls.Steps = slices.Insert(calls.Steps, 1, zero)
		// A poll waits microseconds of virtual time for a peer's push; a
		// second's spin is a hang, and a shorter one than the default
		// costs less real time (minutes under the race detector).
		p.Timeout = "1s"
		rep, err := RunProgram(p, src, Options{Seeds: 1, Vars: lamportSmall, Jobs: 2})
		if err != nil {
			t.Fatalf("input %s: %v", c.value, err)
		}
		var hangs []*Finding
		for _, f := range rep.Findings {
			if f.Kind == "hang" {
				hangs = append(hangs, f)
			} else {
				t.Errorf("input %s: %s: %s", c.value, f.Kind, f.Title)
			}
		}
		if !c.hang {
			for _, f := range hangs {
				t.Errorf("input %s: %s", c.value, f.Title)
			}
			continue
		}
		if len(hangs) != 1 {
			t.Fatalf("input %s: %d hangs, want 1", c.value, len(hangs))
		}
		details := strings.Join(hangs[0].Details, "\n")
		// Rank 0 polls rank 1's slot of its ping buffer (flag 1: lam1),
		// which keeps holding the pushed 0x8000.
		if !strings.Contains(details, "spun for 1s on lam1+") || !strings.Contains(details, "which kept holding 00 80") {
			t.Errorf("input %s: the hang is not rank 0's poll of lam1 holding -0.0:\n%s", c.value, details)
		}
	}
}
