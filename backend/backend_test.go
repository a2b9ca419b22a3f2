package backend

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/actor/store"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/device/cuda"
	"github.com/symmem/symmem/launch"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/simjob"
)

func TestChooseSimulator(t *testing.T) {
	b, err := Choose(Options{Device: "sim", World: 3, Seed: 5, Command: "allreduce"})
	if err != nil {
		t.Fatal(err)
	}
	if b.Kind() != Sim || !b.Simulated() || b.World() != 3 || b.Rank() != -1 || b.Kind().String() != "sim" {
		t.Fatalf("backend %v world %d rank %d", b.Kind(), b.World(), b.Rank())
	}
	ran := make([]bool, 3)
	res, err := b.Run(func(r *rank.Rank) error {
		ran[r.ID()] = true
		if r.ID() == 2 {
			return errors.New("rank 2 refuses")
		}
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "rank 2 refuses") {
		t.Errorf("run = %v, want rank 2's error", err)
	}
	if res.Trace == "" || !ran[0] || !ran[1] || !ran[2] {
		t.Errorf("trace %q, ranks run %v", res.Trace, ran)
	}
	again, _ := b.Run(func(*rank.Rank) error { return nil })
	if again.Trace == "" {
		t.Error("no trace")
	}
}

func TestChooseRefuses(t *testing.T) {
	if _, err := Choose(Options{Device: "tpu", World: 2}); err == nil || !strings.Contains(err.Error(), `--device "tpu"`) {
		t.Errorf("device tpu: %v", err)
	}
	t.Setenv(launch.EnvRank, "1")
	t.Setenv(launch.EnvWorld, "4")
	_, err := Choose(Options{Device: "sim", World: 2, Command: "bench"})
	if err == nil || !strings.Contains(err.Error(), "--device sim under symmem launch") || !strings.Contains(err.Error(), "'symmem bench --world 4'") {
		t.Errorf("sim under launch: %v", err)
	}
}

// TestChooseUnderLauncher: with the launcher's environment, cuda runs this
// process's rank in the launcher's world; an explicit other world is an
// error. (Nothing here opens a GPU.)
func TestChooseUnderLauncher(t *testing.T) {
	for k, v := range map[string]string{
		launch.EnvRank: "1", launch.EnvWorld: "4", launch.EnvLocalRank: "1",
		launch.EnvMasterAddr: "127.0.0.1", launch.EnvMasterPort: "1",
	} {
		t.Setenv(k, v)
	}
	b, err := Choose(Options{Device: "cuda", World: 2})
	if err != nil {
		t.Fatal(err)
	}
	if b.Kind() != Process || b.World() != 4 || b.Rank() != 1 || b.Simulated() || b.Kind().String() != "cuda multi-process" {
		t.Errorf("backend %v world %d rank %d", b.Kind(), b.World(), b.Rank())
	}
	if _, err := Choose(Options{Device: "cuda", World: 2, WorldSet: true}); err == nil || !strings.Contains(err.Error(), "--world 2 but the launcher started 4 ranks") {
		t.Errorf("world 2 under a launcher of 4: %v", err)
	}
}

// testSystem is the actor system of the Stores the tests serve: a process
// has one remote endpoint, on one system.
var testSystem = actor.NewSystem()

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{Sim: "sim", InProcess: "cuda in-process", Process: "cuda multi-process", Kind(7): "Kind(7)"} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", int(k), got, want)
		}
	}
	if _, err := (&Backend{kind: Kind(7)}).Run(nil); err == nil || err.Error() != "backend Kind(7) cannot run ranks" {
		t.Errorf("Run of an unknown kind: %v", err)
	}
}

// TestChooseCUDA: without a launcher, cuda checks the GPUs the driver
// sees; a launcher's environment that does not parse is an error.
func TestChooseCUDA(t *testing.T) {
	_, err := Choose(Options{Device: "cuda", World: 2})
	if _, derr := cuda.DeviceCount(); derr != nil {
		if !errors.Is(err, cuda.ErrNoDriver) || !strings.HasPrefix(err.Error(), "--device cuda: ") {
			t.Errorf("cuda without a driver: %v, want --device cuda and ErrNoDriver", err)
		}
		if _, err := OpenGPU(0); !errors.Is(err, cuda.ErrNoDriver) {
			t.Errorf("OpenGPU without a driver: %v, want ErrNoDriver", err)
		}
	}
	t.Setenv(launch.EnvRank, "1")
	t.Setenv(launch.EnvWorld, "two")
	_, err = Choose(Options{Device: "cuda", World: 2})
	if err == nil || !strings.HasPrefix(err.Error(), `environment WORLD_SIZE="two"`) {
		t.Errorf("cuda under a launcher whose world does not parse: %v", err)
	}
}

func TestRunReportsAFailedSimulation(t *testing.T) {
	b, err := Choose(Options{Device: "sim", World: 2, Seed: 5, Sim: func(c *simjob.Config) { c.World = 0 }})
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Run(func(*rank.Rank) error { return nil })
	if err == nil || err.Error() != "simulation failed (replay with --seed 5): simulate: world size 0 out of range [1, 72]" {
		t.Errorf("run of a simulation that cannot start: %v", err)
	}
}

// stubDevice is the least a rank needs of a device when its program
// touches nothing.
type stubDevice struct {
	device.Device
	index  int
	mu     sync.Mutex
	closed int
}

func (d *stubDevice) Attributes() device.Attributes {
	return device.Attributes{Name: "stub", Index: d.index, Granularity: 1 << 21}
}
func (d *stubDevice) NewStream() (device.Stream, error)   { return 1, nil }
func (d *stubDevice) DestroyStream(s device.Stream) error { return nil }
func (d *stubDevice) Synchronize(s device.Stream) error   { return nil }
func (d *stubDevice) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed++
	return nil
}

// TestRunInProcess: every rank runs on the GPU its opener gives, in this
// process; a rank whose GPU does not open reports it.
func TestRunInProcess(t *testing.T) {
	var mu sync.Mutex
	devs := map[int]*stubDevice{}
	b := &Backend{kind: InProcess, o: Options{World: 3, Timeout: 10 * time.Second}, openGPU: func(local int) (device.Device, error) {
		if local == 2 {
			return nil, errors.New("GPU 2 is gone")
		}
		mu.Lock()
		defer mu.Unlock()
		devs[local] = &stubDevice{index: local}
		return devs[local], nil
	}}
	ran := make([]bool, 3)
	_, err := b.Run(func(r *rank.Rank) error {
		mu.Lock()
		defer mu.Unlock()
		ran[r.ID()] = r.Device() == devs[r.ID()]
		return nil
	})
	if err == nil || err.Error() != "rank 2: open device 2: GPU 2 is gone" {
		t.Errorf("Run = %v, want rank 2's failure to open its GPU", err)
	}
	if !ran[0] || !ran[1] || ran[2] {
		t.Errorf("ranks that ran on their own GPU: %v, want 0 and 1", ran)
	}
	for i, d := range devs {
		if d.closed != 1 {
			t.Errorf("device %d closed %d times, want once", i, d.closed)
		}
	}
}

// TestRunLaunchedRank: a launched rank opens the GPU of its local rank,
// lets WrapProcess replace its program and device, runs through the
// launcher's Store and closes the GPU.
func TestRunLaunchedRank(t *testing.T) {
	token, err := store.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := store.Serve(testSystem, "127.0.0.1:0", token)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	env := launch.ProcessEnv{Rank: 0, World: 1, LocalRank: 3, StoreAddr: srv.Addr(), Token: token,
		JobID: fmt.Sprintf("backend-test-%d", time.Now().UnixNano())}
	gpu := &stubDevice{index: 3}
	wrapped := &stubDevice{index: 9}
	var opened []int
	var events []string
	b := &Backend{kind: Process, env: env, o: Options{World: 1, Timeout: 10 * time.Second,
		WrapProcess: func(r int, program rank.Program, dev device.Device) (rank.Program, device.Device) {
			events = append(events, fmt.Sprintf("wrap rank %d on %s %d", r, dev.Attributes().Name, dev.Attributes().Index))
			return func(rk *rank.Rank) error {
				events = append(events, fmt.Sprintf("wrapped program on device %d", rk.Device().Attributes().Index))
				return program(rk)
			}, wrapped
		}},
		openGPU: func(local int) (device.Device, error) { opened = append(opened, local); return gpu, nil },
	}
	if b.Rank() != 0 {
		t.Errorf("Rank() = %d", b.Rank())
	}
	fails := errors.New("the program fails")
	_, err = b.Run(func(*rank.Rank) error { events = append(events, "program"); return fails })
	if !errors.Is(err, fails) {
		t.Errorf("Run = %v, want the program's error", err)
	}
	want := []string{"wrap rank 0 on stub 3", "wrapped program on device 9", "program"}
	if fmt.Sprint(events) != fmt.Sprint(want) || fmt.Sprint(opened) != "[3]" || gpu.closed != 1 {
		t.Errorf("events %q, opened %v, GPU closed %d times; want %q, [3], once", events, opened, gpu.closed, want)
	}

	b.openGPU = func(int) (device.Device, error) { return nil, errors.New("no GPU 3") }
	b.env.Rank = 5
	if _, err := b.Run(nil); err == nil || err.Error() != "rank 5: no GPU 3" {
		t.Errorf("Run when the GPU does not open: %v", err)
	}
}

func TestOpenGPU(t *testing.T) {
	image := filepath.Join(t.TempDir(), "kernels.fatbin")
	if err := os.WriteFile(image, []byte("an image"), 0o600); err != nil {
		t.Fatal(err)
	}
	count := func(n int, err error) func() (int, error) { return func() (int, error) { return n, err } }
	env := func(path string) func(string) string {
		return func(k string) string {
			if k == "SYMMEM_KERNEL_IMAGE" {
				return path
			}
			return ""
		}
	}
	var gotIndex int
	var gotOpts cuda.Options
	open := func(i int, o cuda.Options) (device.Device, error) {
		gotIndex, gotOpts = i, o
		return &stubDevice{index: i}, nil
	}
	if d, err := openGPU(5, count(2, nil), env(""), open); err != nil || gotIndex != 1 || gotOpts.Module != nil || d.Attributes().Index != 1 {
		t.Errorf("local rank 5 on 2 GPUs: device %v, %v; opened %d with %+v; want GPU 1 with the embedded image", d, err, gotIndex, gotOpts)
	}
	if _, err := openGPU(0, count(1, nil), env(image), open); err != nil || string(gotOpts.Module) != "an image" {
		t.Errorf("SYMMEM_KERNEL_IMAGE: %v, module %q", err, gotOpts.Module)
	}
	for _, c := range []struct {
		count func() (int, error)
		path  string
		want  string
	}{
		{count(0, errors.New("no driver")), "", "no driver"},
		{count(0, nil), "", "cuda: the driver sees no GPU"},
		{count(1, nil), filepath.Join(t.TempDir(), "missing"), "SYMMEM_KERNEL_IMAGE: open "},
	} {
		if _, err := openGPU(0, c.count, env(c.path), open); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("openGPU: %v, want %q", err, c.want)
		}
	}
}

func TestCheckGPUs(t *testing.T) {
	count := func(n int, err error) func() (int, error) { return func() (int, error) { return n, err } }
	for _, c := range []struct {
		world   int
		count   func() (int, error)
		overlap bool
		want    string
	}{
		{2, count(2, nil), false, ""},
		{4, count(2, nil), true, ""},
		{4, count(2, nil), false, "--device cuda: 4 ranks on 2 GPUs: set SYMMEM_ALLOW_OVERLAPPING_DEVICES=1 to place them round-robin, sharing GPUs"},
		{1, count(0, nil), false, "--device cuda: the driver sees no GPU"},
		{1, count(0, errors.New("no driver")), false, "--device cuda: no driver"},
	} {
		err := checkGPUs(c.world, c.count, c.overlap)
		if (err == nil) != (c.want == "") || (err != nil && err.Error() != c.want) {
			t.Errorf("checkGPUs(world %d, overlap %v) = %v, want %q", c.world, c.overlap, err, c.want)
		}
	}
}
