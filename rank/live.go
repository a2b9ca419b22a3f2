package rank

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/actor/store"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/rank/ipc"
)

// OpenDevice opens the device a rank runs on (its local index on the host).
type OpenDevice func(local int) (device.Device, error)

// LiveConfig configures ranks on real devices in this process.
type LiveConfig struct {
	World  int
	Open   OpenDevice
	Logger *zap.Logger
	// Timeout bounds every wait (0: DefaultTimeout).
	Timeout                 time.Duration
	AllowOverlappingDevices bool
	SignalPadSize           uint64
}

// RunInProcess runs program on cfg.World ranks, one goroutine and one device
// each, in this process. They meet through an in-process Store and pass
// file descriptors over Unix sockets addressed by per-rank ids. It returns
// each rank's error.
func RunInProcess(cfg LiveConfig, program Program) []error {
	errs := make([]error, max(cfg.World, 1))
	if cfg.World < 1 {
		errs[0] = fmt.Errorf("run: world size %d, want at least 1", cfg.World)
		return errs
	}
	if cfg.Open == nil {
		errs[0] = errors.New("run: no device opener")
		return errs
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	rt := actor.NewLive()
	sys := actor.NewSystem()
	srv, err := store.NewServer(rt, sys)
	if err != nil {
		errs[0] = fmt.Errorf("run: store: %w", err)
		return errs
	}
	defer srv.Close()
	// In-process ranks are told apart by ids above any real pid.
	base := 1 << 22
	ids := make([]int, cfg.World)
	for i := range ids {
		ids[i] = base + os.Getpid()%1000*100 + i
	}
	job := fmt.Sprintf("inproc-%d-%d", os.Getpid(), time.Now().UnixNano())
	var wg sync.WaitGroup
	for i := range cfg.World {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dev, err := cfg.Open(i)
			if err != nil {
				errs[i] = fmt.Errorf("rank %d: open device %d: %w", i, i, err)
				return
			}
			defer dev.Close()
			ch, err := ipc.Open(ids, ipc.Options{JobID: job, Pid: ids[i]})
			if err != nil {
				errs[i] = fmt.Errorf("rank %d: ipc: %w", i, err)
				return
			}
			defer ch.Close()
			host, _ := os.Hostname()
			errs[i] = Run(Params{
				ID: i, World: cfg.World, Host: host, PID: ids[i], Device: dev, Runtime: rt,
				Store: srv.Connect("rank"+strconv.Itoa(i), timeout), IPC: ch, Logger: cfg.Logger,
				Timeout: timeout, AllowOverlappingDevices: cfg.AllowOverlappingDevices, SignalPadSize: cfg.SignalPadSize,
			}, program)
		}()
	}
	wg.Wait()
	return errs
}

// ProcessEnv is what a rank process learns from its launcher's environment
// (the variables torchrun sets, plus the Store token and IPC job id).
type ProcessEnv struct {
	Rank, World, LocalRank int
	StoreAddr              string // MASTER_ADDR:MASTER_PORT
	Token                  string // SYMMEM_STORE_TOKEN
	JobID                  string // SYMMEM_IPC_JOB
}

// Environment variables a launcher sets for each rank process.
const (
	EnvRank       = "RANK"
	EnvWorld      = "WORLD_SIZE"
	EnvLocalRank  = "LOCAL_RANK"
	EnvMasterAddr = "MASTER_ADDR"
	EnvMasterPort = "MASTER_PORT"
	EnvToken      = "SYMMEM_STORE_TOKEN"
	EnvStoreActor = "SYMMEM_STORE_ACTOR"
)

// ProcessEnvFromOS reads the launcher's variables; ok is false when RANK is
// not set (not under a launcher).
func ProcessEnvFromOS() (env ProcessEnv, ok bool, err error) {
	if os.Getenv(EnvRank) == "" {
		return ProcessEnv{}, false, nil
	}
	num := func(name string) int {
		if err != nil {
			return 0
		}
		var v int
		v, err = strconv.Atoi(os.Getenv(name))
		if err != nil {
			err = fmt.Errorf("environment %s=%q: %w", name, os.Getenv(name), err)
		}
		return v
	}
	env.Rank, env.World, env.LocalRank = num(EnvRank), num(EnvWorld), num(EnvLocalRank)
	if err != nil {
		return env, true, err
	}
	addr, port := os.Getenv(EnvMasterAddr), os.Getenv(EnvMasterPort)
	if addr == "" || port == "" {
		return env, true, fmt.Errorf("environment: %s and %s must be set", EnvMasterAddr, EnvMasterPort)
	}
	env.StoreAddr = addr + ":" + port
	if a := os.Getenv(EnvStoreActor); a != "" {
		env.StoreAddr += "/" + a
	}
	env.Token = os.Getenv(EnvToken)
	env.JobID = os.Getenv(ipc.JobEnv)
	if env.World < 1 || env.Rank < 0 || env.Rank >= env.World {
		return env, true, fmt.Errorf("environment: rank %d of world %d", env.Rank, env.World)
	}
	return env, true, nil
}

// RunProcess runs program as one rank of a multi-process job: it dials the
// launcher's Store, learns every rank's pid through it, opens its IPC socket
// and runs the rank on dev.
//
// Meanwhile it watches the Store for [FailureKey], where the launcher
// reports the first rank process that died or failed. Once it appears, the
// failure is logged at error level and the rank's Store waits and waits for
// its stream ([Rank.Synchronize], blocking collectives) return a
// [*PeerFailedError] naming the failed rank instead of running into their
// timeout. Waits that do not go through the Store or the stream (file
// descriptor passing, the rank's cleanup) keep their own timeouts.
func RunProcess(env ProcessEnv, dev device.Device, log *zap.Logger, timeout time.Duration, program Program) error {
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	raw, closeStore, err := store.Dial(env.StoreAddr, env.Token, timeout)
	if err != nil {
		return fmt.Errorf("rank %d: dial store %s: %w", env.Rank, env.StoreAddr, err)
	}
	defer closeStore()
	watch := watchFailures(raw, env.Rank, watchPoll, log)
	defer watch.Stop()
	st := abortable(raw, watch.ab.ctx)
	all := make([]int, env.World)
	for i := range all {
		all[i] = i
	}
	ex, err := store.NewExchange(st, "launch", store.Group{Name: "pids", Ranks: all}, env.Rank)
	if err != nil {
		return fmt.Errorf("rank %d: %w", env.Rank, err)
	}
	got, err := ex.AllGather([]byte(fmt.Sprintf("%010d", os.Getpid())))
	if err != nil {
		return fmt.Errorf("rank %d: exchange pids: %w", env.Rank, err)
	}
	pids := make([]int, env.World)
	for i, b := range got {
		if pids[i], err = strconv.Atoi(string(b)); err != nil {
			return fmt.Errorf("rank %d: rank %d's pid %q: %w", env.Rank, i, b, err)
		}
	}
	ch, err := ipc.Open(pids, ipc.Options{JobID: env.JobID})
	if err != nil {
		return fmt.Errorf("rank %d: ipc: %w", env.Rank, err)
	}
	defer ch.Close()
	host, _ := os.Hostname()
	return Run(Params{
		ID: env.Rank, World: env.World, Host: host, PID: os.Getpid(), Device: dev, Runtime: actor.NewLive(),
		Store: st, Abort: watch.ab.ctx, IPC: ch, Logger: log, Timeout: timeout,
		AllowOverlappingDevices: AllowOverlappingFromEnv(),
	}, program)
}

// AllowOverlappingFromEnv reads SYMMEM_ALLOW_OVERLAPPING_DEVICES and
// TORCH_SYMM_MEM_ALLOW_OVERLAPPING_DEVICES.
func AllowOverlappingFromEnv() bool {
	for _, k := range []string{"SYMMEM_ALLOW_OVERLAPPING_DEVICES", "TORCH_SYMM_MEM_ALLOW_OVERLAPPING_DEVICES"} {
		if v := os.Getenv(k); v != "" && v != "0" {
			return true
		}
	}
	return false
}
