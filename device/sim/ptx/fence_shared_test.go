package ptx

import (
	"strconv"
	"testing"
)

// orderEnv records what a thread tells its environment about fences and
// shared memory.
type orderEnv struct {
	memEnv
	fences []string
	shared []string
}

func (e *orderEnv) Fence(sem Sem, sc Scope) {
	e.fences = append(e.fences, sem.String()+"."+[...]string{"cta", "gpu", "sys"}[sc])
}

func (e *orderEnv) Shared(off uint64, n int, write bool, _ Sem, atomic bool) {
	k := "ld"
	switch {
	case atomic:
		k = "atom"
	case write:
		k = "st"
	}
	e.shared = append(e.shared, k+"@"+strconv.Itoa(int(off))+"/"+strconv.Itoa(n))
}

const orderKernel = `
.version 8.0
.target sm_90
.address_size 64

.visible .entry k(
	.param .u64 p
)
{
	.shared .align 4 .b8 buf[16];
	.reg .b32 %r<4>;
	.reg .b64 %rd<3>;
	membar.cta;
	membar.gl;
	membar.sys;
	fence.sc.gpu;
	fence.acq_rel.sys;
	st.shared.u32 [buf+4], 7;
	ld.shared.u32 %r1, [buf+4];
	atom.shared.add.u32 %r2, [buf+8], 1;
	ret;
}
`

// TestFencesAndSharedReachTheEnvironment: membar is fence.sc at its level,
// fence.acq_rel keeps its semantics, and every shared-memory access is
// reported before it happens.
func TestFencesAndSharedReachTheEnvironment(t *testing.T) {
	m, err := Parse(orderKernel)
	if err != nil {
		t.Fatal(err)
	}
	env := &orderEnv{memEnv: memEnv{mem: map[uint64]byte{}}}
	mem, err := m.NewBlockMem("k", make([]byte, 8))
	if err != nil {
		t.Fatal(err)
	}
	th, err := m.NewThread("k", env, mem, Dim{Ntid: 1, Nctaid: 1})
	if err != nil {
		t.Fatal(err)
	}
	if stop, err := th.Run(); err != nil || stop != Exited {
		t.Fatalf("Run = %v, %v", stop, err)
	}
	want := []string{"sc.cta", "sc.gpu", "sc.sys", "sc.gpu", "acq_rel.sys"}
	if len(env.fences) != len(want) {
		t.Fatalf("fences %v, want %v", env.fences, want)
	}
	for i := range want {
		if env.fences[i] != want[i] {
			t.Fatalf("fences %v, want %v", env.fences, want)
		}
	}
	wantShared := []string{"st@4/4", "ld@4/4", "atom@8/4"}
	if len(env.shared) != len(wantShared) {
		t.Fatalf("shared accesses %v, want %v", env.shared, wantShared)
	}
	for i := range wantShared {
		if env.shared[i] != wantShared[i] {
			t.Fatalf("shared accesses %v, want %v", env.shared, wantShared)
		}
	}
}
