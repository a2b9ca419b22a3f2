package ptx

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// laneEnv is one lane's Env over a shared sliceEnv: it logs the lane's
// global accesses in the order it makes them, and refuses a plain access
// in lockstep (PlainNow) at the addresses refuse names.
type laneEnv struct {
	*sliceEnv
	log      *[]string
	refuse   func(addr uint64) bool
	asked    int      // PlainNow calls
	noShared bool     // SharedNow refuses
	shared   []string // the lane's shared accesses, as Shared was told of them
}

func (e *laneEnv) Load(addr uint64, dst []byte, sem Sem, sc Scope) error {
	*e.log = append(*e.log, fmt.Sprintf("ld %s %#x %d", sem, addr, len(dst)))
	return e.sliceEnv.Load(addr, dst, sem, sc)
}

func (e *laneEnv) Store(addr uint64, src []byte, sem Sem, sc Scope) error {
	*e.log = append(*e.log, fmt.Sprintf("st %s %#x %x", sem, addr, src))
	return e.sliceEnv.Store(addr, src, sem, sc)
}

func (e *laneEnv) SharedNow() bool { return !e.noShared }

func (e *laneEnv) Shared(off uint64, n int, write bool, sem Sem, atomic bool) {
	e.shared = append(e.shared, fmt.Sprintf("%v %s %d/%d", write, sem, off, n))
}

func (e *laneEnv) PlainNow(addr uint64, n int, write bool) bool {
	e.asked++
	_, err := e.at(addr, n)
	return err == nil && (e.refuse == nil || !e.refuse(addr))
}

// lockstepKernel: every thread sums in[tid*4 .. tid*4+3] (a loop of
// four rounds, the same for every lane) through local memory, scales it
// with non-fast arithmetic, stores it to out[tid]; then the lanes part at
// a branch on their index, each side storing a word of its own, and the
// even lanes make an acquire load.
const lockstepKernel = `
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 in, .param .u64 out)
{
	.local .align 4 .b8 acc[4];
	.reg .b32 %r<12>;
	.reg .b64 %rd<12>;
	.reg .pred %p<4>;
	.reg .f32 %f<4>;
	ld.param.u64 %rd1, [in];
	ld.param.u64 %rd2, [out];
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd3, %r1, 16;
	add.s64 %rd4, %rd1, %rd3;
	mov.u32 %r2, 0;
	st.local.u32 [acc], %r2;
	mov.u32 %r3, 0;
$L_loop:
	ld.global.u32 %r4, [%rd4];
	ld.local.u32 %r5, [acc];
	add.s32 %r5, %r5, %r4;
	st.local.u32 [acc], %r5;
	add.s64 %rd4, %rd4, 4;
	add.s32 %r3, %r3, 1;
	setp.lt.u32 %p1, %r3, 4;
	@%p1 bra $L_loop;
	ld.local.u32 %r6, [acc];
	mad.lo.s32 %r7, %r6, 3, %r1;
	cvt.rn.f32.u32 %f1, %r7;
	mul.f32 %f2, %f1, 0f3F000000;
	cvt.rzi.u32.f32 %r8, %f2;
	mul.wide.u32 %rd5, %r1, 4;
	add.s64 %rd6, %rd2, %rd5;
	st.global.u32 [%rd6], %r8;
	and.b32 %r9, %r1, 1;
	setp.eq.u32 %p2, %r9, 0;
	@%p2 bra $L_even;
	st.global.u32 [%rd6+128], %r1;
	ret;
$L_even:
	ld.acquire.gpu.global.u32 %r10, [%rd6];
	st.global.u32 [%rd6+256], %r10;
	ret;
}
`

const (
	lockIn  = 0x7000_0000_0000
	lockOut = 0x7100_0000_0000
)

// startLanes parses src and starts a block of n threads of its entry k
// with the parameter bytes params, each over mem through a laneEnv of its
// own that refuses what refuse names; it returns the threads, their envs
// and their logs.
func startLanes(t *testing.T, src string, n int, mem *sliceEnv, params []byte, refuse func(uint64) bool) ([]*Thread, []*laneEnv, [][]string) {
	t.Helper()
	m, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	bm, err := m.NewBlockMem("k", params)
	if err != nil {
		t.Fatal(err)
	}
	logs := make([][]string, n)
	envs := make([]*laneEnv, n)
	ths := make([]*Thread, n)
	for i := range ths {
		envs[i] = &laneEnv{sliceEnv: mem, log: &logs[i], refuse: refuse}
		if ths[i], err = m.NewThread("k", envs[i], bm, Dim{Tid: uint32(i), Ntid: uint32(n), Nctaid: 1}); err != nil {
			t.Fatal(err)
		}
	}
	return ths, envs, logs
}

// lockstepRun starts a block of n threads of lockstepKernel over fresh
// memory; it returns the threads, their envs and logs, and the memory.
func lockstepRun(t *testing.T, n int, refuse func(uint64) bool) ([]*Thread, []*laneEnv, [][]string, []byte) {
	t.Helper()
	in := make([]byte, 16*n)
	for i := range 4 * n {
		binary.LittleEndian.PutUint32(in[4*i:], uint32(7*i+1))
	}
	out := make([]byte, 4*n+256+4*n)
	mem := &sliceEnv{regions: []region{{lockIn, in}, {lockOut, out}}}
	params := binary.LittleEndian.AppendUint64(nil, lockIn)
	params = binary.LittleEndian.AppendUint64(params, lockOut)
	ths, envs, logs := startLanes(t, lockstepKernel, n, mem, params, refuse)
	return ths, envs, logs, out
}

// finish runs every thread to its exit, one after the other.
func finish(t *testing.T, ths []*Thread) {
	t.Helper()
	for i, th := range ths {
		if stop, err := th.Run(); err != nil || stop != Exited {
			t.Fatalf("thread %d: %v, %v", i, stop, err)
		}
	}
}

// TestLockstepMatchesLaneByLane runs a warp in lockstep, then each lane
// on, and compares every lane's accesses (in its order), instruction
// count, loops and the memory it leaves with the same block run thread
// by thread.
func TestLockstepMatchesLaneByLane(t *testing.T) {
	for _, n := range []int{32, 7} {
		t.Run(fmt.Sprint(n, " lanes"), func(t *testing.T) {
			alone, _, aloneLogs, aloneOut := lockstepRun(t, n, nil)
			finish(t, alone)

			ths, envs, logs, out := lockstepRun(t, n, nil)
			done := Lockstep(ths)
			// The lanes part at the branch on their index: every lane
			// executed the same instructions before it.
			per := ths[0].Executed()
			if per == 0 || done != per*uint64(n) {
				t.Fatalf("Lockstep executed %d lane-instructions, lane 0 %d: want %d lanes' worth", done, per, n)
			}
			for i, th := range ths {
				if th.Executed() != per || th.Loops() != 3 {
					t.Errorf("lane %d: %d instructions, %d loops after lockstep; want %d, 3", i, th.Executed(), th.Loops(), per)
				}
				if want := slices.Index(aloneLogs[i], logs[i][len(logs[i])-1]); want != len(logs[i])-1 {
					t.Errorf("lane %d: lockstep made %d accesses, not the first ones of its run alone", i, len(logs[i]))
				}
				if envs[i].asked != 5 {
					t.Errorf("lane %d: PlainNow asked %d times, want 5 (four loads, one store)", i, envs[i].asked)
				}
				if th.Line() == 0 {
					t.Errorf("lane %d: no line of its last access", i)
				}
			}
			finish(t, ths)
			for i := range ths {
				if !slices.Equal(logs[i], aloneLogs[i]) {
					t.Errorf("lane %d accesses:\nlockstep: %q\nalone:    %q", i, logs[i], aloneLogs[i])
				}
				if ths[i].Executed() != alone[i].Executed() || ths[i].Loops() != alone[i].Loops() {
					t.Errorf("lane %d: %d instructions, %d loops; alone %d, %d", i, ths[i].Executed(), ths[i].Loops(), alone[i].Executed(), alone[i].Loops())
				}
			}
			if !bytes.Equal(out, aloneOut) {
				t.Errorf("memory differs:\nlockstep %x\nalone    %x", out, aloneOut)
			}
		})
	}
}

// TestLockstepStopsWhereALaneMust: an access the Env refuses for some
// lanes leaves the lanes before it in lane order past it and the others
// before it, each at a place Run continues from; a strong access stops
// every lane before it.
func TestLockstepStopsWhereALaneMust(t *testing.T) {
	const n = 32
	// Lane 5's first load is refused: lanes 0-4 made it, 5-31 did not.
	ths, _, logs, out := lockstepRun(t, n, func(addr uint64) bool { return addr == lockIn+5*16 })
	Lockstep(ths)
	for i := range n {
		want := 0
		if i < 5 {
			want = 1
		}
		if len(logs[i]) != want {
			t.Errorf("lane %d made %d accesses in lockstep, want %d: %q", i, len(logs[i]), want, logs[i])
		}
	}
	finish(t, ths)
	alone, _, _, aloneOut := lockstepRun(t, n, nil)
	finish(t, alone)
	if !bytes.Equal(out, aloneOut) {
		t.Errorf("memory differs after a refused access:\nlockstep %x\nalone    %x", out, aloneOut)
	}

}

// TestLockstepStopsBeforeSchedulingPoints: a strong load, an atom, a
// fence, a strong shared-memory access, a barrier and a warp collective each
// stop every lane before it, with no access made; a read of the clock
// too (the lanes read it one at a time).
func TestLockstepStopsBeforeSchedulingPoints(t *testing.T) {
	for _, inst := range []string{
		"ld.acquire.gpu.global.u32 %r2, [%rd1];",
		"ld.volatile.global.u32 %r2, [%rd1];",
		"ld.relaxed.sys.global.u32 %r2, [%rd1];",
		"st.release.gpu.global.u32 [%rd1], %r1;",
		"atom.global.add.u32 %r2, [%rd1], 1;",
		"fence.acq_rel.gpu;",
		"ld.volatile.shared.u32 %r2, [sh];",
		"st.relaxed.cta.shared.u32 [sh], %r1;",
		"atom.shared.add.u32 %r2, [sh], 1;",
		"bar.sync 1, 32;",
		"bar.arrive 1, 64;",
		"shfl.sync.bfly.b32 %r2, %r1, 1, 31, -1;",
		"mov.u64 %rd3, %globaltimer;",
	} {
		src := `
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 in, .param .u64 out)
{
	.shared .align 4 .b8 sh[128];
	.reg .b32 %r<4>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [in];
	mov.u32 %r1, %tid.x;
	ld.global.u32 %r3, [%rd1];
	add.u32 %r3, %r3, 1;
	` + inst + `
	st.global.u32 [%rd1+4], %r3;
	ret;
}
`
		mem := &sliceEnv{regions: []region{{lockIn, make([]byte, 64)}}}
		ths, _, logs := startLanes(t, src, 4, mem, binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, lockIn), lockOut), nil)
		if got := Lockstep(ths); got != 4*4 {
			t.Errorf("%s: Lockstep ran %d lane-instructions, want the 4 before it in 4 lanes", inst, got)
		}
		for i, l := range logs {
			if len(l) != 1 || l[0] != fmt.Sprintf("ld weak %#x 4", lockIn) {
				t.Errorf("%s: lane %d made %q in lockstep, want only the plain load", inst, i, l)
			}
		}
	}
}

// sharedKernel: every lane stores its index to its word of shared memory
// and to the next lane's (the last lane's goes to word 0), then reads its
// own word back, a generic load of the shared window included, and
// stores what it read to out[tid].
const sharedKernel = `
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 in, .param .u64 out)
{
	.shared .align 4 .b8 sh[128];
	.reg .b32 %r<8>;
	.reg .b64 %rd<8>;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %tid.x;
	mov.u32 %r2, %ntid.x;
	shl.b32 %r3, %r1, 2;
	add.u32 %r4, %r1, 1;
	rem.u32 %r4, %r4, %r2;
	shl.b32 %r4, %r4, 2;
	mov.u32 %r5, sh;
	add.u32 %r3, %r3, %r5;
	add.u32 %r4, %r4, %r5;
	st.shared.u32 [%r3], %r1;
	st.shared.u32 [%r4], %r1;
	ld.shared.u32 %r6, [%r3];
	cvta.shared.u64 %rd2, sh;
	cvt.u64.u32 %rd3, %r3;
	add.s64 %rd2, %rd2, %rd3;
	ld.u32 %r7, [%rd2];
	add.u32 %r6, %r6, %r7;
	mul.wide.u32 %rd4, %r1, 4;
	add.s64 %rd5, %rd1, %rd4;
	st.global.u32 [%rd5], %r6;
	ret;
}
`

// TestLockstepRunsPlainSharedAccesses: plain loads and stores of shared
// memory run in lockstep where the Env says they may (SharedNow), in
// the order a warp makes them (each instruction for every lane, in lane
// order), each told to the lane's Env; where it says no, every lane stops
// before the first of them.
func TestLockstepRunsPlainSharedAccesses(t *testing.T) {
	const n = 4
	run := func(noShared bool) ([]*Thread, []*laneEnv, []byte) {
		out := make([]byte, 4*n)
		mem := &sliceEnv{regions: []region{{lockOut, out}}}
		params := binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, lockIn), lockOut)
		ths, envs, _ := startLanes(t, sharedKernel, n, mem, params, nil)
		for _, e := range envs {
			e.noShared = noShared
		}
		return ths, envs, out
	}
	ths, envs, out := run(false)
	if got, want := Lockstep(ths), uint64(22*n); got != want {
		t.Fatalf("Lockstep ran %d lane-instructions, want %d: every instruction, the exit too, in %d lanes", got, want, n)
	}
	for i, e := range envs {
		want := []string{
			fmt.Sprintf("true weak %d/4", 4*i),
			fmt.Sprintf("true weak %d/4", 4*((i+1)%n)),
			fmt.Sprintf("false weak %d/4", 4*i),
			fmt.Sprintf("false weak %d/4", 4*i),
		}
		if !slices.Equal(e.shared, want) {
			t.Errorf("lane %d told its Env of %q, want %q", i, e.shared, want)
		}
	}
	// A warp's order: every lane's first store, then every lane's second,
	// so that lane i's word holds lane i-1's index (word 0 lane n-1's)
	// when the lanes read it.
	for i := range n {
		prev := uint32((i + n - 1) % n)
		if got := binary.LittleEndian.Uint32(out[4*i:]); got != 2*prev {
			t.Errorf("out[%d] = %d, want %d (twice lane %d's index)", i, got, 2*prev, prev)
		}
	}

	refused, renvs, _ := run(true)
	if got, want := Lockstep(refused), uint64(10*n); got != want {
		t.Errorf("Lockstep with shared accesses refused ran %d lane-instructions, want the %d before the first", got, want)
	}
	for i, e := range renvs {
		if len(e.shared) != 0 {
			t.Errorf("lane %d made %q in lockstep with shared accesses refused", i, e.shared)
		}
	}
}

// TestLockstepStopsAtBarriersAndExits: lanes in lockstep stop at a
// barrier of every thread as Run stops them there (Release resumes
// them, and lockstep again takes them on) and exit together.
func TestLockstepStopsAtBarriersAndExits(t *testing.T) {
	src := `
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 in)
{
	.reg .b32 %r<4>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [in];
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r1;
	bar.sync 0;
	ld.global.u32 %r2, [%rd1+4];
	add.u32 %r2, %r2, %r1;
	st.global.u32 [%rd3+64], %r2;
	ret;
}
`
	const n = 8
	mem := &sliceEnv{regions: []region{{lockIn, make([]byte, 128)}}}
	ths, _, logs := startLanes(t, src, n, mem, binary.LittleEndian.AppendUint64(nil, lockIn), nil)
	if got := Lockstep(ths); got != 6*n {
		t.Errorf("Lockstep to the barrier ran %d lane-instructions, want 6 in %d lanes", got, n)
	}
	for i, th := range ths {
		if stop, ok := th.Stopped(); !ok || stop != AtBarrier {
			t.Fatalf("lane %d after lockstep: stopped %v (%v), want at the barrier", i, ok, stop)
		}
		if b := th.Barrier(); !b.Done || b.ID != 0 {
			t.Fatalf("lane %d waits at %+v, want barrier 0 completed", i, b)
		}
	}
	for _, th := range ths {
		if err := th.Release(); err != nil {
			t.Fatal(err)
		}
	}
	if got := Lockstep(ths); got != 4*n {
		t.Errorf("Lockstep to the exit ran %d lane-instructions, want 4 in %d lanes", got, n)
	}
	for i, th := range ths {
		if stop, ok := th.Stopped(); !ok || stop != Exited {
			t.Errorf("lane %d after lockstep: stopped %v (%v), want exited", i, ok, stop)
		}
		if _, err := th.Run(); err == nil {
			t.Errorf("lane %d runs after its exit", i)
		}
		if len(logs[i]) != 3 || logs[i][1] != fmt.Sprintf("ld weak %#x 4", lockIn+4) {
			t.Errorf("lane %d made %q", i, logs[i])
		}
	}
	if err := ths[0].mem.Err(); err != nil {
		t.Errorf("block after every lane exited: %v", err)
	}
	out := mem.regions[0].b
	for i := range n {
		if got := binary.LittleEndian.Uint32(out[64+4*i:]); got != uint32(1+i) {
			t.Errorf("lane %d stored %d after the barrier, want %d", i, got, 1+i)
		}
	}
}

// TestLockstepNeedsOnePlace: threads at different places, or an Env
// that is no PlainEnv, are not run.
func TestLockstepNeedsOnePlace(t *testing.T) {
	ths, _, logs, _ := lockstepRun(t, 4, nil)
	if _, err := ths[1].Run(); err != nil {
		t.Fatal(err)
	}
	before := logs[1]
	if got := Lockstep([]*Thread{ths[1], ths[0]}); got != 0 {
		t.Errorf("Lockstep of an exited thread and another ran %d lane-instructions", got)
	}
	if got := Lockstep([]*Thread{ths[0]}); got != 0 {
		t.Errorf("Lockstep of one thread ran %d lane-instructions", got)
	}
	if len(logs[0]) != 0 || len(logs[1]) != len(before) {
		t.Errorf("threads not run together made accesses: %q, %q", logs[0], logs[1])
	}

	m, err := Parse(lockstepKernel)
	if err != nil {
		t.Fatal(err)
	}
	in, out := make([]byte, 64), make([]byte, 512)
	env := &sliceEnv{regions: []region{{lockIn, in}, {lockOut, out}}}
	params := binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, lockIn), lockOut)
	bm, err := m.NewBlockMem("k", params)
	if err != nil {
		t.Fatal(err)
	}
	var plain []*Thread
	for i := range 2 {
		th, err := m.NewThread("k", env, bm, Dim{Tid: uint32(i), Ntid: 2, Nctaid: 1})
		if err != nil {
			t.Fatal(err)
		}
		plain = append(plain, th)
	}
	if got := Lockstep(plain); got != 0 {
		t.Errorf("Lockstep over an Env that is no PlainEnv ran %d lane-instructions", got)
	}
}

// TestLockstepSpendsTheBudget: a loop that never touches memory stops
// lockstep within the lanes' budget, and each lane's Run then reports
// the budget as running alone does.
func TestLockstepSpendsTheBudget(t *testing.T) {
	src := `
.version 8.0
.target sm_90
.address_size 64
.visible .entry k()
{
	.reg .b32 %r<2>;
	mov.u32 %r1, 0;
$L:
	add.u32 %r1, %r1, 1;
	bra $L;
}
`
	ths, _, _ := startLanes(t, src, 4, &sliceEnv{}, nil, nil)
	for _, th := range ths {
		th.Budget = 1000
	}
	if got := Lockstep(ths); got == 0 || got > 4*(1000+8) {
		t.Errorf("Lockstep of an endless loop ran %d lane-instructions with a budget of 1000", got)
	}
	for i, th := range ths {
		if _, err := th.Run(); err == nil || !strings.Contains(err.Error(), "budget") {
			t.Errorf("lane %d after lockstep: %v, want the budget's error", i, err)
		}
	}
}
