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
