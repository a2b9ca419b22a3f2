package ptx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// barEvent is what a thread told its BarrierEnv.
type barEvent struct {
	tid      uint32
	id       int
	n        uint64    // Arrive: which of the thread's arrivals
	arrivals []Arrival // Leave: the phase's arrivals
	released uint64
}

// barLog collects the events of a block's threads.
type barLog struct {
	token   uint64
	arrives []barEvent
	leaves  []barEvent
}

// barEnv is one thread's environment: goroutines take turns under mu
// (every wait and arrival lets the others run), and the barrier events go
// to log with a token that counts the arrivals.
type barEnv struct {
	*sliceEnv
	mu  *sync.Mutex
	log *barLog
	tid uint32
}

func (e barEnv) yield() {
	e.mu.Unlock()
	runtime.Gosched()
	e.mu.Lock()
}

func (e barEnv) WaitWarp(what string, ready func() bool) error {
	deadline := time.Now().Add(10 * time.Second)
	for !ready() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out waiting for %s", what)
		}
		e.yield()
	}
	return nil
}

func (e barEnv) Arrive(id int, n uint64, released *uint64) {
	e.log.token++
	*released = max(*released, e.log.token)
	e.log.arrives = append(e.log.arrives, barEvent{tid: e.tid, id: id, n: n, released: e.log.token})
	e.yield()
}

func (e barEnv) Leave(id int, arrivals []Arrival, released uint64) {
	e.log.leaves = append(e.log.leaves, barEvent{tid: e.tid, id: id, arrivals: slices.Clone(arrivals), released: released})
}

// runBlock runs n threads of entry k of text over buf as one block: each
// thread a goroutine until it exits or stops at a barrier of every
// thread, which the block then releases, as the simulator does. It
// returns each thread's error (a deadlock at a barrier of every thread is
// the error of the threads that wait there) and the barrier events.
func runBlock(t *testing.T, text string, n int, buf []byte) ([]error, *barLog) {
	t.Helper()
	m, err := Parse(header + text)
	if err != nil {
		t.Fatal(err)
	}
	const base = 0x7000_0000_0000
	var mu sync.Mutex
	log := &barLog{}
	mem, err := m.NewBlockMem("k", binary.LittleEndian.AppendUint64(nil, base))
	if err != nil {
		t.Fatal(err)
	}
	shared := &sliceEnv{regions: []region{{base, buf}}}
	errs := make([]error, n)
	live := make([]*Thread, n)
	for i := range live {
		env := barEnv{shared, &mu, log, uint32(i)}
		if live[i], err = m.NewThread("k", env, mem, Dim{Tid: uint32(i), Ntid: uint32(n), Nctaid: 1}); err != nil {
			t.Fatal(err)
		}
	}
	tids := make([]int, n)
	for i := range tids {
		tids[i] = i
	}
	for len(live) > 0 {
		stops := make([]Stop, len(live))
		var wg sync.WaitGroup
		for i, th := range live {
			wg.Add(1)
			go func() {
				defer wg.Done()
				mu.Lock()
				defer mu.Unlock()
				stops[i], errs[tids[i]] = th.Run()
			}()
		}
		wg.Wait()
		var next []*Thread
		var nextTids []int
		for i, th := range live {
			if errs[tids[i]] == nil && stops[i] == AtBarrier {
				next, nextTids = append(next, th), append(nextTids, tids[i])
			}
		}
		for i, th := range next {
			if !th.Barrier().Done {
				errs[nextTids[i]] = mem.Deadlock()
				continue
			}
			if err := th.Release(); err != nil {
				t.Fatal(err)
			}
		}
		live, tids = next, nextTids
		if len(live) > 0 && errs[tids[0]] != nil {
			break
		}
	}
	if err := mem.Err(); err != nil && !slices.ContainsFunc(errs, func(e error) bool { return e != nil }) {
		errs[0] = err // found when a thread exited
	}
	return errs, log
}

func noErrors(t *testing.T, errs []error) {
	t.Helper()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("thread %d: %v", i, err)
		}
	}
}

// TestBarrierProducerConsumer: the named-barrier pattern of the PTX ISA.
// Warp 0 produces a value per lane in shared memory and announces it with
// bar.arrive 1; warp 1 waits at bar.sync 1, reads it and announces that
// with bar.arrive 2, which the producer waits for before the next round.
// Three rounds: three phases of each barrier.
func TestBarrierProducerConsumer(t *testing.T) {
	text := `.visible .entry k(.param .u64 p)
{
	.reg .b32 %r<8>;
	.reg .b64 %rd<5>;
	.reg .pred %p<3>;
	.shared .align 4 .b8 buf[128];
	ld.param.u64 %rd1, [p];
	mov.u32 %r1, %tid.x;
	and.b32 %r2, %r1, 31;
	mov.u64 %rd2, buf;
	mul.wide.u32 %rd4, %r2, 4;
	add.s64 %rd2, %rd2, %rd4;
	mov.u32 %r5, 0;
	setp.ge.u32 %p1, %r1, 32;
	@%p1 bra CONSUMER;
PRODUCER:
	mad.lo.u32 %r6, %r5, 100, %r2;
	st.shared.u32 [%rd2], %r6;
	bar.arrive 1, 64;
	bar.sync 2, 64;
	add.u32 %r5, %r5, 1;
	setp.lt.u32 %p2, %r5, 3;
	@%p2 bra PRODUCER;
	ret;
CONSUMER:
	barrier.sync.aligned 1, 64;
	ld.shared.u32 %r6, [%rd2];
	mad.lo.u32 %r7, %r5, 32, %r2;
	mul.wide.u32 %rd3, %r7, 4;
	add.s64 %rd3, %rd1, %rd3;
	st.global.u32 [%rd3], %r6;
	barrier.cta.arrive 2, 64;
	add.u32 %r5, %r5, 1;
	setp.lt.u32 %p2, %r5, 3;
	@%p2 bra CONSUMER;
	ret;
}
`
	buf := make([]byte, 4*32*3)
	errs, log := runBlock(t, text, 64, buf)
	noErrors(t, errs)
	for round := 0; round < 3; round++ {
		for lane := 0; lane < 32; lane++ {
			if got, want := binary.LittleEndian.Uint32(buf[4*(32*round+lane):]), uint32(100*round+lane); got != want {
				t.Fatalf("round %d lane %d: the consumer read %d, want %d", round, lane, got, want)
			}
		}
	}
	if len(log.arrives) != 2*64*3 {
		t.Errorf("%d arrivals, want %d", len(log.arrives), 2*64*3)
	}
	type arrival struct {
		id  int
		tid uint32
		n   uint64
	}
	tokens := map[arrival]uint64{}
	for _, a := range log.arrives {
		tokens[arrival{a.id, a.tid, a.n}] = a.released
	}
	leaves := map[[2]int]int{}
	for _, e := range log.leaves {
		waiter := 1 // barrier 1: the consumer warp
		if e.id == 2 {
			waiter = 0
		}
		if int(e.tid/32) != waiter {
			t.Errorf("thread %d left barrier %d, which only warp %d waits at", e.tid, e.id, waiter)
		}
		// A phase is the round-th arrival of each of the 64 threads; the
		// waiter learns the largest token of those arrivals.
		round := e.arrivals[0].N
		var threads []uint32
		last := uint64(0)
		for _, a := range e.arrivals {
			if a.N != round {
				t.Errorf("thread %d left barrier %d with arrivals of rounds %d and %d", e.tid, e.id, round, a.N)
			}
			threads = append(threads, a.Thread)
			last = max(last, tokens[arrival{e.id, a.Thread, a.N}])
		}
		slices.Sort(threads)
		if len(threads) != 64 || threads[0] != 0 || threads[63] != 63 {
			t.Errorf("thread %d left barrier %d round %d learning the arrivals of threads %v, want 0-63", e.tid, e.id, round, threads)
		}
		if e.released != last {
			t.Errorf("thread %d left barrier %d round %d with token %d, want %d", e.tid, e.id, round, e.released, last)
		}
		leaves[[2]int{e.id, int(round)}]++
	}
	for id := 1; id <= 2; id++ {
		for round := 0; round < 3; round++ {
			if leaves[[2]int{id, round}] != 32 {
				t.Errorf("barrier %d round %d released %d threads, want 32", id, round, leaves[[2]int{id, round}])
			}
		}
	}
}

// TestBarrierIndependentHalves: two halves of a block synchronize on
// barriers 1 and 2 independently: the first half goes round three times
// while the second passes its barrier once and exits; a barrier of every
// thread afterwards waits only for those that have not exited.
func TestBarrierIndependentHalves(t *testing.T) {
	text := `.visible .entry k(.param .u64 p)
{
	.reg .b32 %r<8>;
	.reg .b64 %rd<5>;
	.reg .pred %p<3>;
	.shared .align 4 .b32 sum[2];
	ld.param.u64 %rd1, [p];
	mov.u32 %r1, %tid.x;
	setp.ge.u32 %p1, %r1, 64;
	@%p1 bra SECOND;
	mov.u32 %r5, 0;
FIRST:
	atom.shared.add.u32 %r6, [sum], 1;
	bar.sync 1, 64;
	add.u32 %r5, %r5, 1;
	setp.lt.u32 %p2, %r5, 3;
	@%p2 bra FIRST;
	bar.sync 0;
	ld.shared.u32 %r6, [sum];
	ld.shared.u32 %r7, [sum+4];
	mul.wide.u32 %rd3, %r1, 8;
	add.s64 %rd3, %rd1, %rd3;
	st.global.v2.u32 [%rd3], {%r6, %r7};
	ret;
SECOND:
	atom.shared.add.u32 %r6, [sum+4], 1;
	bar.sync 2, 64;
	ld.shared.u32 %r7, [sum+4];
	mul.wide.u32 %rd3, %r1, 8;
	add.s64 %rd3, %rd1, %rd3;
	st.global.u32 [%rd3+4], %r7;
	ret;
}
`
	buf := make([]byte, 8*128)
	errs, log := runBlock(t, text, 128, buf)
	noErrors(t, errs)
	for tid := 0; tid < 128; tid++ {
		first, second := binary.LittleEndian.Uint32(buf[8*tid:]), binary.LittleEndian.Uint32(buf[8*tid+4:])
		switch {
		case tid < 64 && (first != 3*64 || second != 64):
			t.Errorf("thread %d read sums %d and %d after bar.sync 0, want %d and 64", tid, first, second, 3*64)
		case tid >= 64 && second != 64:
			t.Errorf("thread %d read %d after bar.sync 2, want 64", tid, second)
		}
	}
	phases := map[int]uint64{}
	for _, e := range log.leaves {
		phases[e.id] = max(phases[e.id], e.arrivals[0].N+1)
		if (e.id == 1) != (e.tid < 64) {
			t.Errorf("thread %d left barrier %d", e.tid, e.id)
		}
	}
	if phases[1] != 3 || phases[2] != 1 {
		t.Errorf("barrier 1 ran %d phases, barrier 2 %d; want 3 and 1", phases[1], phases[2])
	}
}

// TestBarrierReductions: bar.red over the threads that take part only:
// popc, and, or over two warps of three at barrier 3, while the third warp
// reduces at barrier 4 with its own count; then bar.red.popc of every
// thread of the block after the third warp's upper half exited.
func TestBarrierReductions(t *testing.T) {
	text := `.visible .entry k(.param .u64 p)
{
	.reg .b32 %r<10>;
	.reg .b64 %rd<5>;
	.reg .pred %p<6>;
	ld.param.u64 %rd1, [p];
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd3, %r1, 16;
	add.s64 %rd3, %rd1, %rd3;
	and.b32 %r2, %r1, 1;
	setp.eq.u32 %p1, %r2, 1;
	setp.lt.u32 %p2, %r1, 70;
	setp.ge.u32 %p3, %r1, 64;
	@%p3 bra THIRD;
	bar.red.popc.u32 %r3, 3, 64, %p1;
	bar.red.and.pred %p4, 3, 64, %p2;
	selp.u32 %r4, 1, 0, %p4;
	barrier.cta.red.or.aligned.pred %p5, 3, 64, !%p1;
	selp.u32 %r5, 1, 0, %p5;
	bra.uni ALL;
THIRD:
	bar.red.popc.u32 %r3, 4, 32, %p2;
	bar.red.and.pred %p4, 4, 32, %p3;
	selp.u32 %r4, 1, 0, %p4;
	bar.red.or.pred %p5, 4, 32, !%p3;
	selp.u32 %r5, 1, 0, %p5;
	mov.u32 %r6, 0;
	setp.ge.u32 %p4, %r1, 80;
	@%p4 bra STORE;
ALL:
	bar.red.popc.u32 %r6, 0, %p1;
STORE:
	st.global.v4.u32 [%rd3], {%r3, %r4, %r5, %r6};
	ret;
}
`
	buf := make([]byte, 16*96)
	errs, _ := runBlock(t, text, 96, buf)
	noErrors(t, errs)
	for tid := 0; tid < 96; tid++ {
		w := func(i int) uint32 { return binary.LittleEndian.Uint32(buf[16*tid+4*i:]) }
		want := [4]uint32{32, 1, 1, 40} // 32 odd threads of 64; all below 70; some even; 40 odd of the 80 left
		if tid >= 64 {
			want = [4]uint32{6, 1, 0, 40}
		}
		if tid >= 80 {
			want[3] = 0 // exits without the last reduction
		}
		if got := [4]uint32{w(0), w(1), w(2), w(3)}; got != want {
			t.Errorf("thread %d: popc, and, or, popc of all = %v, want %v", tid, got, want)
		}
	}
}

// TestBarrierErrors: what the ISA leaves undefined, or that can never
// complete, is an error naming the barrier, at decode when the operands
// are immediates.
func TestBarrierErrors(t *testing.T) {
	const entry = `.visible .entry k(.param .u64 p)
{
	.reg .b32 %r<4>;
	.reg .pred %p<3>;
	mov.u32 %r1, %tid.x;
	setp.ge.u32 %p1, %r1, 32;
`
	for _, c := range []struct {
		name, body string
		threads    int
		decode     bool
		want       []string
	}{
		{"count not a multiple of the warp size", "\tbar.sync 1, 48;\n\tret;\n}\n", 64, true, []string{"line 10", "thread count 48"}},
		{"count of a register not a multiple", "\tmov.u32 %r2, 40;\n\tbar.sync 1, %r2;\n\tret;\n}\n", 64, false, []string{"line 11", "thread count 40 is not a positive multiple"}},
		{"count larger than the block", "\tbar.sync 1, 128;\n\tret;\n}\n", 64, false, []string{"thread count 128 exceeds the block's 64 threads"}},
		{"barrier id 16", "\tbar.sync 16;\n\tret;\n}\n", 32, true, []string{"barrier 16", "0 to 15"}},
		{"barrier id of a register", "\tmov.u32 %r2, 17;\n\tbar.sync %r2, 32;\n\tret;\n}\n", 32, false, []string{"barrier 17"}},
		{"bar.arrive without a count", "\tbar.arrive 1;\n\tret;\n}\n", 32, true, []string{"line 10", "needs a thread count"}},
		{"bar.red without an operation", "\tbar.red.u32 %r2, 1, %p1;\n\tret;\n}\n", 32, true, []string{"needs an operation"}},
		{"bar.warp.sync without a mask", "\tbar.warp.sync;\n\tret;\n}\n", 32, true, []string{"line 10", "bar.warp.sync: unexpected operands"}},
		{"bar.red.popc of a predicate", "\tbar.red.popc.pred %p2, 1, %p1;\n\tret;\n}\n", 32, true, []string{"bar.red.popc is .u32"}},
		{"mismatched counts", "\t@%p1 bra.uni B;\n\tbar.sync 1, 64;\n\tret;\nB:\n\tbar.arrive 1, 96;\n\tret;\n}\n", 96,
			false, []string{"barrier 1 expects", "in this phase, but an arrival at line", "64 threads", "96 threads"}},
		{"counts and every thread", "\t@%p1 bra.uni B;\n\tbar.sync 1, 64;\n\tret;\nB:\n\tbar.sync 1;\n\tret;\n}\n", 64,
			false, []string{"barrier 1 expects", "every thread of the block"}},
		{"bar.red with bar.sync", "\t@%p1 bra.uni B;\n\tbar.red.or.pred %p2, 2, 64, %p1;\n\tret;\nB:\n\tbar.sync 2, 64;\n\tret;\n}\n", 64,
			false, []string{"barrier 2: bar.red and bar.sync or bar.arrive in one phase (lines", "11", "14"}},
		{"two reductions", "\t@%p1 bra.uni B;\n\tbar.red.or.pred %p2, 2, 64, %p1;\n\tret;\nB:\n\tbar.red.and.pred %p2, 2, 64, %p1;\n\tret;\n}\n", 64,
			false, []string{"two reductions in one phase"}},
		{"arrive twice in a phase", "\t@%p1 bra.uni B;\n\tbar.arrive 1, 64;\n\tbar.arrive 1, 64;\n\tret;\nB:\n\tbar.sync 2, 32;\n\tret;\n}\n", 64,
			false, []string{"warp 0 arrives at barrier 1 again (line 12) before its phase 0 completed"}},
		// Found by the warp that arrives second: warp 1 when its last
		// lane arrives or thread 63 exits, or warp 0 or 2.
		{"mismatched counts and an exit", "\tsetp.eq.u32 %p2, %r1, 63;\n\t@%p2 ret;\n\tsetp.lt.u32 %p2, %r1, 64;\n\tand.pred %p1, %p1, %p2;\n\t@%p1 bra.uni B;\n\tbar.sync 1, 96;\n\tret;\nB:\n\tbar.arrive 1, 64;\n\tret;\n}\n", 96,
			false, []string{"barrier 1 expects", "in this phase, but an arrival at line", "96 threads", "64 threads"}},
		{"deadlock of two named barriers", "\t@%p1 bra.uni B;\n\tbar.sync 1, 64;\n\tret;\nB:\n\tbar.sync 2, 64;\n\tret;\n}\n", 64,
			false, []string{"barrier deadlock", "threads 0-31 wait at barrier 1 (line 11)", "threads 32-63 wait at barrier 2 (line 14)", "barrier 1 has 32 of 64 threads (phase 0)", "barrier 2 has 32 of 64 threads"}},
		{"deadlock of two barriers of every thread", "\t@%p1 bra.uni B;\n\tbar.sync 0;\n\tret;\nB:\n\tbar.sync 1;\n\tret;\n}\n", 64,
			false, []string{"barrier deadlock", "threads 0-31 wait at barrier 0 (line 11)", "threads 32-63 wait at barrier 1 (line 14)", "barrier 0 has 32 arrivals of every thread"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			text := header + entry + c.body
			m, err := Parse(text)
			if err == nil {
				_, err = m.Func("k")
			}
			if c.decode {
				if err == nil {
					t.Fatal("decoded, want an error")
				}
				for _, w := range c.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("decode error %q does not say %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			errs, _ := runBlock(t, entry+c.body, c.threads, make([]byte, 64))
			var first error
			for _, err := range errs {
				if err != nil {
					first = err
					break
				}
			}
			if first == nil {
				t.Fatal("no thread failed")
			}
			for _, w := range c.want {
				if !strings.Contains(first.Error(), w) {
					t.Errorf("error %q does not say %q", first, w)
				}
			}
			if strings.Contains(c.name, "deadlock") && !errors.Is(first, ErrDeadlock) {
				t.Errorf("error %q is not ErrDeadlock", first)
			}
		})
	}
}

// TestAlignedBarrierDivergence: bar (and barrier with .aligned) promises
// that every lane of a warp executes the same barrier instruction; lanes
// of one warp arriving at two of them break it, and the arrival says
// where. Without .aligned, and for lanes of different warps, two
// instructions of one barrier meet in one phase.
func TestAlignedBarrierDivergence(t *testing.T) {
	kernel := func(split, sync string) string {
		return `.visible .entry k(.param .u64 p)
{
	.reg .b32 %r<4>;
	.reg .b64 %rd<4>;
	.reg .pred %p<2>;
	ld.param.u64 %rd1, [p];
	mov.u32 %r1, %tid.x;
	` + split + `
	@%p1 bra B;
	` + sync + ` 0;
	bra.uni DONE;
B:
	` + sync + ` 0;
DONE:
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r1;
	ret;
}
`
	}
	const inWarp = "and.b32 %r2, %r1, 1;\n\tsetp.eq.u32 %p1, %r2, 1;" // odd lanes branch
	const byWarp = "setp.ge.u32 %p1, %r1, 32;"                        // warp 1 branches
	for _, c := range []struct {
		name, split, sync string
		fails             bool
	}{
		{"bar.sync, lanes of a warp apart", inWarp, "bar.sync", true},
		{"barrier.sync.aligned, lanes of a warp apart", inWarp, "barrier.sync.aligned", true},
		{"barrier.sync, lanes of a warp apart", inWarp, "barrier.sync", false},
		{"bar.sync, warps apart", byWarp, "bar.sync", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			buf := make([]byte, 4*64)
			errs, _ := runBlock(t, kernel(c.split, c.sync), 64, buf)
			if !c.fails {
				noErrors(t, errs)
				for i := range 64 {
					if got := binary.LittleEndian.Uint32(buf[4*i:]); got != uint32(i) {
						t.Fatalf("thread %d stored %d after the barrier", i, got)
					}
				}
				return
			}
			// The lane that broke the promise fails; the others then
			// wait at the barrier for good.
			var msgs []string
			for _, err := range errs {
				if err != nil && strings.Contains(err.Error(), ".aligned") {
					msgs = append(msgs, err.Error())
				}
			}
			if len(msgs) == 0 {
				t.Fatalf("lanes of one warp at two instructions of an .aligned barrier: no error of it in %v", errs)
			}
			if !strings.Contains(msgs[0], "lines 14 and 17") && !strings.Contains(msgs[0], "lines 17 and 14") {
				t.Fatalf("error %q does not name both lines", msgs[0])
			}
		})
	}
}

// TestThreadBarrierSaysWhereItWaits: a thread stopped at a barrier of
// every thread names the barrier and its line, and says whether its phase
// completed: not while another thread has yet to arrive, then yes.
func TestThreadBarrierSaysWhereItWaits(t *testing.T) {
	m, err := Parse(header + `.visible .entry k(.param .u64 p)
{
	bar.sync 3;
	ret;
}
`)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := m.NewBlockMem("k", make([]byte, 8))
	if err != nil {
		t.Fatal(err)
	}
	var ths [2]*Thread
	for i := range ths {
		if ths[i], err = m.NewThread("k", &sliceEnv{}, mem, Dim{Tid: uint32(i), Ntid: 2, Nctaid: 1}); err != nil {
			t.Fatal(err)
		}
	}
	const line = 6 // bar.sync 3, after the header's three lines
	for i, th := range ths {
		if stop, err := th.Run(); err != nil || stop != AtBarrier {
			t.Fatalf("thread %d: Run = %v, %v; want AtBarrier", i, stop, err)
		}
		want := Barrier{ID: 3, Line: line, Done: i == 1}
		if got := th.Barrier(); got != want {
			t.Fatalf("thread %d of 2 arrived: Barrier() = %+v, want %+v", i, got, want)
		}
	}
	if got := ths[0].Barrier(); !got.Done {
		t.Fatalf("both threads arrived: thread 0's Barrier() = %+v, want Done", got)
	}
}
