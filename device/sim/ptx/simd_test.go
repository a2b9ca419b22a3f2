package ptx

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"
)

// TestInlineAssemblyForms: what nvcc's headers write in inline assembly
// runs: registers declared without a %, a brace operand with an
// immediate, the hints (prefetch, prefetchu, griddepcontrol), and an
// .f32x2 add, whose lanes are the scalar add.rn.f32 of the semantics
// oracle.
func TestInlineAssemblyForms(t *testing.T) {
	text := `.visible .entry k(.param .u64 p)
{
	.reg .b16 %rs<4>;
	.reg .b32 %r<8>;
	.reg .f32 %f<8>;
	.reg .b64 %rd<8>;
	ld.param.u64 %rd1, [p];
	prefetchu.L1 [%rd1];
	prefetch.global.L2 [%rd1+8];
	griddepcontrol.wait;
	ld.global.u16 %rs1, [%rd1];
	ld.global.u16 %rs2, [%rd1+2];
	{ .reg .pred __$temp3;
	setp.lt.f16 __$temp3, %rs1, %rs2;
	selp.u16 %rs3, 1, 0, __$temp3;}
	cvt.u32.u16 %r1, %rs3;
	st.global.u32 [%rd1+16], %r1;
	{.reg .b32 c;
	mov.b32 c, 0x3f803f80U;
	ld.global.u32 %r2, [%rd1+4];
	fma.rn.bf16x2 %r3, %r2, c, %r2;}
	st.global.u32 [%rd1+20], %r3;
	{ mov.b32 %f1, {0,%rs1};}
	st.global.f32 [%rd1+24], %f1;
	ld.global.v2.f32 {%f2, %f3}, [%rd1+32];
	ld.global.v2.f32 {%f4, %f5}, [%rd1+40];
	mov.b64 %rd2, {%f2, %f3};
	mov.b64 %rd3, {%f4, %f5};
	add.rn.f32x2 %rd4, %rd2, %rd3;
	st.global.u64 [%rd1+48], %rd4;
	add.rn.f32 %f6, %f2, %f4;
	add.rn.f32 %f7, %f3, %f5;
	st.global.v2.f32 [%rd1+56], {%f6, %f7};
	griddepcontrol.launch_dependents;
	ret;
}
`
	init := make([]byte, 64)
	binary.LittleEndian.PutUint16(init[0:], 0x3c00) // f16 1.0
	binary.LittleEndian.PutUint16(init[2:], 0x4000) // f16 2.0
	binary.LittleEndian.PutUint32(init[4:], 0x40003f80)
	for i, f := range []float32{1.5, 1e38, 0x1p-149, -2.25} {
		binary.LittleEndian.PutUint32(init[32+4*i:], math.Float32bits(f))
	}
	buf, err := runOne(t, text, init)
	if err != nil {
		t.Fatal(err)
	}
	w := func(off int) uint32 { return binary.LittleEndian.Uint32(buf[off:]) }
	if w(16) != 1 {
		t.Errorf("setp through __$temp3: %d, want 1 (1 < 2)", w(16))
	}
	if w(20) != 0x40804000 { // the lanes (2.0, 1.0) times (1.0, 1.0) plus themselves: (4.0, 2.0)
		t.Errorf("fma.rn.bf16x2 through c: %#x, want 0x40804000", w(20))
	}
	if w(24) != 0x3c000000 {
		t.Errorf("mov.b32 {0, %%rs1}: %#x, want 0x3c000000", w(24))
	}
	if got, want := binary.LittleEndian.Uint64(buf[48:]), binary.LittleEndian.Uint64(buf[56:]); got != want {
		t.Errorf("add.rn.f32x2 = %#x, the scalar adds %#x", got, want)
	}
}

// syncEnv records the barrier calls of bar.warp.sync.
type syncEnv struct {
	coopEnv
	arrived map[int]int // barrier id -> arrivals
	left    map[int]int // barrier id -> releases
	seen    []Arrival   // the arrivals a release named
}

func (e *syncEnv) Arrive(id int, n uint64, released *uint64) { e.arrived[id]++ }

func (e *syncEnv) Leave(id int, arrivals []Arrival, released uint64) {
	e.left[id]++
	e.seen = arrivals
}

// TestWarpSync: bar.warp.sync makes the lanes of its mask meet: each
// arrives and is released at the barrier of its warp (NumBarriers+w)
// with every member's arrival, and a lane reads what another lane stored
// to shared memory before the sync. A member that exits is an error.
func TestWarpSync(t *testing.T) {
	text := `.visible .entry k(.param .u64 p)
{
	.reg .b32 %r<8>;
	.reg .b64 %rd<6>;
	.shared .align 4 .b8 s[256];
	ld.param.u64 %rd1, [p];
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd2, %r1, 4;
	mov.u64 %rd3, s;
	add.u64 %rd4, %rd3, %rd2;
	add.u32 %r5, %r1, 100;
	st.shared.u32 [%rd4], %r5;
	bar.warp.sync -1;
	add.u32 %r6, %r1, 1;
	and.b32 %r6, %r6, 31;
	and.b32 %r7, %r1, 32;
	add.u32 %r6, %r6, %r7;
	mul.wide.u32 %rd5, %r6, 4;
	add.u64 %rd5, %rd5, %rd3;
	ld.shared.u32 %r7, [%rd5];
	add.u64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r7;
	ret;
}
`
	buf := make([]byte, 256)
	var env *syncEnv
	errs := runThreads(t, text, 64, buf, func(c coopEnv) Env {
		env = &syncEnv{coopEnv: c, arrived: map[int]int{}, left: map[int]int{}}
		return env
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("thread %d: %v", i, err)
		}
	}
	for i := range 64 {
		want := uint32((i+1)%32 + i&32 + 100)
		if got := binary.LittleEndian.Uint32(buf[4*i:]); got != want {
			t.Errorf("thread %d read %d, want %d", i, got, want)
		}
	}
	if env.arrived[NumBarriers] != 32 || env.arrived[NumBarriers+1] != 32 || env.left[NumBarriers] != 32 || env.left[NumBarriers+1] != 32 {
		t.Errorf("arrivals %v, releases %v: want 32 of each at barriers %d and %d", env.arrived, env.left, NumBarriers, NumBarriers+1)
	}
	if len(env.seen) != 32 {
		t.Errorf("a release named %d arrivals, want the 32 of its warp", len(env.seen))
	}

	stuck := `.visible .entry k(.param .u64 p)
{
	.reg .b32 %r<4>;
	.reg .pred %p<2>;
	mov.u32 %r1, %laneid;
	setp.eq.u32 %p1, %r1, 2;
	@%p1 bra DONE;
	bar.warp.sync 0xf;
DONE:
	ret;
}
`
	errs = runWarp(t, stuck, 4, make([]byte, 64))
	for _, l := range []int{0, 1, 3} {
		if errs[l] == nil || !strings.Contains(errs[l].Error(), "lane 2 exited") {
			t.Errorf("lane %d: %v, want an error naming lane 2", l, errs[l])
		}
	}
}

// TestClusterOfOneBlock: a launch is a cluster of one block: the cluster
// registers say so, mapa to rank 0 keeps a shared address, which
// ld.shared::cluster reads; mapa to another rank is an error, and
// barrier.cluster is refused by name.
func TestClusterOfOneBlock(t *testing.T) {
	text := `.visible .entry k(.param .u64 p)
{
	.reg .pred %p<2>;
	.reg .b32 %r<16>;
	.reg .b64 %rd<8>;
	.shared .align 4 .b8 s[16];
	ld.param.u64 %rd1, [p];
	mov.u32 %r1, %clusterid.x;
	mov.u32 %r2, %nclusterid.x;
	mov.u32 %r3, %cluster_ctarank;
	mov.u32 %r4, %cluster_nctarank;
	mov.u32 %r5, %cluster_ctaid.x;
	mov.u32 %r6, %cluster_nctaid.y;
	mov.pred %p1, %is_explicit_cluster;
	selp.u32 %r7, 1, 0, %p1;
	mov.u32 %r8, 77;
	st.shared.u32 [s+4], %r8;
	mov.u64 %rd2, s;
	mapa.shared::cluster.u64 %rd3, %rd2, %r3;
	ld.shared::cluster.u32 %r9, [%rd3+4];
	st.global.v4.u32 [%rd1], {%r1, %r2, %r3, %r4};
	st.global.v4.u32 [%rd1+16], {%r5, %r6, %r7, %r9};
	ret;
}
`
	m, err := Parse(header + text)
	if err != nil {
		t.Fatal(err)
	}
	const base = 0x7000_0000_0000
	buf := make([]byte, 64)
	env := &sliceEnv{regions: []region{{base, buf}}}
	mem, err := m.NewBlockMem("k", binary.LittleEndian.AppendUint64(nil, base))
	if err != nil {
		t.Fatal(err)
	}
	th, err := m.NewThread("k", env, mem, Dim{Ntid: 1, Ctaid: 2, Nctaid: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := th.Run(); err != nil {
		t.Fatal(err)
	}
	want := []uint32{2, 3, 0, 1, 0, 1, 0, 77}
	for i, w := range want {
		if got := binary.LittleEndian.Uint32(buf[4*i:]); got != w {
			t.Errorf("word %d = %d, want %d", i, got, w)
		}
	}
	other := `.visible .entry k(.param .u64 p)
{
	.reg .b64 %rd<4>;
	.shared .align 4 .b8 s[16];
	mov.u64 %rd2, s;
	mapa.u64 %rd3, %rd2, 1;
	ret;
}
`
	if _, err := runOne(t, other, nil); err == nil || !strings.Contains(err.Error(), "block 1 of the cluster") {
		t.Errorf("mapa to rank 1: %v, want an error naming the rank", err)
	}
	for _, bad := range []string{"barrier.cluster.arrive.acquire;", "barrier.cluster.wait.release;", "barrier.cluster.sync;", "barrier.cluster.wait 1;"} {
		m, err = Parse(header + ".visible .entry k(.param .u64 p)\n{\n\t" + bad + "\n\tret;\n}\n")
		if err != nil {
			t.Fatal(err)
		}
		if us, _ := m.Unsupported("k"); len(us) != 1 {
			t.Errorf("%s: %v, want it refused", bad, us)
		}
	}
}

// TestClusterBarrier: barrier.cluster.arrive and .wait in a cluster of
// one block: a thread reads another warp's shared store after the wait;
// each arrival and each release go through the BarrierEnv under
// ClusterBarrierID; a wait without an arrival, and a second arrival
// before the wait, are errors; a thread that exits does not hold the
// others.
func TestClusterBarrier(t *testing.T) {
	text := `.visible .entry k(.param .u64 p)
{
	.reg .pred %p<2>;
	.reg .b32 %r<8>;
	.reg .b64 %rd<8>;
	.shared .align 4 .b8 s[512];
	ld.param.u64 %rd1, [p];
	mov.u32 %r1, %tid.x;
	setp.eq.u32 %p1, %r1, 95;
	@%p1 bra DONE;
	mul.wide.u32 %rd2, %r1, 4;
	mov.u64 %rd3, s;
	add.u64 %rd4, %rd3, %rd2;
	add.u32 %r5, %r1, 100;
	st.shared.u32 [%rd4], %r5;
	barrier.cluster.arrive.release.aligned;
	barrier.cluster.wait.acquire.aligned;
	add.u32 %r6, %r1, 32;
	rem.u32 %r6, %r6, 95;
	mul.wide.u32 %rd5, %r6, 4;
	add.u64 %rd5, %rd5, %rd3;
	ld.shared.u32 %r7, [%rd5];
	add.u64 %rd6, %rd1, %rd2;
	st.global.u32 [%rd6], %r7;
	barrier.cluster.arrive;
	barrier.cluster.wait;
DONE:
	ret;
}
`
	buf := make([]byte, 512)
	var env *syncEnv
	errs := runThreads(t, text, 96, buf, func(c coopEnv) Env {
		env = &syncEnv{coopEnv: c, arrived: map[int]int{}, left: map[int]int{}}
		return env
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("thread %d: %v", i, err)
		}
	}
	for i := range 95 {
		want := uint32((i+32)%95 + 100)
		if got := binary.LittleEndian.Uint32(buf[4*i:]); got != want {
			t.Errorf("thread %d read %d, want %d", i, got, want)
		}
	}
	if env.arrived[ClusterBarrierID] != 2*95 || env.left[ClusterBarrierID] != 2*95 || len(env.seen) != 94 {
		t.Errorf("arrivals %v, releases %v, a release naming %d others: want 190, 190 and 94", env.arrived, env.left, len(env.seen))
	}

	for _, c := range []struct{ body, want string }{
		{"barrier.cluster.wait;", "without a barrier.cluster.arrive"},
		{"barrier.cluster.arrive;\n\tbarrier.cluster.arrive;", "again before barrier.cluster.wait"},
	} {
		errs := runWarp(t, ".visible .entry k(.param .u64 p)\n{\n\t"+c.body+"\n\tret;\n}\n", 1, make([]byte, 8))
		if errs[0] == nil || !strings.Contains(errs[0].Error(), c.want) {
			t.Errorf("%q: %v, want an error saying %q", c.body, errs[0], c.want)
		}
	}
}
