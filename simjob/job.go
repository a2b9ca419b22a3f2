package simjob

import (
	"errors"
	"fmt"
	"time"

	pa "github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/actor/store"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/device/sim/race"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/rank/ipc"
)

// Config configures a simulated job: W ranks, one per simulated device,
// under one seeded scheduler.
type Config struct {
	World    int
	Seed     uint64
	Strategy actor.Strategy // nil: a random walk seeded with Seed
	MaxSteps int64          // 0: no bound
	// Timeout bounds every wait in virtual time (0: rank.DefaultTimeout).
	Timeout time.Duration
	Logger  *zap.Logger
	// Device configures the simulated devices (its World is set to World).
	Device sim.Config
	// Hosts names each rank's host (default: every rank on "sim-host").
	Hosts []string
	// AllowOverlappingDevices lets several ranks of a host share a device.
	AllowOverlappingDevices bool
	SignalPadSize           uint64 // 0: rank.DefaultSignalPadSize
	KeepTrace               bool   // keep every trace event in Result.Events
	// WrapDevice, when set, replaces each rank's device (fault injection,
	// attribute overrides in tests).
	WrapDevice func(rank int, d device.Device) device.Device
	// WrapStore, when set, replaces each rank's Store client (fault
	// injection).
	WrapStore func(rank int, c store.Client) store.Client
	// Setup, when set, is called with the job's parts once they exist and
	// before any rank is built (fault injection, observers). An error
	// aborts the simulation.
	Setup func(Job) error
	// System, when set, is the actor system the job's actors live in,
	// instead of a new one per run (building one costs more than a small
	// run). The job unregisters its named actors when it ends. Simulations
	// running at the same time must not share a system.
	System *pa.ActorSystem
	// RaceDetector runs the happens-before race detector of package race
	// over every simulated memory access; races land in Result.Races.
	RaceDetector bool
}

// Job is what a simulated job runs on, as [Config].Setup sees it.
type Job struct {
	Scheduler *actor.Scheduler
	World     *sim.World
	Network   *ipc.SimNetwork
	Store     *store.Server
}

// Result is the outcome of a simulated job.
type Result struct {
	Trace string // trace hash: identifies the schedule
	Steps int64  // scheduling steps taken
	// Instructions is the lane-instructions the PTX launches executed
	// (sim.World.PTXInstructions); 0 with the Go twins.
	Instructions uint64
	// InLockstep is how many of them warps executed in lockstep
	// (sim.World.PTXLockstepInstructions).
	InLockstep  uint64
	VirtualTime time.Duration // virtual time at the end
	Errs        []error       // each rank's error (nil when it succeeded)
	Events      []actor.Event // every trace event, when Config.KeepTrace
	// Races lists the data races found when Config.RaceDetector is set;
	// nil when none were found.
	Races *race.Error
	// Hang is the wait-for graph of the signal waits blocked when the run
	// deadlocked or when a signal wait first timed out; nil when neither
	// happened.
	Hang *race.WaitFor
}

// Err joins the ranks' errors and the races found.
func (r Result) Err() error {
	errs := r.Errs
	if r.Races != nil {
		errs = append(append([]error(nil), errs...), r.Races)
	}
	return errors.Join(errs...)
}

// startProgram is the message that tells a Rank actor to run its program.
type startProgram struct{}

// Simulate runs program on cfg.World simulated ranks. The returned error
// reports a failure of the simulation itself (a deadlock naming what each
// blocked task waits for, a panic, the step limit); ranks' own errors are in
// Result.Errs. The same configuration and seed give the same trace.
func Simulate(cfg Config, program rank.Program) (Result, error) {
	if cfg.World < 1 || cfg.World > 72 {
		return Result{}, fmt.Errorf("simulate: world size %d out of range [1, 72]", cfg.World)
	}
	if cfg.Hosts != nil && len(cfg.Hosts) != cfg.World {
		return Result{}, fmt.Errorf("simulate: %d host names for %d ranks", len(cfg.Hosts), cfg.World)
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = rank.DefaultTimeout
	}
	sched := actor.NewScheduler(actor.Config{Seed: cfg.Seed, Strategy: cfg.Strategy, MaxSteps: cfg.MaxSteps, KeepEvents: cfg.KeepTrace})
	sys := cfg.System
	if sys == nil {
		sys = actor.NewSystem()
	}
	var named []*pa.PID
	defer func() {
		for _, pid := range named {
			sys.ProcessRegistry.Remove(pid)
		}
	}()
	srv, err := store.NewServer(sched, sys, store.WithDispatcher(sched.Dispatcher()))
	if err != nil {
		return Result{}, fmt.Errorf("simulate: store: %w", err)
	}
	devCfg := cfg.Device
	devCfg.World = cfg.World
	world, err := sim.NewWorld(sched, devCfg)
	if err != nil {
		return Result{}, fmt.Errorf("simulate: %w", err)
	}
	net := ipc.NewSimNetwork(sched, world)
	if cfg.Setup != nil {
		if err := cfg.Setup(Job{Scheduler: sched, World: world, Network: net, Store: srv}); err != nil {
			return Result{}, fmt.Errorf("simulate: setup: %w", err)
		}
	}
	var detector *race.Detector
	if cfg.RaceDetector {
		detector = race.New(world) // after Setup: it chains to Setup's observer
	}
	pids := make([]int, cfg.World)
	for i := range pids {
		pids[i] = world.PID(i)
	}
	res := Result{Errs: make([]error, cfg.World)}
	for i := range cfg.World {
		ch, err := net.Open(pids[i], pids)
		if err != nil {
			return Result{}, fmt.Errorf("simulate: rank %d: %w", i, err)
		}
		dev := world.Device(i)
		if cfg.WrapDevice != nil {
			dev = cfg.WrapDevice(i, dev)
		}
		var client store.Client = srv.Connect(fmt.Sprintf("rank%d", i), timeout)
		if cfg.WrapStore != nil {
			client = cfg.WrapStore(i, client)
		}
		if detector != nil {
			client = syncedStore(client, detector)
		}
		host := "sim-host"
		if cfg.Hosts != nil {
			host = cfg.Hosts[i]
		}
		p := rank.Params{
			ID: i, World: cfg.World, Host: host, PID: pids[i], Device: dev, Runtime: sched,
			Store: client, IPC: ch, Logger: cfg.Logger,
			Timeout: timeout, AllowOverlappingDevices: cfg.AllowOverlappingDevices, SignalPadSize: cfg.SignalPadSize,
		}
		props := pa.PropsFromFunc(func(c pa.Context) {
			if _, ok := c.Message().(startProgram); ok {
				res.Errs[i] = rank.Run(p, program)
			}
		}, pa.WithDispatcher(sched.LabeledDispatcher(actor.Label{Kind: actor.ProgramTask, Name: fmt.Sprintf("rank%d", i), Rank: i})))
		pid, err := sys.Root.SpawnNamed(props, fmt.Sprintf("rank%d", i))
		if err != nil {
			return Result{}, fmt.Errorf("simulate: spawn rank %d: %w", i, err)
		}
		named = append(named, pid)
		sys.Root.Send(pid, startProgram{})
	}
	runErr := sched.Run()
	res.Trace = sched.Trace().Hash()
	res.Steps = sched.Steps()
	res.Instructions = world.PTXInstructions()
	res.InLockstep = world.PTXLockstepInstructions()
	res.VirtualTime = sched.Now()
	res.Events = sched.Trace().Events()
	if detector != nil {
		if err, ok := detector.Err().(*race.Error); ok {
			res.Races = err
		}
	}
	var dl *actor.DeadlockError
	if errors.As(runErr, &dl) {
		res.Hang = race.NewWaitFor("deadlock", dl.Now, world.SignalWaits(), dl)
	} else if waits, at := world.FirstSignalTimeout(); waits != nil {
		res.Hang = race.NewWaitFor("signal timeout", at, waits, nil)
	}
	return res, runErr
}
