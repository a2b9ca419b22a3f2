package launch

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/actor/store"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/rank/ipc"
)

// RunProcess runs program as one rank of a multi-process job: it dials the
// launcher's Store, learns every rank's pid through it, opens its IPC socket
// and runs the rank on dev.
//
// Meanwhile it watches the Store for [FailureKey], where the launcher
// reports the first rank process that died or failed. Once it appears, the
// failure is logged at error level and the rank's Store waits and waits for
// its stream ([rank.Rank.Synchronize], blocking collectives) return a
// [*PeerFailedError] naming the failed rank instead of running into their
// timeout. Waits that do not go through the Store or the stream (file
// descriptor passing, the rank's cleanup) keep their own timeouts.
func RunProcess(env ProcessEnv, dev device.Device, log *zap.Logger, timeout time.Duration, program rank.Program) error {
	if timeout == 0 {
		timeout = rank.DefaultTimeout
	}
	raw, closeStore, err := store.Dial(env.StoreAddr, env.Token, timeout)
	if err != nil {
		return fmt.Errorf("rank %d: dial store %s: %w", env.Rank, env.StoreAddr, err)
	}
	defer closeStore()
	watch := watchFailures(raw, env.Rank, watchPoll, log)
	defer watch.Stop()
	st := rank.Abortable(raw, watch.ab.ctx)
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
	return rank.Run(rank.Params{
		ID: env.Rank, World: env.World, Host: host, PID: os.Getpid(), Device: dev, Runtime: actor.NewLive(),
		Store: st, Abort: watch.ab.ctx, IPC: ch, Logger: log, Timeout: timeout,
		AllowOverlappingDevices: AllowOverlappingFromEnv(),
	}, program)
}
