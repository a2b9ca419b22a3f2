package ptx

import (
	"strings"
	"testing"
)

// TestProxyInstructionsRefusedByName: proxy fences, surface and texture
// accesses are refused, each named with the reason, not run as if
// generic.
func TestProxyInstructionsRefusedByName(t *testing.T) {
	src := `.version 7.8
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p)
{
	.reg .b64 %rd<3>;
	.reg .b32 %r<3>;
	ld.param.u64 %rd1, [p];
	fence.proxy.async;
	fence.proxy.alias;
	suld.b.1d.b32.trap {%r1}, [%rd1, {%r2}];
	sust.b.1d.b32.trap [%rd1, {%r2}], {%r1};
	tex.1d.v4.f32.s32 {%r1, %r1, %r1, %r1}, [%rd1, {%r2}];
	ret;
}
`
	m, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	us, err := m.Unsupported("k")
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		line       int
		inst, says string
	}{
		{9, "fence.proxy.async", "proxy fence"},
		{10, "fence.proxy.alias", "proxy fence"},
		{11, "suld.b.1d.b32.trap", "surface proxy"},
		{12, "sust.b.1d.b32.trap", "surface proxy"},
		{13, "tex.1d.v4.f32.s32", "texture proxy"},
	}
	if len(us) != len(want) {
		t.Fatalf("refused %v, want %d statements", us, len(want))
	}
	for i, w := range want {
		u := us[i]
		if u.Line != w.line || u.Inst != w.inst || !strings.Contains(u.Reason, w.says) || !strings.Contains(u.Reason, "only the generic proxy") {
			t.Errorf("refusal %d = %v, want line %d, %s, a reason saying %q", i, u, w.line, w.inst, w.says)
		}
	}
	if _, err := m.Func("k"); err == nil || !strings.Contains(err.Error(), "fence.proxy.async: a proxy fence") {
		t.Errorf("Func = %v, want the refusal named", err)
	}
}
