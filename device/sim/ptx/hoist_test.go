package ptx

import (
	"fmt"
	"slices"
	"testing"
)

// hoistEnv records the order of a thread's global accesses and lets every
// store it is asked about go first.
type hoistEnv struct {
	memEnv
	log []string
}

func (e *hoistEnv) Load(addr uint64, dst []byte, sem Sem, sc Scope) error {
	e.log = append(e.log, fmt.Sprintf("ld %#x", addr))
	return e.memEnv.Load(addr, dst, sem, sc)
}

func (e *hoistEnv) Store(addr uint64, src []byte, sem Sem, sc Scope) error {
	e.log = append(e.log, fmt.Sprintf("st %#x", addr))
	return e.memEnv.Store(addr, src, sem, sc)
}

func (e *hoistEnv) Hoist(uint64, int, uint64, int) bool { return true }

// TestHoistOnlyWhatTheModelAllows: a store goes before an earlier load only
// when nothing orders them: not one whose data, address or guard the load gives,
// nor past an acquire load, a fence, a branch or another access, nor a
// release store, nor the same address; and it runs once.
func TestHoistOnlyWhatTheModelAllows(t *testing.T) {
	const x, y = 0x1000, 0x2000
	for _, c := range []struct {
		name, body string
		hoisted    bool
	}{
		{"independent", "ld.relaxed.sys.global.u32 %r1, [%rd1];\n\tadd.s32 %r3, %r2, 1;\n\tst.relaxed.sys.global.u32 [%rd2], %r2;", true},
		// Register arithmetic the load does not feed runs before it.
		{"data computed after the load", "ld.relaxed.sys.global.u32 %r1, [%rd1];\n\tadd.s32 %r3, %r2, 1;\n\tst.relaxed.sys.global.u32 [%rd2], %r3;", true},
		{"address computed after the load", "ld.relaxed.sys.global.u32 %r1, [%rd1];\n\tadd.s64 %rd3, %rd2, 0;\n\tst.relaxed.sys.global.u32 [%rd3], %r2;", true},
		{"arithmetic that rewrites the load's address", "ld.relaxed.sys.global.u32 %r1, [%rd1];\n\tmov.u64 %rd1, %rd2;\n\tst.relaxed.sys.global.u32 [%rd1], %r2;", false},
		{"arithmetic that rewrites the load's register", "ld.relaxed.sys.global.u32 %r1, [%rd1];\n\tmov.u32 %r1, 5;\n\tst.relaxed.sys.global.u32 [%rd2], %r1;", false},
		{"a branch into the arithmetic", "ld.relaxed.sys.global.u32 %r1, [%rd1];\n\tbra.uni L1;\nL1:\n\tadd.s32 %r3, %r2, 1;\n\tst.relaxed.sys.global.u32 [%rd2], %r3;", false},
		{"plain", "ld.global.u32 %r1, [%rd1];\n\tst.global.u32 [%rd2], %r2;", true},
		{"data dependency", "ld.relaxed.sys.global.u32 %r1, [%rd1];\n\tst.relaxed.sys.global.u32 [%rd2], %r1;", false},
		{"dependency through arithmetic", "ld.relaxed.sys.global.u32 %r1, [%rd1];\n\tadd.s32 %r3, %r1, 1;\n\tst.relaxed.sys.global.u32 [%rd2], %r3;", false},
		{"address dependency", "ld.relaxed.sys.global.u64 %rd3, [%rd1];\n\tst.relaxed.sys.global.u32 [%rd3], %r2;", false},
		{"acquire load", "ld.acquire.sys.global.u32 %r1, [%rd1];\n\tst.relaxed.sys.global.u32 [%rd2], %r2;", false},
		{"release store", "ld.relaxed.sys.global.u32 %r1, [%rd1];\n\tst.release.sys.global.u32 [%rd2], %r2;", false},
		{"fence between", "ld.relaxed.sys.global.u32 %r1, [%rd1];\n\tfence.acq_rel.sys;\n\tst.relaxed.sys.global.u32 [%rd2], %r2;", false},
		{"same address", "ld.relaxed.sys.global.u32 %r1, [%rd1];\n\tst.relaxed.sys.global.u32 [%rd1], %r2;", false},
		{"guarded by the load", "ld.relaxed.sys.global.u32 %r1, [%rd1];\n\tsetp.eq.u32 %p1, %r1, 0;\n\t@%p1 st.relaxed.sys.global.u32 [%rd2], %r2;", false},
	} {
		src := fmt.Sprintf(`
.version 8.0
.target sm_90
.address_size 64
.visible .entry k()
{
	.reg .b32 %%r<4>;
	.reg .b64 %%rd<4>;
	.reg .pred %%p<2>;
	mov.u64 %%rd1, %d;
	mov.u64 %%rd2, %d;
	mov.u32 %%r2, 7;
	%s
	ret;
}
`, x, y, c.body)
		m, err := Parse(src)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		env := &hoistEnv{memEnv: memEnv{mem: map[uint64]byte{}}}
		mem, err := m.NewBlockMem("k", nil)
		if err != nil {
			t.Fatal(err)
		}
		th, err := m.NewThread("k", env, mem, Dim{Ntid: 1, Nctaid: 1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := th.Run(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		first := len(env.log) > 0 && env.log[0][:2] == "st"
		if first != c.hoisted || len(env.log) != 2 {
			t.Errorf("%s: accesses %v, want the store first: %v (and each once)", c.name, env.log, c.hoisted)
		}
		if !slices.Contains(env.log, fmt.Sprintf("ld %#x", x)) {
			t.Errorf("%s: accesses %v, want the load of %#x", c.name, env.log, x)
		}
		if c.hoisted && !slices.Contains(env.log, fmt.Sprintf("st %#x", y)) {
			t.Errorf("%s: accesses %v", c.name, env.log)
		}
	}
}
