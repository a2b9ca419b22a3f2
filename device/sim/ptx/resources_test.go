package ptx

import (
	"os"
	"strings"
	"testing"
)

// TestResources: the static shared memory and the directives of an entry,
// counted over the functions it calls and the module scope, and not over
// another entry's.
func TestResources(t *testing.T) {
	const src = `
.version 8.0
.target sm_90
.address_size 64
.shared .align 4 .b8 modvar[256];
.extern .shared .align 16 .b8 dyn[];
.func helper()
{
	.shared .align 8 .b8 helpvar[1000];
	ret;
}
.visible .entry a(
	.param .u64 a_param_0
)
.maxntid 128, 2, 1
.minnctapersm 3
.maxnreg 40
{
	.shared .align 4 .b8 avar[4096];
	call.uni helper, ();
	ret;
}
.visible .entry b()
.reqntid 64
{
	.shared .align 4 .b8 bvar[77];
	ret;
}
.visible .entry c()
{
	ret;
}
`
	m, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		entry string
		want  Resources
	}{
		{"a", Resources{StaticShared: 256 + 4096 + 1000, MaxNReg: 40, MaxNTid: 256, MinNCTAPerSM: 3}},
		{"b", Resources{StaticShared: 256 + 77, ReqNTid: 64}},
		{"c", Resources{StaticShared: 256}},
	} {
		// Each twice: decoding is done once, counting every time.
		for range 2 {
			got, err := m.Resources(tc.entry)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("%s: %+v, want %+v", tc.entry, got, tc.want)
			}
		}
	}
	if _, err := m.Resources("helper"); err == nil || !strings.Contains(err.Error(), `no entry "helper"`) {
		t.Errorf("a .func as an entry: %v", err)
	}
}

// TestResourcesOfNvccPTX: the static shared memory of the PTX nvcc made of
// examples/bugs/grid_barrier_not_resident/bug.cu is what ptxas -v reported
// for it on the GPU machine (41088 bytes smem: a 40960-byte tile and a
// 128-byte array of warp sums).
func TestResourcesOfNvccPTX(t *testing.T) {
	text, err := os.ReadFile("../../../examples/bugs/grid_barrier_not_resident/bug.ptx")
	if err != nil {
		t.Fatal(err)
	}
	m, err := Parse(string(text))
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.Resources("allreduce_normalize")
	if err != nil {
		t.Fatal(err)
	}
	if want := (Resources{StaticShared: 41088}); got != want {
		t.Errorf("%+v, want %+v", got, want)
	}
}
