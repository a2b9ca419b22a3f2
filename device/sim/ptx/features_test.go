package ptx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

const header = ".version 8.0\n.target sm_90\n.address_size 64\n"

// runOne runs entry k of text on one thread whose only parameter is the
// address of a 256-byte buffer holding init, and returns the buffer.
func runOne(t *testing.T, text string, init []byte) ([]byte, error) {
	t.Helper()
	m, err := Parse(header + text)
	if err != nil {
		t.Fatal(err)
	}
	if us, err := m.Unsupported("k"); err != nil || len(us) > 0 {
		t.Fatalf("unsupported: %v %v", us, err)
	}
	buf := make([]byte, 256)
	copy(buf, init)
	const base = 0x7000_0000_0000
	env := &sliceEnv{regions: []region{{base, buf}}}
	mem, err := m.NewBlockMem("k", binary.LittleEndian.AppendUint64(nil, base))
	if err != nil {
		t.Fatal(err)
	}
	th, err := m.NewThread("k", env, mem, Dim{Ntid: 1, Nctaid: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = th.Run()
	return buf, err
}

func u32s(vs ...uint32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	return b
}

// TestFixedInstructions: the instructions that once ran silently wrong.
func TestFixedInstructions(t *testing.T) {
	text := `.visible .entry k(.param .u64 p)
{
	.reg .b16 %h<8>;
	.reg .b32 %r<16>;
	.reg .b64 %rd<8>;
	.reg .pred %p<4>;
	ld.param.u64 %rd1, [p];
	// atom.min.s32 and atom.max.s32 compare signed: -5 against 3.
	atom.global.min.s32 %r1, [%rd1], 3;
	atom.global.max.s32 %r2, [%rd1+4], -7;
	// atom.add.f32 adds floats: 1.0 + 2.0.
	atom.global.add.f32 %r3, [%rd1+8], 0f40000000;
	// ld.s8 and ld.s32 sign-extend into wider registers.
	ld.global.s8 %r4, [%rd1+12];
	ld.global.L1::no_allocate.s32 %rd2, [%rd1+16];
	st.global.u32 [%rd1+32], %r4;
	st.global.u64 [%rd1+40], %rd2;
	// cvt.s8.s32 sign-extends its 8-bit result into the register.
	mov.u32 %r5, 0x1ff80;
	cvt.s8.s32 %r6, %r5;
	st.global.u32 [%rd1+48], %r6;
	// min.f16 and neg.f16 are float operations: min(-1, 2) = -1, -(1.5).
	mov.b16 %h1, 0xbc00;
	mov.b16 %h2, 0x4000;
	min.f16 %h3, %h1, %h2;
	neg.f16 %h4, 0x3e00;
	mov.b32 %r7, {%h3, %h4};
	st.global.u32 [%rd1+52], %r7;
	// neg.f64 flips the sign bit of 2.0.
	mov.b64 %rd3, 0d4000000000000000;
	neg.f64 %rd4, %rd3;
	st.global.u64 [%rd1+56], %rd4;
	// setp.lt.f16 and setp.lt.f64 compare floats; NaN is unordered.
	setp.lt.f16 %p1, %h1, %h2;
	mov.b16 %h5, 0x7e00;
	setp.ltu.f16 %p2, %h5, %h1;
	mov.b64 %rd5, 0dbff0000000000000;
	setp.lt.f64 %p3, %rd5, %rd3;
	selp.u32 %r8, 1, 0, %p1;
	selp.u32 %r9, 1, 0, %p2;
	selp.u32 %r10, 1, 0, %p3;
	st.global.v4.u32 [%rd1+64], {%r8, %r9, %r10, %r10};
	// min.f32 of -0 and +0 is -0; of NaN and 1 is 1.
	min.f32 %r11, 0f00000000, 0f80000000;
	min.f32 %r12, 0f7fc00000, 0f3f800000;
	st.global.v2.u32 [%rd1+80], {%r11, %r12};
	ret;
}
`
	init := u32s(0xfffffffb, 3, math.Float32bits(1), 0x80, 0xfffffffe)
	buf, err := runOne(t, text, init)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	for _, c := range []struct {
		what string
		off  int
		got  uint64
		want uint64
	}{
		{"atom.min.s32(-5, 3)", 0, uint64(le.Uint32(buf)), 0xfffffffb},
		{"atom.max.s32(3, -7)", 4, uint64(le.Uint32(buf[4:])), 3},
		{"atom.add.f32(1, 2)", 8, uint64(le.Uint32(buf[8:])), uint64(math.Float32bits(3))},
		{"ld.s8 0x80 into 32 bits", 32, uint64(le.Uint32(buf[32:])), 0xffffff80},
		{"ld.s32 -2 into 64 bits", 40, le.Uint64(buf[40:]), 0xfffffffffffffffe},
		{"cvt.s8.s32 0x1ff80", 48, uint64(le.Uint32(buf[48:])), 0xffffff80},
		{"min.f16(-1, 2), neg.f16(1.5)", 52, uint64(le.Uint32(buf[52:])), 0xbe00bc00},
		{"neg.f64(2)", 56, le.Uint64(buf[56:]), math.Float64bits(-2)},
		{"setp.lt.f16(-1, 2)", 64, uint64(le.Uint32(buf[64:])), 1},
		{"setp.ltu.f16(NaN, -1)", 68, uint64(le.Uint32(buf[68:])), 1},
		{"setp.lt.f64(-1, 2)", 72, uint64(le.Uint32(buf[72:])), 1},
		{"min.f32(+0, -0)", 80, uint64(le.Uint32(buf[80:])), 0x80000000},
		{"min.f32(NaN, 1)", 84, uint64(le.Uint32(buf[84:])), uint64(math.Float32bits(1))},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.what, c.got, c.want)
		}
	}
}

// TestDivisionByZero: integer division by zero, whose result PTX leaves
// unspecified, is an error of the kernel naming its line.
func TestDivisionByZero(t *testing.T) {
	text := ".visible .entry k(.param .u64 p)\n{\n\t.reg .b32 %r<4>;\n\tmov.u32 %r1, 7;\n\tmov.u32 %r2, 0;\n\tdiv.u32 %r3, %r1, %r2;\n\tret;\n}\n"
	_, err := runOne(t, text, nil)
	var ee *ExecError
	if !errors.As(err, &ee) || !errors.Is(err, errDivZero) || ee.Line != 9 {
		t.Fatalf("div.u32 by zero: %v, want an ExecError at line 9", err)
	}
}

// TestLocalMemoryAndCalls: a .local array addressed through cvta.local,
// passed by generic pointer to a function that returns a value.
func TestLocalMemoryAndCalls(t *testing.T) {
	text := `.func (.param .b32 ret) sum3(.param .b64 ptr)
{
	.reg .b32 %r<5>;
	.reg .b64 %rd<2>;
	ld.param.u64 %rd1, [ptr];
	ld.u32 %r1, [%rd1];
	ld.u32 %r2, [%rd1+4];
	ld.u32 %r3, [%rd1+8];
	add.s32 %r4, %r1, %r2;
	add.s32 %r4, %r4, %r3;
	st.param.b32 [ret], %r4;
	ret;
}

.visible .entry k(.param .u64 p)
{
	.local .align 4 .b8 __local_depot0[12];
	.reg .b64 %SP, %SPL;
	.reg .b32 %r<4>;
	.reg .b64 %rd<3>;
	mov.u64 %SPL, __local_depot0;
	cvta.local.u64 %SP, %SPL;
	st.local.u32 [%SPL], 10;
	st.local.u32 [%SPL+4], 20;
	st.u32 [%SP+8], 12;
	{
	.param .b64 param0;
	st.param.b64 [param0], %SP;
	.param .b32 retval0;
	call.uni (retval0), sum3, (param0);
	ld.param.b32 %r1, [retval0];
	}
	ld.param.u64 %rd1, [p];
	st.global.u32 [%rd1], %r1;
	ld.local.u32 %r2, [__local_depot0+4];
	st.global.u32 [%rd1+4], %r2;
	ret;
}
`
	buf, err := runOne(t, text, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := binary.LittleEndian.Uint32(buf); got != 42 {
		t.Errorf("sum3 returned %d, want 42", got)
	}
	if got := binary.LittleEndian.Uint32(buf[4:]); got != 20 {
		t.Errorf("ld.local read %d, want 20", got)
	}
}

// TestDynamicSharedMemory: an .extern .shared array lies after the static
// shared variables, sized by the launch.
func TestDynamicSharedMemory(t *testing.T) {
	text := header + `.extern .shared .align 16 .b8 dyn[];
.visible .entry k(.param .u64 p)
{
	.shared .align 4 .b8 stat[8];
	.reg .b32 %r<3>;
	.reg .b64 %rd<3>;
	mov.u64 %rd1, dyn;
	st.shared.u32 [%rd1+60], 77;
	st.shared.u32 [stat], 5;
	ld.shared.u32 %r1, [dyn+60];
	ret;
}
`
	m, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := m.NewBlockMemDynamic("k", make([]byte, 8), 64)
	if err != nil {
		t.Fatal(err)
	}
	th, err := m.NewThread("k", &sliceEnv{}, mem, Dim{Ntid: 1, Nctaid: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := th.Run(); err != nil {
		t.Fatal(err)
	}
	if got := binary.LittleEndian.Uint32(mem.Shared[mem.dynBase+60:]); got != 77 || mem.dynBase < 8 {
		t.Errorf("dynamic shared word = %d at base %d, want 77 after the static 8 bytes", got, mem.dynBase)
	}
	if got := binary.LittleEndian.Uint32(mem.Shared); got != 5 {
		t.Errorf("static shared word = %d, want 5", got)
	}
	// Without the dynamic bytes the access is out of bounds: an error.
	mem, _ = m.NewBlockMem("k", make([]byte, 8))
	th, _ = m.NewThread("k", &sliceEnv{}, mem, Dim{Ntid: 1, Nctaid: 1})
	if _, err := th.Run(); err == nil || !strings.Contains(err.Error(), "shared") {
		t.Errorf("dynamic shared access without dynamic memory: %v, want an error", err)
	}
}

// TestTrapAndAssert: kernels with trap and __assertfail decode and run;
// reaching them is an error naming the line.
func TestTrapAndAssert(t *testing.T) {
	for _, c := range []struct{ stmt, what string }{
		{"trap;", "trap"},
		{"{\n\t.param .b64 param0;\n\tst.param.b64 [param0], 0;\n\tcall.uni __assertfail, (param0);\n\t}", "__assertfail"},
	} {
		text := ".extern .func __assertfail(.param .b64 m);\n.visible .entry k(.param .u64 p)\n{\n\t.reg .pred %p1;\n\tsetp.eq.u32 %p1, 1, 1;\n\t@%p1 bra L;\n\t" + c.stmt + "\nL:\n\tret;\n}\n"
		if _, err := runOne(t, text, nil); err != nil {
			t.Fatalf("%s not reached: %v", c.what, err)
		}
		text = strings.Replace(text, "setp.eq.u32 %p1, 1, 1", "setp.eq.u32 %p1, 1, 0", 1)
		_, err := runOne(t, text, nil)
		var te *TrapError
		var ee *ExecError
		line := 0
		for i, l := range strings.Split(header+text, "\n") {
			if strings.Contains(l, "trap;") || strings.Contains(l, "call.uni __assertfail") {
				line = i + 1
			}
		}
		if !errors.As(err, &te) || !errors.As(err, &ee) || ee.Line != line || !strings.Contains(err.Error(), c.what) {
			t.Errorf("%s reached: %v, want a TrapError at line %d", c.what, err, line)
		}
	}
}

// TestUnsupportedListsEvery: the refusal names every unsupported
// statement with its line, across the entry and the functions it calls,
// and calls of undefined functions.
func TestUnsupportedListsEvery(t *testing.T) {
	text := header + `.extern .func helper(.param .b64 f);
.func g()
{
	.reg .b32 %r<3>;
	tex.1d.v4.f32.s32 {%r1, %r1, %r1, %r1}, [t, {%r2}];
	ret;
}
.visible .entry k(.param .u64 p)
{
	.reg .b32 %r<3>;
	sad.u32 %r1, %r1, %r1, %r1;
	mov.u32 %r2, 1;
	div.approx.f32 %r1, %r1, %r2;
	call.uni g, ();
	{
	.param .b64 param0;
	call.uni helper, (param0);
	}
	ret;
}
`
	m, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	us, err := m.Unsupported("k")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range us {
		got = append(got, fmt.Sprintf("%s:%d:%s", u.Func, u.Line, u.Inst))
	}
	want := []string{"g:8:tex.1d.v4.f32.s32", "k:14:sad.u32", "k:16:div.approx.f32", "k:20:call.uni"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("unsupported = %v, want %v", got, want)
	}
	if _, err := m.Func("k"); err == nil || !strings.Contains(err.Error(), "2 unsupported statements") {
		t.Errorf("decoding k: %v, want both of its statements named", err)
	}
	if _, err := m.Unsupported("nope"); err == nil {
		t.Error("Unsupported of a missing entry: no error")
	}
}

// coopEnv runs the threads of a test as goroutines, one at a time, and
// lets them wait for their warp.
type coopEnv struct {
	*sliceEnv
	mu *sync.Mutex
}

func (e coopEnv) WaitWarp(what string, ready func() bool) error {
	deadline := time.Now().Add(10 * time.Second)
	for !ready() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out waiting for %s", what)
		}
		e.mu.Unlock()
		runtime.Gosched()
		e.mu.Lock()
	}
	return nil
}

// runWarp runs n threads of entry k with buffer buf.
func runWarp(t *testing.T, text string, n int, buf []byte) []error {
	t.Helper()
	return runThreads(t, text, n, buf, func(c coopEnv) Env { return c })
}

// runThreads runs n threads of entry k with buffer buf, one goroutine
// each, one at a time under the lock of the environment that env makes
// from the cooperative one.
func runThreads(t *testing.T, text string, n int, buf []byte, env func(coopEnv) Env) []error {
	t.Helper()
	m, err := Parse(header + text)
	if err != nil {
		t.Fatal(err)
	}
	const base = 0x7000_0000_0000
	var mu sync.Mutex
	e := env(coopEnv{&sliceEnv{regions: []region{{base, buf}}}, &mu})
	mem, err := m.NewBlockMem("k", binary.LittleEndian.AppendUint64(nil, base))
	if err != nil {
		t.Fatal(err)
	}
	errs := make([]error, n)
	ths := make([]*Thread, n)
	for i := range ths {
		th, err := m.NewThread("k", e, mem, Dim{Tid: uint32(i), Ntid: uint32(n), Nctaid: 1})
		if err != nil {
			t.Fatal(err)
		}
		ths[i] = th
	}
	var wg sync.WaitGroup
	for i, th := range ths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			_, errs[i] = th.Run()
		}()
	}
	wg.Wait()
	return errs
}

// TestWarpCollectives: a shfl.down reduction, shfl.idx broadcast, bfly
// exchange and the votes over a full warp, and a 16-lane mask.
func TestWarpCollectives(t *testing.T) {
	text := `.visible .entry k(.param .u64 p)
{
	.reg .b32 %r<16>;
	.reg .b64 %rd<4>;
	.reg .pred %p<5>;
	ld.param.u64 %rd1, [p];
	mov.u32 %r1, %laneid;
	add.u32 %r2, %r1, 1;
	shfl.sync.down.b32 %r3|%p1, %r2, 16, 31, -1;
	@%p1 add.u32 %r2, %r2, %r3;
	shfl.sync.down.b32 %r3, %r2, 8, 31, -1;
	add.u32 %r2, %r2, %r3;
	shfl.sync.down.b32 %r3, %r2, 4, 31, -1;
	add.u32 %r2, %r2, %r3;
	shfl.sync.down.b32 %r3, %r2, 2, 31, -1;
	add.u32 %r2, %r2, %r3;
	shfl.sync.down.b32 %r3, %r2, 1, 31, -1;
	add.u32 %r2, %r2, %r3;
	shfl.sync.idx.b32 %r4, %r2, 0, 31, -1;
	shfl.sync.bfly.b32 %r5, %r1, 1, 31, -1;
	setp.lt.u32 %p2, %r1, 5;
	vote.sync.ballot.b32 %r6, %p2, -1;
	vote.sync.any.pred %p3, %p2, -1;
	selp.u32 %r7, 1, 0, %p3;
	vote.sync.all.pred %p3, %p2, -1;
	selp.u32 %r8, 1, 0, %p3;
	setp.ge.u32 %p4, %r1, 16;
	mov.u32 %r9, 0;
	@!%p4 bra SKIP;
	vote.sync.all.pred %p3, !%p2, 0xffff0000;
	selp.u32 %r9, 1, 0, %p3;
SKIP:
	activemask.b32 %r10;
	mul.wide.u32 %rd2, %r1, 32;
	add.s64 %rd3, %rd1, %rd2;
	st.global.v4.u32 [%rd3], {%r4, %r5, %r6, %r7};
	st.global.v4.u32 [%rd3+16], {%r8, %r9, %r10, %r2};
	ret;
}
`
	buf := make([]byte, 32*32)
	for i, err := range runWarp(t, text, 32, buf) {
		if err != nil {
			t.Fatalf("lane %d: %v", i, err)
		}
	}
	for l := 0; l < 32; l++ {
		w := func(i int) uint32 { return binary.LittleEndian.Uint32(buf[32*l+4*i:]) }
		if w(0) != 528 {
			t.Errorf("lane %d: reduction broadcast %d, want 528", l, w(0))
		}
		if w(1) != uint32(l^1) {
			t.Errorf("lane %d: bfly read lane %d, want %d", l, w(1), l^1)
		}
		if w(2) != 0x1f || w(3) != 1 || w(4) != 0 {
			t.Errorf("lane %d: ballot %#x any %d all %d, want 0x1f 1 0", l, w(2), w(3), w(4))
		}
		if wantUpper := uint32(0); l >= 16 {
			wantUpper = 1
			if w(5) != wantUpper {
				t.Errorf("lane %d: vote.all over the upper half = %d, want 1", l, w(5))
			}
		}
		if w(6)>>l&1 != 1 {
			t.Errorf("lane %d: activemask %#x lacks the lane", l, w(6))
		}
	}
}

// TestWarpCollectiveStuck: a lane of the member mask that exits instead
// of meeting is an error, not a hang.
func TestWarpCollectiveStuck(t *testing.T) {
	text := `.visible .entry k(.param .u64 p)
{
	.reg .b32 %r<4>;
	.reg .pred %p<2>;
	mov.u32 %r1, %laneid;
	setp.eq.u32 %p1, %r1, 3;
	@%p1 bra DONE;
	shfl.sync.idx.b32 %r2, %r1, 0, 31, 0xf;
DONE:
	ret;
}
`
	errs := runWarp(t, text, 4, make([]byte, 64))
	for l := 0; l < 3; l++ {
		if errs[l] == nil || !strings.Contains(errs[l].Error(), "lane 3 exited") {
			t.Errorf("lane %d: %v, want an error naming lane 3", l, errs[l])
		}
	}
}

// TestBudgetEndsLoopsWithoutMemory: a loop that never touches memory fails
// once it has run Budget instructions, naming its branch; a loop that ends
// within the budget, or touches memory every round, runs to its end.
func TestBudgetEndsLoopsWithoutMemory(t *testing.T) {
	const budget = 1000
	run := func(count uint32, load bool) error {
		t.Helper()
		body := "\tadd.u32 %r1, %r1, 1;\n"
		if load {
			body += "\tld.global.u32 %r3, [%rd1];\n"
		}
		text := header + `.visible .entry k(.param .u64 p)
{
	.reg .b32 %r<4>;
	.reg .b64 %rd<2>;
	.reg .pred %p<2>;
	ld.param.u64 %rd1, [p];
	mov.u32 %r1, 0;
L:
` + body + fmt.Sprintf("\tsetp.ne.u32 %%p1, %%r1, %d;\n", count) + `	@%p1 bra L;
	st.global.u32 [%rd1], %r1;
	ret;
}
`
		m, err := Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 16)
		const base = 0x7000_0000_0000
		mem, err := m.NewBlockMem("k", binary.LittleEndian.AppendUint64(nil, base))
		if err != nil {
			t.Fatal(err)
		}
		th, err := m.NewThread("k", &sliceEnv{regions: []region{{base, buf}}}, mem, Dim{Ntid: 1, Nctaid: 1})
		if err != nil {
			t.Fatal(err)
		}
		th.Budget = budget
		_, err = th.Run()
		if err == nil && binary.LittleEndian.Uint32(buf) != count {
			t.Errorf("loop of %d rounds stored %d", count, binary.LittleEndian.Uint32(buf))
		}
		return err
	}
	// Each round runs three instructions: 300 rounds fit in 1,000.
	if err := run(300, false); err != nil {
		t.Errorf("a loop of 300 rounds: %v", err)
	}
	err := run(1_000_000, false)
	var ee *ExecError
	if !errors.As(err, &ee) || !errors.Is(err, errBudget) || !strings.Contains(ee.Inst, "bra") {
		t.Errorf("a loop of a million rounds without memory: %v, want the budget's error at its branch", err)
	}
	if err := run(5000, true); err != nil {
		t.Errorf("a loop of 5,000 rounds that loads every round: %v", err)
	}
}

// TestTypeInfo: every type's size and kind, as the PTX ISA defines them.
func TestTypeInfo(t *testing.T) {
	for name, ty := range typeNames {
		bits := 0
		fmt.Sscanf(strings.TrimLeft(name, ".bfusx"), "%d", &bits)
		size := max(bits/8, 1)
		if strings.HasSuffix(name, "x2") {
			size = 2 * bits / 8 // a pair: f16x2, bf16x2, u16x2, s16x2, f32x2
		}
		if ty.size() != size {
			t.Errorf("%s: size %d, want %d", name, ty.size(), size)
		}
		if want := name[1] == 's'; ty.signed() != want {
			t.Errorf("%s: signed %v, want %v", name, ty.signed(), want)
		}
		if want := name[1] == 'f' || strings.HasPrefix(name, ".bf"); ty.float() != want {
			t.Errorf("%s: float %v, want %v", name, ty.float(), want)
		}
	}
	if tPred.size() != 1 || tNone.size() != 1 || tPred.float() || tPred.signed() {
		t.Errorf("pred: size %d float %v signed %v", tPred.size(), tPred.float(), tPred.signed())
	}
}

// TestTruncSext: trunc and sext of every type keep and extend the bits of
// its size.
func TestTruncSext(t *testing.T) {
	vals := []uint64{0, 1, 0x7f, 0x80, 0xff, 0x7fff, 0x8000, 0xffff, 0x7fffffff, 0x80000000,
		0xffffffff, 0x1_0000_0000, 0x8000_0000_0000_0000, ^uint64(0), 0x0123_4567_89ab_cdef}
	for _, ty := range typeNames {
		for _, v := range vals {
			var wantT uint64
			var wantS int64
			switch ty.size() {
			case 1:
				wantT, wantS = uint64(uint8(v)), int64(int8(v))
			case 2:
				wantT, wantS = uint64(uint16(v)), int64(int16(v))
			case 4:
				wantT, wantS = uint64(uint32(v)), int64(int32(v))
			default:
				wantT, wantS = v, int64(v)
			}
			if got := trunc(v, ty); got != wantT {
				t.Errorf("trunc(%#x, size %d) = %#x, want %#x", v, ty.size(), got, wantT)
			}
			if got := sext(v, ty); got != wantS {
				t.Errorf("sext(%#x, size %d) = %#x, want %#x", v, ty.size(), got, wantS)
			}
		}
	}
}
