package ptxcheck

import (
	"fmt"
	"strings"
	"testing"
)

// endBarrierPTX holds PyTorch's end-of-kernel pattern (its
// sync_remote_blocks with a release put and a relaxed wait, "so no rank
// overwrites a buffer a peer is still reading") in three entries. Thread
// 0 of each rank reads word 0 of the next rank's data, then puts 1 into
// its slot of the next rank's flags (a compare-and-swap 0 -> 1 retried
// until it succeeds) and waits for the previous rank's put into its own
// flags (1 -> 0). read_rel puts with release order, read_rlx relaxed;
// both wait relaxed. read_rel_write then overwrites its own word 0 in the
// same kernel. overwrite (the next kernel) writes its own word 0.
func endBarrierPTX() string {
	var b strings.Builder
	b.WriteString(`.version 8.0
.target sm_90
.address_size 64
`)
	entry := func(name, put string, write bool) {
		fmt.Fprintf(&b, `
.visible .entry %[1]s(
	.param .u64 %[1]s_param_0,
	.param .u64 %[1]s_param_1,
	.param .u64 %[1]s_param_2,
	.param .u32 %[1]s_param_3,
	.param .u32 %[1]s_param_4
)
{
	.reg .pred 	%%p<3>;
	.reg .b32 	%%r<12>;
	.reg .b64 	%%rd<16>;

	ld.param.u64 	%%rd1, [%[1]s_param_0];
	ld.param.u64 	%%rd2, [%[1]s_param_1];
	ld.param.u64 	%%rd3, [%[1]s_param_2];
	ld.param.u32 	%%r1, [%[1]s_param_3];
	ld.param.u32 	%%r2, [%[1]s_param_4];
	add.s32 	%%r3, %%r1, 1;
	rem.u32 	%%r3, %%r3, %%r2;
	add.s32 	%%r4, %%r1, %%r2;
	sub.s32 	%%r4, %%r4, 1;
	rem.u32 	%%r4, %%r4, %%r2;
	mul.wide.u32 	%%rd4, %%r3, 8;
	add.s64 	%%rd5, %%rd1, %%rd4;
	ld.global.u64 	%%rd6, [%%rd5];
	ld.global.u32 	%%r5, [%%rd6];
	st.global.u32 	[%%rd3], %%r5;
	add.s64 	%%rd7, %%rd2, %%rd4;
	ld.global.u64 	%%rd8, [%%rd7];
	mul.wide.u32 	%%rd9, %%r1, 4;
	add.s64 	%%rd10, %%rd8, %%rd9;
	mov.u32 	%%r6, 0;
	mov.u32 	%%r7, 1;
$L_put_%[1]s:
	atom.%[2]s.sys.global.cas.b32 	%%r8, [%%rd10], %%r6, %%r7;
	setp.ne.s32 	%%p1, %%r8, 0;
	@%%p1 bra 	$L_put_%[1]s;
	mul.wide.u32 	%%rd11, %%r1, 8;
	add.s64 	%%rd12, %%rd2, %%rd11;
	ld.global.u64 	%%rd13, [%%rd12];
	mul.wide.u32 	%%rd14, %%r4, 4;
	add.s64 	%%rd15, %%rd13, %%rd14;
$L_wait_%[1]s:
	atom.relaxed.sys.global.cas.b32 	%%r9, [%%rd15], %%r7, %%r6;
	setp.ne.s32 	%%p2, %%r9, 1;
	@%%p2 bra 	$L_wait_%[1]s;
`, name, put)
		if write {
			b.WriteString(`	add.s64 	%rd5, %rd1, %rd11;
	ld.global.u64 	%rd6, [%rd5];
	st.global.u32 	[%rd6], %r1;
`)
		}
		b.WriteString("\tret;\n}\n")
	}
	entry("read_rel", "release", false)
	entry("read_rlx", "relaxed", false)
	entry("read_rel_write", "release", true)
	b.WriteString(`
.visible .entry overwrite(
	.param .u64 overwrite_param_0,
	.param .u32 overwrite_param_1
)
{
	.reg .b32 	%r<3>;
	.reg .b64 	%rd<5>;

	ld.param.u64 	%rd1, [overwrite_param_0];
	ld.param.u32 	%r1, [overwrite_param_1];
	mul.wide.u32 	%rd2, %r1, 8;
	add.s64 	%rd3, %rd1, %rd2;
	ld.global.u64 	%rd4, [%rd3];
	st.global.u32 	[%rd4], %r1;
	ret;
}
`)
	return b.String()
}

// TestKernelEndAcquires: the kernel boundary on a stream is a
// system-scope fence. PyTorch's end barrier (a release put, a relaxed
// wait) followed by the next kernel's overwrite of the buffer the peers
// read is ordered: the relaxed wait read the peer's release, and the
// kernel's end acquires what it observed, so the peer's read happens
// before the overwrite. With a relaxed put the peer released nothing (its
// read is not ordered before the put), and an overwrite in the same
// kernel, after the relaxed wait, has no fence to acquire with: both race.
func TestKernelEndAcquires(t *testing.T) {
	src, err := Parse("endbarrier.ptx", endBarrierPTX())
	if err != nil {
		t.Fatal(err)
	}
	harness := func(entry string, next bool) string {
		h := `{
  "worlds": "2,3",
  "buffers": [
    {"name": "data", "kind": "symmetric", "bytes": 64, "init": {"dtype": "u32", "value": "rank"}},
    {"name": "flags", "kind": "signal", "bytes": 64},
    {"name": "out", "kind": "plain", "bytes": 4}
  ],
  "steps": [{"repeat": {"times": 1, "steps": [
    {"launch": {"entry": "` + entry + `", "grid": 1, "block": 1, "params": [{"ptrs": "data"}, {"ptrs": "flags"}, {"ptr": "out"}, {"u32": "rank"}, {"u32": "world"}]}}`
		if next {
			h += `,
    {"launch": {"entry": "overwrite", "grid": 1, "block": 1, "params": [{"ptrs": "data"}, {"u32": "rank"}]}}`
		}
		return h + `
  ]}}]
}`
	}
	for _, c := range []struct {
		entry string
		next  bool
		race  bool
	}{
		{"read_rel", true, false},
		{"read_rlx", true, true},
		{"read_rel_write", false, true},
	} {
		rep, err := RunProgram(program(t, harness(c.entry, c.next)), src, Options{Seeds: 4})
		if err != nil {
			t.Fatalf("%s: %v", c.entry, err)
		}
		races := 0
		for _, f := range rep.Findings {
			if f.Kind != "race" {
				t.Errorf("%s: %s", c.entry, dumpFindings(rep))
			}
			races++
		}
		if c.race && races == 0 {
			t.Errorf("%s: no race between the peer's read and the overwrite", c.entry)
		}
		if !c.race && races > 0 {
			t.Errorf("%s: the end barrier with a release put and a relaxed wait does not order the next kernel's overwrite:\n%s", c.entry, dumpFindings(rep))
		}
	}
}
