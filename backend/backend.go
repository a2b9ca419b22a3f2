// Package backend chooses, once, where a job's ranks run: on the
// simulator, on GPUs as goroutines of this process, or on a GPU as one rank
// process of a job started by `symmem launch`. Commands describe what they
// want (a device and a world) and hand their rank program to the chosen
// backend; they need not know how each backend builds and runs ranks.
package backend

import (
	"errors"
	"fmt"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/device/cuda"
	"github.com/symmem/symmem/launch"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/simjob"
)

// Kind is where a backend runs ranks.
type Kind int

const (
	// Sim runs every rank on the simulator in this process.
	Sim Kind = iota
	// InProcess runs every rank as a goroutine of this process, each on a
	// GPU (round-robin when there are more ranks than GPUs).
	InProcess
	// Process runs this process's one rank of a launched job.
	Process
)

// String names the kind as the commands print it.
func (k Kind) String() string {
	switch k {
	case Sim:
		return "sim"
	case InProcess:
		return "cuda in-process"
	case Process:
		return "cuda multi-process"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Options describe the job a command wants.
type Options struct {
	Device string // "sim" or "cuda"
	// World is the number of ranks. Under a launcher the launcher's world
	// is used; WorldSet says World was asked for explicitly, which makes a
	// launcher of another size an error.
	World    int
	WorldSet bool
	Seed     uint64        // the simulator's seed
	Timeout  time.Duration // every wait (virtual time on the simulator); 0: rank.DefaultTimeout
	Logger   *zap.Logger
	Command  string // the command, for messages ("allreduce")
	// Sim, when set, adjusts the simulated job's configuration.
	Sim func(*simjob.Config)
	// WrapProcess, when set, replaces the program and device of a launched
	// rank process (fault hooks for tests).
	WrapProcess func(rank int, program rank.Program, dev device.Device) (rank.Program, device.Device)
}

// Backend runs rank programs where [Choose] decided.
type Backend struct {
	kind Kind
	o    Options
	env  launch.ProcessEnv
	// openGPU opens the GPU of a local rank: [OpenGPU], or a test's.
	openGPU func(local int) (device.Device, error)
}

// Choose picks the backend for o from the device and the process's
// environment: the simulator for "sim" (refused under a launcher, where
// every process would run a separate simulation), a launched rank process
// for "cuda" under `symmem launch`, ranks in this process otherwise
// (checked against the GPUs the driver sees).
func Choose(o Options) (*Backend, error) {
	switch o.Device {
	case "sim":
		world := os.Getenv(launch.EnvWorld)
		if err := RefuseUnderLaunch("--device sim", fmt.Sprintf("run 'symmem %s --world %s' without launch, or launch it with --device cuda", o.Command, world)); err != nil {
			return nil, err
		}
		return &Backend{kind: Sim, o: o}, nil
	case "cuda":
		env, launched, err := launch.ProcessEnvFromOS()
		if err != nil {
			return nil, err
		}
		if launched {
			if o.WorldSet && o.World != env.World {
				return nil, fmt.Errorf("--world %d but the launcher started %d ranks", o.World, env.World)
			}
			o.World = env.World
			return &Backend{kind: Process, o: o, env: env, openGPU: OpenGPU}, nil
		}
		if err := CheckGPUs(o.World); err != nil {
			return nil, err
		}
		return &Backend{kind: InProcess, o: o, openGPU: OpenGPU}, nil
	}
	return nil, fmt.Errorf("--device %q: want sim or cuda", o.Device)
}

// RefuseUnderLaunch fails in a rank process started by symmem launch: what
// names a job that runs every rank on the simulator in this process, which
// each of the launcher's processes would run separately; hint says what to
// do instead.
func RefuseUnderLaunch(what, hint string) error {
	if os.Getenv(launch.EnvRank) == "" {
		return nil
	}
	return fmt.Errorf("%s under symmem launch: the simulator runs all ranks in one process, "+
		"so each of the launcher's %s processes would run a separate simulation; %s", what, os.Getenv(launch.EnvWorld), hint)
}

// Kind is where the backend runs ranks.
func (b *Backend) Kind() Kind { return b.kind }

// World is the job's number of ranks.
func (b *Backend) World() int { return b.o.World }

// Rank is this process's rank in a launched job, or -1 when this process
// runs every rank.
func (b *Backend) Rank() int {
	if b.kind == Process {
		return b.env.Rank
	}
	return -1
}

// Simulated reports whether the ranks run on the simulator.
func (b *Backend) Simulated() bool { return b.kind == Sim }

// Outcome is what a run produced besides the program's own results.
type Outcome struct {
	// Trace is the simulated schedule's trace hash ("" off the simulator).
	Trace string
}

// Run runs program on the backend's ranks (only this process's rank under
// a launcher) and returns every rank's failure, joined. A failure of the
// simulation itself says how to replay it.
func (b *Backend) Run(program rank.Program) (Outcome, error) {
	switch b.kind {
	case Sim:
		cfg := simjob.Config{World: b.o.World, Seed: b.o.Seed, Timeout: b.o.Timeout, Logger: b.o.Logger}
		if b.o.Sim != nil {
			b.o.Sim(&cfg)
		}
		res, err := simjob.Simulate(cfg, program)
		if err != nil {
			return Outcome{}, fmt.Errorf("simulation failed (replay with --seed %d): %w", b.o.Seed, err)
		}
		return Outcome{Trace: res.Trace}, res.Err()
	case InProcess:
		return Outcome{}, errors.Join(rank.RunInProcess(rank.LiveConfig{
			World: b.o.World, Open: b.openGPU, Logger: b.o.Logger, Timeout: b.o.Timeout,
			AllowOverlappingDevices: launch.AllowOverlappingFromEnv(),
		}, program)...)
	case Process:
		dev, err := b.openGPU(b.env.LocalRank)
		if err != nil {
			return Outcome{}, fmt.Errorf("rank %d: %w", b.env.Rank, err)
		}
		defer dev.Close()
		rdev := dev
		if b.o.WrapProcess != nil {
			program, rdev = b.o.WrapProcess(b.env.Rank, program, dev)
		}
		return Outcome{}, launch.RunProcess(b.env, rdev, b.o.Logger, b.o.Timeout, program)
	}
	return Outcome{}, fmt.Errorf("backend %v cannot run ranks", b.kind)
}

// OpenGPU opens the device of the rank with local index local: GPU local
// modulo the GPUs the driver sees, so that ranks beyond the GPU count share
// GPUs round-robin (which needs SYMMEM_ALLOW_OVERLAPPING_DEVICES, see
// [CheckGPUs]). SYMMEM_KERNEL_IMAGE names a kernel image (fatbin) to load
// instead of the embedded one: a GPU machine can try freshly built kernels
// without rebuilding the command.
func OpenGPU(local int) (device.Device, error) {
	return openGPU(local, cuda.DeviceCount, os.Getenv, cuda.Open)
}

// openGPU is OpenGPU through the given driver calls and environment.
func openGPU(local int, count func() (int, error), getenv func(string) string,
	open func(index int, opts cuda.Options) (device.Device, error)) (device.Device, error) {
	n, err := count()
	if err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, errors.New("cuda: the driver sees no GPU")
	}
	var opts cuda.Options
	if path := getenv("SYMMEM_KERNEL_IMAGE"); path != "" {
		img, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("SYMMEM_KERNEL_IMAGE: %w", err)
		}
		opts.Module = img
	}
	return open(local%n, opts)
}

// CheckGPUs fails at once without a driver, or with fewer GPUs than world
// ranks unless overlapping devices are allowed (the ranks then share the
// GPUs round-robin and split their multiprocessors).
func CheckGPUs(world int) error {
	return checkGPUs(world, cuda.DeviceCount, launch.AllowOverlappingFromEnv())
}

// checkGPUs is CheckGPUs through count, with overlapping devices allowed
// or not.
func checkGPUs(world int, count func() (int, error), overlap bool) error {
	n, err := count()
	if err != nil {
		return fmt.Errorf("--device cuda: %w", err)
	}
	if n < 1 {
		return errors.New("--device cuda: the driver sees no GPU")
	}
	if world > n && !overlap {
		return fmt.Errorf("--device cuda: %d ranks on %d GPUs: set SYMMEM_ALLOW_OVERLAPPING_DEVICES=1 to place them round-robin, sharing GPUs", world, n)
	}
	return nil
}
