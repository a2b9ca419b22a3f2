package ptx

import (
	"encoding/binary"
	"math"
	"testing"
)

// memEnv is global memory as a map of bytes, for tests.
type memEnv struct {
	mem    map[uint64]byte
	fences int
}

func (e *memEnv) Load(addr uint64, dst []byte, sem Sem, sc Scope) error {
	for i := range dst {
		dst[i] = e.mem[addr+uint64(i)]
	}
	return nil
}

func (e *memEnv) Store(addr uint64, src []byte, sem Sem, sc Scope) error {
	for i, b := range src {
		e.mem[addr+uint64(i)] = b
	}
	return nil
}

func (e *memEnv) Atomic(addr uint64, size int, op AtomOp, sem Sem, sc Scope, a, b uint64) (uint64, error) {
	buf := make([]byte, 8)
	for i := 0; i < size; i++ {
		buf[i] = e.mem[addr+uint64(i)]
	}
	old := binary.LittleEndian.Uint64(buf)
	binary.LittleEndian.PutUint64(buf, AtomicResult(op, size, old, a, b))
	for i := 0; i < size; i++ {
		e.mem[addr+uint64(i)] = buf[i]
	}
	return old, nil
}

func (e *memEnv) Fence(Sem, Scope)                    { e.fences++ }
func (e *memEnv) Shared(uint64, int, bool, Sem, bool) {}
func (e *memEnv) Clock() uint64                       { return 1000 }

const testKernel = `
.version 9.0
.target sm_80
.address_size 64

.func add_one(
	.param .b64 p
)
{
	.reg .b32 %r<3>;
	.reg .b64 %rd<3>;
	ld.param.u64 %rd1, [p];
	ld.u64 %rd2, [%rd1];
	ld.u32 %r1, [%rd1+8];
	add.s32 %r2, %r1, 1;
	st.u32 [%rd2+512], %r2;
	ret;
}

.visible .entry k(
	.param .align 8 .b8 k_param_0[16]
)
{
	.reg .pred %p<3>;
	.reg .b16 %rs<2>;
	.reg .b32 %r<12>;
	.reg .f32 %f<4>;
	.reg .b64 %rd<6>;

	ld.param.u64 %rd1, [k_param_0];
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	ld.global.f32 %f1, [%rd3];
	add.rn.f32 %f2, %f1, 0f3F800000;
	div.rn.f32 %f3, %f2, 0f40400000;
	cvt.rn.bf16.f32 %rs1, %f3;
	cvt.u32.u16 %r2, %rs1;
	st.global.u32 [%rd3+64], %r2;
	setp.eq.s32 %p1, %r1, 1;
	{
	.reg .pred %p1;
	setp.ne.u32 %p1, %r1, 0;
	bar.red.or.pred %p2, 0, %p1;
	}
	selp.u32 %r3, 1, 0, %p2;
	@%p1 bra $L__skip;
	atom.acquire.sys.global.cas.b32 %r4, [%rd1+128], 0, 7;
$L__skip:
	membar.gl;
	mov.b64 %rd4, k_param_0;
	cvta.param.u64 %rd5, %rd4;
	{ // callseq 0
	.param .b64 param0;
	st.param.b64 [param0+0], %rd5;
	call.uni
	add_one,
	(
	param0
	);
	}
	st.global.u32 [%rd3+256], %r3;
	ret;
}
`

// TestInterpreter runs a small kernel on two threads: f32 arithmetic and a
// bf16 conversion, a scoped register shadowing an outer one, bar.red.or,
// a guarded branch, an atomic, a call with a parameter passed by
// reference (a generic address of the kernel's parameter).
func TestInterpreter(t *testing.T) {
	m, err := Parse(testKernel)
	if err != nil {
		t.Fatal(err)
	}
	env := &memEnv{mem: map[uint64]byte{}}
	const base = 0x7f00_0000_0000
	for i, f := range []float32{2, 5} {
		put32(env.mem, base+uint64(4*i), math.Float32bits(f))
	}
	params := make([]byte, 16)
	binary.LittleEndian.PutUint64(params, base)
	binary.LittleEndian.PutUint32(params[8:], 41)
	mem, err := m.NewBlockMem("k", params)
	if err != nil {
		t.Fatal(err)
	}
	var ths []*Thread
	for i := 0; i < 2; i++ {
		th, err := m.NewThread("k", env, mem, Dim{Tid: uint32(i), Ntid: 2, Nctaid: 1})
		if err != nil {
			t.Fatal(err)
		}
		ths = append(ths, th)
	}
	for _, th := range ths {
		stop, err := th.Run()
		if err != nil || stop != AtBarrier {
			t.Fatalf("first run: %v, %v; want a barrier", stop, err)
		}
	}
	for _, th := range ths {
		if err := th.Release(); err != nil {
			t.Fatal(err)
		}
		if stop, err := th.Run(); err != nil || stop != Exited {
			t.Fatalf("second run: %v, %v; want an exit", stop, err)
		}
	}
	// (2+1)/3 = 1 -> bf16 0x3f80; (5+1)/3 = 2 -> 0x4000.
	for i, want := range []uint32{0x3f80, 0x4000} {
		if got := get32(env.mem, base+64+uint64(4*i)); got != want {
			t.Errorf("thread %d stored %#x, want %#x", i, got, want)
		}
		if got := get32(env.mem, base+256+uint64(4*i)); got != 1 {
			t.Errorf("thread %d: bar.red.or gave %d, want 1", i, got)
		}
	}
	// Only thread 0 (outer %p1 false) swapped.
	if got := get32(env.mem, base+128); got != 7 {
		t.Errorf("cas left %d, want 7", got)
	}
	if env.fences != 2 {
		t.Errorf("%d fences, want 2", env.fences)
	}
	// The called function read the launch's parameters through their
	// generic address.
	if got := get32(env.mem, base+512); got != 42 {
		t.Errorf("called function stored %d, want 42", got)
	}
}

type byteMap = map[uint64]byte

func put32(m byteMap, addr uint64, v uint32) {
	for i := 0; i < 4; i++ {
		m[addr+uint64(i)] = byte(v >> (8 * i))
	}
}

func get32(m byteMap, addr uint64) uint32 {
	var v uint32
	for i := 0; i < 4; i++ {
		v |= uint32(m[addr+uint64(i)]) << (8 * i)
	}
	return v
}

// TestExecutedCounts: a thread counts every instruction it executes, a
// guarded one whose guard fails included: a loop of three instructions
// gone round n times between two before it and the ret.
func TestExecutedCounts(t *testing.T) {
	const src = `
.version 9.0
.target sm_80
.address_size 64

.visible .entry cnt(
	.param .u32 n
)
{
	.reg .pred %p<2>;
	.reg .b32 %r<3>;
	ld.param.u32 %r1, [n];
	mov.u32 %r2, 0;
$L__loop:
	add.u32 %r2, %r2, 1;
	setp.lt.u32 %p1, %r2, %r1;
	@%p1 bra $L__loop;
	ret;
}
`
	m, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []uint32{1, 5, 40} {
		params := binary.LittleEndian.AppendUint32(nil, n)
		mem, err := m.NewBlockMem("cnt", params)
		if err != nil {
			t.Fatal(err)
		}
		th, err := m.NewThread("cnt", &memEnv{mem: map[uint64]byte{}}, mem, Dim{Ntid: 1, Nctaid: 1})
		if err != nil {
			t.Fatal(err)
		}
		if stop, err := th.Run(); err != nil || stop != Exited {
			t.Fatalf("n=%d: %v, %v; want an exit", n, stop, err)
		}
		if got, want := th.Executed(), uint64(3+3*n); got != want {
			t.Errorf("n=%d: %d instructions executed, want %d", n, got, want)
		}
	}
}
