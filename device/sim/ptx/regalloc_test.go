package ptx

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/symmem/symmem/kernels"
)

// regKernels exercise what register allocation must keep: dirty fills
// its registers, parameters and local memory and exits, so that the next
// thread may get its stacks; clean then checks that it starts from zero
// registers and memory (reads of registers and local memory never
// written), that a guarded write that does not happen leaves the old
// value, that values carried round a loop and across a call survive, and
// that a vector load into a sink and a register read for the last time
// by the instruction that writes another work.
const regKernels = `
.version 9.0
.target sm_80
.address_size 64

.func (.param .b32 ret) twice(.param .b32 x)
{
	.reg .b32 %t<4>;
	ld.param.u32 %t1, [x];
	add.s32 %t2, %t1, %t1;
	add.s32 %t2, %t2, %t3; // %t3 was never written: 0
	st.param.b32 [ret], %t2;
	ret;
}

.visible .entry dirty(.param .u64 out)
{
	.reg .b32 %r<8>;
	.reg .b64 %rd<4>;
	.reg .pred %p<2>;
	.local .align 4 .b8 scratch[16];
	.param .b32 a;
	.param .b32 b;
	mov.u32 %r1, 0xdeadbeef;
	mov.u32 %r2, 0xdeadbeef;
	mov.u32 %r3, 0xdeadbeef;
	mov.u32 %r4, 0xdeadbeef;
	mov.u32 %r5, 0xdeadbeef;
	mov.u32 %r6, 0xdeadbeef;
	mov.u32 %r7, 0xdeadbeef;
	mov.u64 %rd1, -1;
	mov.u64 %rd2, -1;
	mov.u64 %rd3, -1;
	setp.eq.u32 %p1, %r1, %r2;
	st.local.u32 [scratch], %r1;
	st.local.u32 [scratch+4], %r1;
	st.local.u32 [scratch+8], %r1;
	st.local.u32 [scratch+12], %r1;
	st.param.b32 [a], %r1;
	call.uni (b), twice, (a);
	ret;
}

.visible .entry clean(.param .u64 out)
{
	.reg .b32 %r<16>;
	.reg .b64 %rd<4>;
	.reg .pred %p<3>;
	.local .align 4 .b8 scratch[16];
	.param .b32 a;
	.param .b32 b;
	ld.param.u64 %rd1, [out];
	// Never written: zero.
	st.global.u32 [%rd1], %r1;
	ld.local.u32 %r2, [scratch+8];
	st.global.u32 [%rd1+4], %r2;
	// A guarded write that does not happen.
	mov.u32 %r3, 3;
	mov.u32 %r11, 5;
	add.s32 %r12, %r11, %r11;
	st.global.u32 [%rd1+20], %r12;
	setp.ne.u32 %p1, %r2, 0;
	@%p1 mov.u32 %r3, 7;
	st.global.u32 [%rd1+8], %r3;
	// sum = 0 + 1 + ... + 9, the counter and the sum carried round.
	mov.u32 %r4, 0;
	mov.u32 %r5, 0;
loop:
	add.s32 %r6, %r4, %r5;
	mov.u32 %r4, %r6;
	add.s32 %r5, %r5, 1;
	setp.lt.u32 %p2, %r5, 10;
	@%p2 bra loop;
	st.global.u32 [%rd1+12], %r4;
	// A value live across a call.
	mov.u32 %r7, 100;
	st.param.b32 [a], %r4;
	call.uni (b), twice, (a);
	ld.param.u32 %r8, [b];
	add.s32 %r8, %r8, %r7;
	st.global.u32 [%rd1+16], %r8;
	// A vector load with a sink, then the address register read for
	// the last time while another is written.
	st.global.v2.u32 [%rd1+24], {%r7, %r4};
	ld.global.v2.u32 {_, %r9}, [%rd1+24];
	add.s64 %rd2, %rd1, 32;
	ld.global.u32 %r10, [%rd1+12];
	st.global.u32 [%rd2], %r9;
	st.global.u32 [%rd2+4], %r10;
	ret;
}
`

func TestRegisterAllocation(t *testing.T) {
	m, err := Parse(regKernels)
	if err != nil {
		t.Fatal(err)
	}
	// The first thread of the module grows its stacks at the call, with
	// a value live in the caller; the later ones may reuse the stacks of
	// those before.
	for round := range 4 {
		checkClean(t, m, round)
		runEntry(t, m, "dirty", &memEnv{mem: map[uint64]byte{}})
	}
}

// TestRegisterAllocationGivesUp checks the allocation of a function whose
// analysis would cost more than its limit: every register keeps a slot of
// its own, and the function computes what it did.
func TestRegisterAllocationGivesUp(t *testing.T) {
	m, err := Parse(regKernels)
	if err != nil {
		t.Fatal(err)
	}
	fn, err := m.Func("clean")
	if err != nil {
		t.Fatal(err)
	}
	// Decode clean again (it declares no shared memory, which a second
	// decoding would allocate twice), its registers as declared.
	cp, err := m.decode(m.funcs["clean"])
	if err != nil {
		t.Fatal(err)
	}
	named := map[int]bool{}
	for i := range cp.code {
		cp.code[i].regRefs(func(r *int) { named[*r] = true }, func(r *int) { named[*r] = true })
	}
	if interference(cp.code, cp.nregs, 10) != nil {
		t.Fatal("interference within a limit of 10 entries: not given up")
	}
	allocRegs(cp, 10)
	if cp.nregs != len(named) || cp.nregs <= fn.nregs {
		t.Fatalf("given up: %d slots for %d registers (%d shared)", cp.nregs, len(named), fn.nregs)
	}
	makeHeads(cp)
	m.funcs["clean"].fn = cp
	checkClean(t, m, 0)
}

const regBase = 0x7f00_0000_0000

// runEntry runs one thread of entry to its exit.
func runEntry(t *testing.T, m *Module, entry string, env *memEnv) {
	t.Helper()
	params := make([]byte, 8)
	binary.LittleEndian.PutUint64(params, regBase)
	mem, err := m.NewBlockMem(entry, params)
	if err != nil {
		t.Fatal(err)
	}
	th, err := m.NewThread(entry, env, mem, Dim{Ntid: 1, Nctaid: 1})
	if err != nil {
		t.Fatal(err)
	}
	if stop, err := th.Run(); err != nil || stop != Exited {
		t.Fatalf("%s: %v, %v; want an exit", entry, stop, err)
	}
	if _, err := th.Run(); err == nil {
		t.Fatalf("%s: a thread that exited ran again", entry)
	}
}

// checkClean runs regKernels' clean and checks what it stored.
func checkClean(t *testing.T, m *Module, round int) {
	t.Helper()
	env := &memEnv{mem: map[uint64]byte{}}
	runEntry(t, m, "clean", env)
	for _, c := range []struct {
		off  uint64
		what string
		want uint32
	}{
		{0, "a register never written", 0},
		{4, "local memory never written", 0},
		{8, "a register after a guarded write that did not happen", 3},
		{12, "the sum of a loop", 45},
		{16, "a call's result plus a value live across it", 190},
		{20, "a sum", 10},
		{32, "a vector load's second element", 45},
		{36, "a load through a register read for the last time", 45},
	} {
		if got := get32(env.mem, regBase+c.off); got != c.want {
			t.Errorf("round %d: %s: %d, want %d", round, c.what, got, c.want)
		}
	}
}

// TestRegistersSizedByUse checks that the kernels' generic one-shot entry,
// which declares 22,107 registers, runs with a register file of the
// registers it has live at once.
func TestRegistersSizedByUse(t *testing.T) {
	text, err := kernels.PTX()
	if err != nil {
		t.Fatal(err)
	}
	m, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	fn, err := m.Func("one_shot_all_reduce")
	if err != nil {
		t.Fatal(err)
	}
	declared := 0
	src := m.funcs["one_shot_all_reduce"].body
	for _, line := range strings.Split(src, "\n") {
		if i, j := strings.IndexByte(line, '<'), strings.IndexByte(line, '>'); strings.Contains(line, ".reg") && i > 0 && j > i {
			n := 0
			for _, c := range line[i+1 : j] {
				n = 10*n + int(c-'0')
			}
			declared += n
		}
	}
	if declared < 20000 || fn.nregs > 128 {
		t.Errorf("one_shot_all_reduce declares %d registers and runs with %d; want over 20000 declared, at most 128 run", declared, fn.nregs)
	}
}
