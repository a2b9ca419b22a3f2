package sim

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
)

func TestAccessAcrossMappings(t *testing.T) {
	inTask(t, 1, Config{}, func(w *World) error {
		d := w.Device(0)
		p, err := d.Reserve(2 * device.Granularity)
		if err != nil {
			return err
		}
		for i := uint64(0); i < 2; i++ {
			h, err := d.CreatePhysical(device.Granularity)
			if err != nil {
				return err
			}
			if err := d.Map(p.Add(i*device.Granularity), device.Granularity, h); err != nil {
				return err
			}
			if err := d.ReleasePhysical(h); err != nil { // the mapping keeps it
				return err
			}
		}
		if err := d.SetAccess(p, 2*device.Granularity); err != nil {
			return err
		}
		at := p + device.Granularity - 3
		if err := d.Write(0, at, []byte("abcdef")); err != nil {
			return err
		}
		got := make([]byte, 6)
		if err := d.Read(0, got, at); err != nil {
			return err
		}
		if string(got) != "abcdef" {
			t.Errorf("read across two mappings: %q", got)
		}
		return nil
	})
}

func TestEventsElapsed(t *testing.T) {
	h := newHarness(t, 2, 2)
	h.run(func() error {
		d := h.dev(0)
		start, err := d.NewEvent()
		if err != nil {
			return err
		}
		end, err := d.NewEvent()
		if err != nil {
			return err
		}
		if _, err := d.Elapsed(start, end); err == nil || !strings.Contains(err.Error(), "never recorded") {
			t.Errorf("elapsed of unrecorded events: %v", err)
		}
		if err := d.RecordEvent(start, 0); err != nil {
			return err
		}
		if err := d.Launch(0, device.Launch{Kernel: kernels.WaitSignal, Blocks: 1, Threads: 1,
			Args: h.signalArgs(0, 1, 0, int64(250*time.Millisecond))}); err != nil {
			return err
		}
		if err := d.RecordEvent(end, 0); err != nil {
			return err
		}
		if err := d.Synchronize(0); err == nil {
			t.Error("the wait did not time out")
		}
		el, err := d.Elapsed(start, end)
		if err != nil {
			return err
		}
		if el != 250*time.Millisecond {
			t.Errorf("elapsed %v, want 250ms of virtual time", el)
		}
		if err := d.DestroyEvent(start); err != nil {
			return err
		}
		if _, err := d.Elapsed(start, end); err == nil {
			t.Error("elapsed of a destroyed event")
		}
		return nil
	})
}

func TestStreamErrors(t *testing.T) {
	inTask(t, 1, Config{}, func(w *World) error {
		d := w.Device(0)
		wantErr(t, d.Synchronize(42), "unknown stream 42")
		wantErr(t, d.DestroyStream(0), "default stream")
		s, err := d.NewStream()
		if err != nil {
			return err
		}
		if err := d.DestroyStream(s); err != nil {
			return err
		}
		wantErr(t, d.Memset(s, 0, 0, 1), "unknown stream")
		wantErr(t, d.Launch(0, device.Launch{Kernel: "nope", Blocks: 1, Threads: 1}), "unknown kernel \"nope\" (known: barrier")
		wantErr(t, d.Launch(0, device.Launch{Kernel: kernels.Barrier, Blocks: 0, Threads: 1}), "grid of 0 blocks")
		wantErr(t, d.Launch(0, device.Launch{Kernel: kernels.Barrier, Blocks: 1, Threads: 2048}), "2048 threads")
		wantErr(t, d.Launch(0, device.Launch{Kernel: kernels.Barrier, Blocks: 1, Threads: 1, Args: 5}), "arguments are int")
		return nil
	})
	// Synchronize outside a task with work pending is an error, not a panic.
	s := actor.NewScheduler(actor.Config{})
	w, err := NewWorld(s, Config{World: 1})
	if err != nil {
		t.Fatal(err)
	}
	d := w.Device(0)
	if err := d.Memset(0, 0, 0, 1); err != nil {
		t.Fatal(err)
	}
	wantErr(t, d.Synchronize(0), "scheduler task")
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	wantErr(t, d.Synchronize(0), "no reservation") // the memset's fault, reported now
}

func TestLanesNeedThreads(t *testing.T) {
	h := newHarness(t, 4, 1)
	h.run(func() error {
		// A barrier of 4 ranks launched with 2 threads cannot give each peer
		// a lane: rejected at launch, as on a GPU.
		err := h.dev(0).Launch(0, device.Launch{Kernel: kernels.Barrier, Blocks: 1, Threads: 2, Args: h.signalArgs(0, 0, 0, 0)})
		wantErr(t, err, "one per rank needed")
		// Lanes itself refuses too many lanes and nesting.
		d := h.w.devs[0]
		ctx := &blockCtx{l: &launch{dev: d, kernel: "test", grid: 1, threads: 2}, lane: -1}
		wantErr(t, ctx.Lanes(4, func(kernels.Block) error { return nil }), "4 lanes requested with 2 threads per block")
		lane := &blockCtx{l: ctx.l, lane: 0}
		wantErr(t, lane.Lanes(1, func(kernels.Block) error { return nil }), "do not nest")
		var ran []int
		err = ctx.Lanes(2, func(l kernels.Block) error {
			ran = append(ran, l.Lane())
			if l.Lane() == 1 {
				return fmt.Errorf("lane one failed")
			}
			return nil
		})
		wantErr(t, err, "lane one failed")
		if len(ran) != 2 {
			t.Errorf("lanes ran: %v", ran)
		}
		return nil
	})
}

func TestAttributesAndTopology(t *testing.T) {
	s := actor.NewScheduler(actor.Config{})
	w, err := NewWorld(s, Config{World: 3, Multicast: true, SMCount: 78})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SYMMEM_DISABLE_MULTICAST", "")
	t.Setenv("TORCH_SYMM_MEM_DISABLE_MULTICAST", "0")
	a := w.Device(2).Attributes()
	want := device.Attributes{Name: "sim", Index: 2, SMCount: 78, Granularity: device.Granularity, MulticastSupported: true}
	if a != want {
		t.Errorf("attributes %+v, want %+v", a, want)
	}
	for _, env := range []string{"SYMMEM_DISABLE_MULTICAST", "TORCH_SYMM_MEM_DISABLE_MULTICAST"} {
		t.Setenv(env, "1")
		if w.Device(0).Attributes().MulticastSupported {
			t.Errorf("%s=1 does not disable multicast", env)
		}
		t.Setenv(env, "")
	}
	m, err := w.Device(0).NVLinkMatrix()
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(m) != "[[0 18 18] [18 0 18] [18 18 0]]" {
		t.Errorf("fully connected matrix %v", m)
	}
	if got := fmt.Sprint(Ring().Matrix(4)); got != "[[0 18 0 18] [18 0 18 0] [0 18 0 18] [18 0 18 0]]" {
		t.Errorf("ring matrix %v", got)
	}
	if got := fmt.Sprint(None().Matrix(2)); got != "[[0 0] [0 0]]" {
		t.Errorf("none matrix %v", got)
	}
	links := [][]int{{0, 2}, {1, 0}}
	p := Partial(links)
	links[0][1] = 9 // Partial copies
	if got := fmt.Sprint(p.Matrix(2)); got != "[[0 2] [1 0]]" {
		t.Errorf("partial matrix %v", got)
	}
	for _, bad := range []Config{
		{World: 0}, {World: 73}, {World: 2, SMCount: -1},
		{World: 3, Topology: Partial([][]int{{0, 1}, {1, 0}})},
		{World: 2, Topology: Partial([][]int{{1, 1}, {1, 0}})},
		{World: 2, Topology: Partial([][]int{{0, -1}, {1, 0}})},
	} {
		if _, err := NewWorld(s, bad); err == nil {
			t.Errorf("NewWorld(%+v) accepted", bad)
		}
	}
	if w.Device(3) != nil || w.Device(-1) != nil {
		t.Error("out-of-range devices returned")
	}
}

func TestDeviceClose(t *testing.T) {
	w := inTask(t, 2, Config{}, func(w *World) error {
		d := w.Device(0)
		h, err := d.CreatePhysical(device.Granularity)
		if err != nil {
			return err
		}
		if _, err := mapBlock(d, h, device.Granularity); err != nil {
			return err
		}
		if _, err := d.ExportHandle(h); err != nil {
			return err
		}
		if err := d.Close(); err != nil {
			return err
		}
		_, err = d.Reserve(device.Granularity)
		wantErr(t, err, "device is closed")
		wantErr(t, d.Close(), "device is closed")
		return nil
	})
	if w.LiveBytes(0) != 0 || w.OpenFDs(w.PID(0)) != 0 {
		t.Errorf("close left %d bytes and %d fds", w.LiveBytes(0), w.OpenFDs(w.PID(0)))
	}
}

// traceOf runs a world-4 two-shot all-reduce under seed and returns the
// trace hash and the result.
func traceOf(t *testing.T, seed uint64) (string, []byte) {
	h := newHarness(t, 4, seed)
	rng := rand.New(rand.NewPCG(5, 6))
	c := reduceCase{v: variants[2], dt: device.BFloat16, op: device.Sum, numel: 4096, blocks: 2, thread: 64}
	inputs := make([][]byte, 4)
	for r := range inputs {
		inputs[r] = randomInput(rng, c.dt, int(c.numel))
	}
	res, err := h.allReduce(c, inputs)
	if err != nil {
		t.Fatal(err)
	}
	return h.s.Trace().Hash(), res[0]
}

func TestSameSeedSameTrace(t *testing.T) {
	h1, r1 := traceOf(t, 11)
	h2, r2 := traceOf(t, 11)
	h3, r3 := traceOf(t, 12)
	if h1 != h2 {
		t.Errorf("same seed, different traces: %s vs %s", h1, h2)
	}
	if h1 == h3 {
		t.Error("different seeds gave the same trace: the schedule does not depend on the seed")
	}
	if !bytes.Equal(r1, r2) || !bytes.Equal(r1, r3) {
		t.Error("results differ between schedules")
	}
}

// TestGridStrideAndLargeWorlds runs many blocks of few threads (several
// grid-stride iterations per block) and world sizes beyond 8.
func TestGridStrideAndLargeWorlds(t *testing.T) {
	worlds := []int{3, 13, 72}
	if testing.Short() {
		worlds = worlds[:2] // world 72 runs ~10^4 lane tasks: seconds under -race
	}
	for _, world := range worlds {
		h := newHarness(t, world, uint64(world))
		rng := rand.New(rand.NewPCG(uint64(world), 1))
		threads := max(32, (world+31)/32*32)
		numel := uint64(3 * 4 * threads * 3) // float32, 16-byte vectors: 3 blocks x 3 iterations
		blocks := 3
		if world == 72 {
			// The largest world, kept small: every lane is a task.
			numel, blocks = 4*100, 1
		}
		for _, v := range variants {
			c := reduceCase{v: v, dt: device.Float32, op: device.Sum, numel: numel, offset: 16, blocks: blocks, thread: threads}
			inputs := make([][]byte, world)
			for r := range inputs {
				inputs[r] = randomInput(rng, c.dt, int(c.numel))
			}
			res, err := h.allReduce(c, inputs)
			if err != nil {
				t.Fatalf("world %d %v: %v", world, c, err)
			}
			checkResults(t, c, inputs, res)
			if world == 72 {
				break
			}
		}
	}
}

// TestZeroNumel returns at once without touching signals.
func TestZeroNumel(t *testing.T) {
	h := newHarness(t, 2, 1)
	errs := h.ranks(func(r int) error {
		if r == 1 {
			return nil // the peer never shows up: numel 0 must not wait for it
		}
		a := h.allReduceArgs(r, device.Float32, device.Sum, 0, 0)
		a.Output = h.local[r] + outOff
		return h.launch(r, kernels.OneShotAllReduce, 1, 32, a)
	})
	must(t, errs)
}
