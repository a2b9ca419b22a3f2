package ptx

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
)

// TestModuleVariables: .global and .const variables with initializers
// (scalars, arrays, an unsized array, an address) read what they were
// initialized to, through their names, generic addresses and ld.const;
// a store to one is an error naming it.
func TestModuleVariables(t *testing.T) {
	text := `.global .align 1 .b8 FP8_E4M3_MAX[1] = {126};
.global .align 4 .f32 negz = 0f80000000;
.global .align 2 .b8 pair[2] = {0, 128};
.const .align 4 .u32 tbl[] = {7, 8, 9};
.global .align 8 .u64 ptr_to = generic(tbl)+4;
.global .align 4 .u32 zero[2];
.global .align 8 .f64 half = 0.5;
.visible .entry k(.param .u64 .ptr .global .align 4 p)
{
	.reg .b16 %h<4>;
	.reg .b32 %r<8>;
	.reg .f32 %f<2>;
	.reg .b64 %rd<8>;
	ld.param.u64 %rd1, [p];
	ld.global.u8 %h1, [FP8_E4M3_MAX];
	cvt.u32.u16 %r1, %h1;
	st.global.u32 [%rd1], %r1;
	ld.global.f32 %f1, [negz];
	st.global.f32 [%rd1+4], %f1;
	mov.u64 %rd2, pair;
	cvta.global.u64 %rd3, %rd2;
	ld.u16 %h2, [%rd3];
	cvt.u32.u16 %r2, %h2;
	st.global.u32 [%rd1+8], %r2;
	ld.const.u32 %r3, [tbl+8];
	st.global.u32 [%rd1+12], %r3;
	ld.global.u64 %rd4, [ptr_to];
	ld.u32 %r4, [%rd4];
	st.global.u32 [%rd1+16], %r4;
	ld.global.u32 %r5, [zero+4];
	st.global.u32 [%rd1+20], %r5;
	ld.global.u64 %rd5, [half];
	st.global.u64 [%rd1+24], %rd5;
	ret;
}
`
	buf, err := runOne(t, text, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []uint64{126, 0x80000000, 0x8000, 9, 8, 0}
	for i, w := range want {
		if got := binary.LittleEndian.Uint32(buf[4*i:]); uint64(got) != w {
			t.Errorf("word %d = %#x, want %#x", i, got, w)
		}
	}
	if got := binary.LittleEndian.Uint64(buf[24:]); got != math.Float64bits(0.5) {
		t.Errorf("half = %#x, want 0.5", got)
	}

	store := `.global .align 4 .u32 g[4] = {1, 2, 3, 4};
.visible .entry k(.param .u64 p)
{
	.reg .b32 %r<2>;
	mov.u32 %r1, 5;
	st.global.u32 [g+8], %r1;
	ret;
}
`
	if _, err := runOne(t, store, nil); err == nil || !strings.Contains(err.Error(), "g+8") {
		t.Errorf("store to a module variable: %v, want an error naming g+8", err)
	}
}

// TestModuleProblemsDoNotStopTheRest: a module-scope declaration the
// parser refuses is listed with the refused lines of the functions, the
// functions that use it are refused where they do, and an entry that
// does not use it runs.
func TestModuleProblemsDoNotStopTheRest(t *testing.T) {
	text := header + `.global .align 4 .u32 bad[2] = {1, 2, 3};
.global .align 4 .u32 good = 5;
.weird_directive foo { whatever }
.visible .entry uses(.param .u64 p)
{
	.reg .b32 %r<2>;
	ld.global.u32 %r1, [bad];
	sad.u32 %r1, %r1, %r1, %r1;
	ret;
}
.visible .entry k(.param .u64 p)
{
	.reg .b32 %r<2>;
	.reg .b64 %rd<2>;
	ld.param.u64 %rd1, [p];
	ld.global.u32 %r1, [good];
	st.global.u32 [%rd1], %r1;
	ret;
}
`
	m, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range m.AllUnsupported() {
		got = append(got, u.String())
	}
	if len(got) != 4 || !strings.Contains(got[0], "line 4") || !strings.Contains(got[0], "more initializers") ||
		!strings.Contains(got[1], "line 6") || !strings.Contains(got[1], ".weird_directive") ||
		!strings.Contains(got[2], "uses line 10") || !strings.Contains(got[2], "bad was refused") ||
		!strings.Contains(got[3], "uses line 11: sad.u32") {
		t.Fatalf("unsupported:\n%s", strings.Join(got, "\n"))
	}
	if us, err := m.Unsupported("k"); err != nil || len(us) != 0 {
		t.Fatalf("k: %v %v, want runnable", us, err)
	}
	buf, err := runOne(t, strings.TrimPrefix(text, header), nil)
	if err != nil || binary.LittleEndian.Uint32(buf) != 5 {
		t.Fatalf("k: %v, stored %d, want 5", err, binary.LittleEndian.Uint32(buf))
	}
}

// TestVprintf: a kernel's printf formats its arguments from the local
// buffer nvcc builds (ints, a long, a double, a string, a pointer),
// returns the number of arguments, and a trap after it quotes the text.
func TestVprintf(t *testing.T) {
	text := `.extern .func  (.param .b32 func_retval0) vprintf
(
	.param .b64 vprintf_param_0,
	.param .b64 vprintf_param_1
)
;
.global .align 1 .b8 $str[34] = {114, 97, 110, 107, 32, 37, 100, 47, 37, 117, 32, 37, 108, 117, 32, 37, 115, 32, 37, 46, 50, 102, 32, 37, 120, 32, 37, 37, 32, 37, 112, 33, 10, 0};
.global .align 1 .b8 $str$1[3] = {111, 107, 0};
.visible .entry k(.param .u64 p)
{
	.local .align 8 .b8 __local_depot0[48];
	.reg .b32 %r<8>;
	.reg .b64 %rd<16>;
	mov.u64 %rd1, __local_depot0;
	mov.u32 %r1, -3;
	mov.u32 %r2, 7;
	st.local.v2.u32 [%rd1], {%r1, %r2};
	mov.u64 %rd2, 1234567890123;
	st.local.u64 [%rd1+8], %rd2;
	mov.u64 %rd3, $str$1;
	st.local.u64 [%rd1+16], %rd3;
	mov.u64 %rd4, 0d4009200000000000;
	st.local.u64 [%rd1+24], %rd4;
	mov.u32 %r3, 255;
	st.local.u32 [%rd1+32], %r3;
	mov.u64 %rd5, 0;
	st.local.u64 [%rd1+40], %rd5;
	mov.u64 %rd6, $str;
	cvta.global.u64 %rd7, %rd6;
	{
	.param .b64 param0;
	st.param.b64 [param0+0], %rd7;
	.param .b64 param1;
	st.param.b64 [param1+0], %rd1;
	.param .b32 retval0;
	call.uni (retval0), vprintf, (param0, param1);
	ld.param.b32 %r4, [retval0+0];
	}
	ld.param.u64 %rd8, [p];
	st.global.u32 [%rd8], %r4;
	trap;
}
`
	buf, err := runOne(t, text, nil)
	var trap *TrapError
	if !errors.As(err, &trap) || trap.Printed != "rank -3/7 1234567890123 ok 3.14 ff % 0x0!" {
		t.Fatalf("error %v, want a trap quoting the printed line", err)
	}
	if n := binary.LittleEndian.Uint32(buf); n != 7 {
		t.Errorf("vprintf returned %d, want 7 (its arguments)", n)
	}
}

// TestModuleVariableErrors: a malformed module-scope declaration is a
// problem of the module naming what is wrong, never a panic, and the
// entry after it still decodes.
func TestModuleVariableErrors(t *testing.T) {
	for _, c := range []struct{ decl, want string }{
		{".global .align 4 .u32 a[2] = {1, 2, 3};", "more initializers than elements"},
		{".global .u32 b[] ;", "needs an initializer"},
		{".global .u32 c = ;", "initializer is missing"},
		{".global .u32 d = {1, {2};", "unbalanced braces"},
		{".global .u32 e = nothing;", "no module-scope .global or .const variable declared before"},
		{".global .u32 f = generic(f2;", "bad initializer"},
		{".global .u32 g = 1 2;", "bad initializer"},
		{".global .u32 h[3] = {1,,2};", "empty initializer element"},
		{".global .f16 i = 1.5;", "decimal initializer"},
		{".global .pred j;", "unsupported variable type .pred"},
		{".global .u32 k[0];", "bad array length"},
		{".global .u8 l = -1;\n.global .u32 l;", "declared twice"},
		{".global .u8 m[2] = {generic(m), 0};", "no module-scope .global or .const variable declared before"},
		{".global .u64 n[1]; .global .u32 o = n;", "needs a 64-bit element"},
		{".extern .global .u32 p;", ".extern .global"},
		{".local .u32 q;", "module-scope .local"},
		{".global ;", "bad declaration"},
		{".const .align 3 .u32 r;", "bad alignment"},
	} {
		text := header + c.decl + "\n.visible .entry k(.param .u64 p)\n{\n\tret;\n}\n"
		m, err := Parse(text)
		if err != nil {
			t.Errorf("%q: %v, want the module to load", c.decl, err)
			continue
		}
		probs := m.AllUnsupported()
		if len(probs) == 0 || !strings.Contains(probs[0].Reason, c.want) {
			t.Errorf("%q: %v, want a problem saying %q", c.decl, probs, c.want)
		}
		if us, err := m.Unsupported("k"); err != nil || len(us) != 0 {
			t.Errorf("%q: entry k: %v %v", c.decl, us, err)
		}
	}
}
