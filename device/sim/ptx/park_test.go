package ptx

import (
	"fmt"
	"maps"
	"slices"
	"testing"
)

// parkEnv is memEnv that logs the accesses and parks before every load,
// store and atom it may park before (once each: the access made again
// goes).
type parkEnv struct {
	memEnv
	th      *Thread
	log     []string
	parks   int
	resumed bool
	never   bool // parks at no access
}

func (e *parkEnv) park() bool {
	if e.never || e.resumed || !e.th.Parkable() {
		e.resumed = false
		return false
	}
	e.parks++
	e.resumed = true
	return true
}

func (e *parkEnv) Load(addr uint64, dst []byte, sem Sem, sc Scope) error {
	if e.park() {
		return ErrPark
	}
	e.log = append(e.log, fmt.Sprintf("ld %#x line %d", addr, e.th.Line()))
	return e.memEnv.Load(addr, dst, sem, sc)
}

func (e *parkEnv) Store(addr uint64, src []byte, sem Sem, sc Scope) error {
	if e.park() {
		return ErrPark
	}
	e.log = append(e.log, fmt.Sprintf("st %#x line %d", addr, e.th.Line()))
	return e.memEnv.Store(addr, src, sem, sc)
}

func (e *parkEnv) Atomic(addr uint64, size int, op AtomOp, sem Sem, sc Scope, a, b uint64) (uint64, error) {
	if e.park() {
		return 0, ErrPark
	}
	e.log = append(e.log, fmt.Sprintf("atom %#x line %d", addr, e.th.Line()))
	return e.memEnv.Atomic(addr, size, op, sem, sc, a, b)
}

const parkKernel = `
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p)
{
	.reg .pred %p<2>;
	.reg .b32 %r<6>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [p];
	mov.u32 %r1, 0;
$L_loop:
	mul.wide.u32 %rd2, %r1, 8;
	add.s64 %rd3, %rd1, %rd2;
	ld.relaxed.sys.global.v2.u32 {%r2, %r3}, [%rd3];
	add.s32 %r4, %r2, %r3;
	st.global.u32 [%rd3+64], %r4;
	atom.global.add.u32 %r5, [%rd1+128], %r4;
	ld.global.u32 %r5, [%rd1+128];
	st.release.gpu.global.u32 [%rd3+4], %r5;
	add.s32 %r1, %r1, 1;
	setp.lt.u32 %p1, %r1, 4;
	@%p1 bra $L_loop;
	ret;
}
`

// TestParkedThreadRunsAsOneThatDidNot: a thread whose Env parks before
// each of its loads, stores and atoms (Run returning Parked, the instruction made
// again by the next Run) makes the same accesses in the same order, leaves
// the same memory and counts the same instructions and loops as one run
// straight through.
func TestParkedThreadRunsAsOneThatDidNot(t *testing.T) {
	m, err := Parse(parkKernel)
	if err != nil {
		t.Fatal(err)
	}
	const base = 0x7f00_0000_0000
	params := make([]byte, 8)
	put64 := func(b []byte, v uint64) {
		for i := range 8 {
			b[i] = byte(v >> (8 * i))
		}
	}
	put64(params, base)
	type outcome struct {
		log             []string
		mem             map[uint64]byte
		executed, loops uint64
		parks, runs     int
	}
	run := func(parks bool) outcome {
		env := &parkEnv{memEnv: memEnv{mem: map[uint64]byte{}}}
		for i := range 8 {
			put32(env.mem, base+uint64(4*i), uint32(3*i+1))
		}
		mem, err := m.NewBlockMem("k", params)
		if err != nil {
			t.Fatal(err)
		}
		th, err := m.NewThread("k", env, mem, Dim{Ntid: 1, Nctaid: 1})
		if err != nil {
			t.Fatal(err)
		}
		env.th, env.never = th, !parks
		runs := 0
		for {
			stop, err := th.Run()
			runs++
			if err != nil {
				t.Fatal(err)
			}
			if stop == Exited {
				break
			}
			if stop != Parked {
				t.Fatalf("Run stopped with %v", stop)
			}
			if !parks {
				t.Fatal("a thread that never parks stopped Parked")
			}
		}
		return outcome{env.log, env.mem, th.Executed(), th.Loops(), env.parks, runs}
	}
	straight, parked := run(false), run(true)
	if !slices.Equal(straight.log, parked.log) {
		t.Fatalf("accesses:\n%v\nwhen parking:\n%v", straight.log, parked.log)
	}
	if !maps.Equal(straight.mem, parked.mem) {
		t.Fatal("the memory left differs when the thread parks")
	}
	if straight.executed != parked.executed || straight.loops != parked.loops {
		t.Fatalf("executed %d instructions in %d loops, %d in %d when parking", straight.executed, straight.loops, parked.executed, parked.loops)
	}
	// 4 rounds of two loads, two stores and an atom.
	if parked.parks != 20 || parked.runs != 21 {
		t.Fatalf("parked %d times in %d runs, want 20 in 21", parked.parks, parked.runs)
	}
	if straight.runs != 1 {
		t.Fatalf("the straight run took %d runs", straight.runs)
	}
}
