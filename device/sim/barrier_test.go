package sim_test

import (
	"encoding/binary"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/device/sim/ptx"
	"github.com/symmem/symmem/device/sim/race"
)

// runBarrierKernel launches entry k of text (whose parameter is a
// 4 KiB global buffer) on one block of threads under the race detector
// with seed, and returns the buffer, the races and the launch's error.
func runBarrierKernel(t *testing.T, text string, threads int, seed uint64) ([]byte, []race.Race, error) {
	t.Helper()
	m, err := ptx.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	s := actor.NewScheduler(actor.Config{Seed: seed, MaxSteps: 1 << 20})
	w, err := sim.NewWorld(s, sim.Config{World: 1, Kernels: sim.Kernels{PTX: true}})
	if err != nil {
		t.Fatal(err)
	}
	det := race.New(w)
	buf := make([]byte, 4096)
	var runErr error
	s.Go("host", func() {
		runErr = func() error {
			d := w.Device(0)
			h, err := d.CreatePhysical(device.Granularity)
			if err != nil {
				return err
			}
			p, err := d.Reserve(device.Granularity)
			if err != nil {
				return err
			}
			if err := d.Map(p, device.Granularity, h); err != nil {
				return err
			}
			if err := d.SetAccess(p, device.Granularity); err != nil {
				return err
			}
			st, err := d.NewStream()
			if err != nil {
				return err
			}
			if err := d.Memset(st, p, 0, uint64(len(buf))); err != nil {
				return err
			}
			params := binary.LittleEndian.AppendUint64(nil, uint64(p))
			l := sim.PTXLaunch{Module: m, Entry: "k", Params: params, Grid: 1, Block: threads}
			if err := d.(sim.PTXLauncher).LaunchPTX(st, l); err != nil {
				return err
			}
			if err := d.Synchronize(st); err != nil {
				return err
			}
			return d.Read(st, buf, p)
		}()
	})
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	return buf, det.Races(), runErr
}

// producerConsumer: warp 0 stores a value per lane in shared memory and
// in global memory, then arrives at barrier 1 without waiting; warp 1
// arrives at barrier 1 with wait ("bar.sync 1, 64" or "bar.arrive 1, 64")
// and reads both, storing what it read after warp 0's words.
const producerConsumer = `.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p)
{
	.reg .b32 %r<8>;
	.reg .b64 %rd<6>;
	.reg .pred %p<2>;
	.shared .align 4 .b8 buf[128];
	ld.param.u64 %rd1, [p];
	mov.u32 %r1, %tid.x;
	and.b32 %r2, %r1, 31;
	mul.wide.u32 %rd4, %r2, 4;
	mov.u64 %rd2, buf;
	add.s64 %rd2, %rd2, %rd4;
	add.s64 %rd3, %rd1, %rd4;
	setp.ge.u32 %p1, %r1, 32;
	@%p1 bra CONSUMER;
	add.u32 %r3, %r2, 1000;
	st.shared.u32 [%rd2], %r3;
	st.global.u32 [%rd3], %r3;
	bar.arrive 1, 64;
	ret;
CONSUMER:
	WAIT;
	ld.shared.u32 %r4, [%rd2];
	ld.global.u32 %r5, [%rd3];
	mul.wide.u32 %rd5, %r2, 8;
	add.s64 %rd5, %rd1, %rd5;
	st.global.v2.u32 [%rd5+128], {%r4, %r5};
	ret;
}
`

// TestNamedBarrierRaces: a consumer that waits at the barrier its
// producer arrives at (bar.sync after bar.arrive) reads what the producer
// stored, with no race; one that only arrives (bar.arrive) races with the
// producer's stores, in shared and in global memory, in every schedule.
func TestNamedBarrierRaces(t *testing.T) {
	for _, wait := range []string{"bar.sync 1, 64", "bar.arrive 1, 64"} {
		for seed := uint64(1); seed <= 4; seed++ {
			buf, races, err := runBarrierKernel(t, strings.Replace(producerConsumer, "WAIT", wait, 1), 64, seed)
			if err != nil {
				t.Fatalf("%s, seed %d: %v", wait, seed, err)
			}
			if strings.HasPrefix(wait, "bar.sync") {
				for _, r := range races {
					t.Errorf("%s, seed %d: race reported:\n%s", wait, seed, r)
				}
				for lane := 0; lane < 32; lane++ {
					sh, gl := binary.LittleEndian.Uint32(buf[128+8*lane:]), binary.LittleEndian.Uint32(buf[132+8*lane:])
					if sh != uint32(1000+lane) || gl != uint32(1000+lane) {
						t.Fatalf("%s, seed %d: lane %d read %d from shared and %d from global memory, want %d", wait, seed, lane, sh, gl, 1000+lane)
					}
				}
				continue
			}
			shared, global := false, false
			for _, r := range races {
				if r.First.Lane/32 != r.Second.Lane/32 {
					shared = shared || r.First.Shared
					global = global || !r.First.Shared
				}
			}
			if !shared || !global {
				t.Errorf("%s, seed %d: races in shared memory %v, in global memory %v; want both (races %v)", wait, seed, shared, global, races)
			}
		}
	}
}

// pipeline: warp 0 produces a value per lane in shared memory for ten
// rounds, announcing each with bar.arrive 1 and waiting for warp 1's
// bar.arrive 2 before overwriting it; warp 1 waits at bar.sync 1 (or, in
// round LATE, does not) and adds up what it read.
const pipeline = `.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p)
{
	.reg .b32 %r<8>;
	.reg .b64 %rd<5>;
	.reg .pred %p<4>;
	.shared .align 4 .b8 buf[128];
	ld.param.u64 %rd1, [p];
	mov.u32 %r1, %tid.x;
	and.b32 %r2, %r1, 31;
	mul.wide.u32 %rd4, %r2, 4;
	mov.u64 %rd2, buf;
	add.s64 %rd2, %rd2, %rd4;
	add.s64 %rd3, %rd1, %rd4;
	mov.u32 %r5, 0;
	mov.u32 %r7, 0;
	setp.ge.u32 %p1, %r1, 32;
	@%p1 bra CONSUMER;
PRODUCER:
	add.u32 %r6, %r5, %r2;
	st.shared.u32 [%rd2], %r6;
	bar.arrive 1, 64;
	bar.sync 2, 64;
	add.u32 %r5, %r5, 1;
	setp.lt.u32 %p2, %r5, 10;
	@%p2 bra PRODUCER;
	ret;
CONSUMER:
	setp.eq.u32 %p3, %r5, LATE;
	@%p3 bar.arrive 1, 64;
	@!%p3 bar.sync 1, 64;
	ld.shared.u32 %r6, [%rd2];
	add.u32 %r7, %r7, %r6;
	bar.arrive 2, 64;
	add.u32 %r5, %r5, 1;
	setp.lt.u32 %p2, %r5, 10;
	@%p2 bra CONSUMER;
	st.global.u32 [%rd3], %r7;
	ret;
}
`

// TestNamedBarrierPipeline: ten rounds of named barriers (more than the
// race detector's slots per thread, BarrierSlots) order every read after
// its round's store, with no race reported; a consumer that does not
// wait in one round races with that round's store.
func TestNamedBarrierPipeline(t *testing.T) {
	for _, late := range []int{-1, 6} {
		for seed := uint64(1); seed <= 3; seed++ {
			text := strings.Replace(pipeline, "LATE", strconv.Itoa(late), 1)
			buf, races, err := runBarrierKernel(t, text, 64, seed)
			if err != nil {
				t.Fatalf("late round %d, seed %d: %v", late, seed, err)
			}
			if late < 0 {
				for _, r := range races {
					t.Errorf("seed %d: race reported:\n%s", seed, r)
				}
				for lane := 0; lane < 32; lane++ {
					if got, want := binary.LittleEndian.Uint32(buf[4*lane:]), uint32(45+10*lane); got != want {
						t.Fatalf("seed %d: lane %d added up %d, want %d", seed, lane, got, want)
					}
				}
				continue
			}
			if !slices.ContainsFunc(races, func(r race.Race) bool { return r.First.Shared && r.First.Lane/32 != r.Second.Lane/32 }) {
				t.Errorf("late round %d, seed %d: no race in shared memory reported (races %v)", late, seed, races)
			}
		}
	}
}

// TestNamedBarrierDeadlock: threads waiting at barriers that can never
// complete fail the launch with an error that says which threads wait at
// which line and how far each barrier is, both for barriers with a thread
// count and for barriers of every thread.
func TestNamedBarrierDeadlock(t *testing.T) {
	const kernel = `.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p)
{
	.reg .b32 %r<2>;
	.reg .pred %p<2>;
	mov.u32 %r1, %tid.x;
	setp.ge.u32 %p1, %r1, 32;
	@%p1 bra B;
	FIRST;
	ret;
B:
	SECOND;
	ret;
}
`
	for _, c := range []struct {
		a, b string
		want []string
	}{
		{"bar.sync 1, 64", "bar.sync 2, 64", []string{"threads 0-31 wait at barrier 1 (line 11)", "threads 32-63 wait at barrier 2 (line 14)",
			"barrier 1 has 32 of 64 threads", "barrier 2 has 32 of 64 threads"}},
		{"bar.sync 0", "bar.sync 1", []string{"threads 0-31 wait at barrier 0 (line 11)", "threads 32-63 wait at barrier 1 (line 14)",
			"barrier 0 has 32 arrivals of every thread", "barrier 1 has 32 arrivals"}},
		{"mov.u32 %r1, 0", "bar.arrive 3, 64;\n\tbar.arrive 3, 64", []string{"warp 1 arrives at barrier 3 again (line 15) before its phase 0 completed"}},
	} {
		text := strings.Replace(strings.Replace(kernel, "FIRST", c.a, 1), "SECOND", c.b, 1)
		_, _, err := runBarrierKernel(t, text, 64, 1)
		if err == nil {
			t.Errorf("%s / %s: no error", c.a, c.b)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s / %s: error %q does not say %q", c.a, c.b, err, w)
			}
		}
		if deadlock := !strings.Contains(c.b, "arrive"); errors.Is(err, ptx.ErrDeadlock) != deadlock {
			t.Errorf("%s / %s: errors.Is(%q, ErrDeadlock) = %v, want %v", c.a, c.b, err, !deadlock, deadlock)
		}
	}
}

// TestAtomicRaceNamesItsPTXLine: a race between a plain store and an atom
// of another thread reports the PTX line of each, the atom's included.
func TestAtomicRaceNamesItsPTXLine(t *testing.T) {
	const text = `.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 buf)
{
	.reg .b32 %r<3>;
	.reg .b64 %rd<2>;
	.reg .pred %p<2>;
	ld.param.u64 %rd1, [buf];
	mov.u32 %r1, %tid.x;
	setp.eq.u32 %p1, %r1, 0;
	@%p1 st.global.u32 [%rd1], 5;
	@!%p1 atom.relaxed.gpu.global.add.u32 %r2, [%rd1], 1;
	ret;
}
`
	_, races, err := runBarrierKernel(t, text, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(races) == 0 {
		t.Fatal("no race between the plain store and the atom")
	}
	for _, r := range races {
		for _, a := range []sim.Access{r.First, r.Second} {
			if want := map[bool]int{false: 12, true: 13}[a.RMW]; a.Line != want {
				t.Errorf("%s: line %d, want %d", race.Describe(a, ""), a.Line, want)
			}
		}
	}
}
