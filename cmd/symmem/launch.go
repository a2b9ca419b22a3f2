package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/symmem/symmem/actor/store"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/rank/ipc"
)

type launchFlags struct {
	nproc int
	drain time.Duration
	grace time.Duration
}

func newLaunchCmd(a *app) *cobra.Command {
	f := &launchFlags{}
	cmd := &cobra.Command{
		Use:   "launch --nproc N -- COMMAND [ARGS...]",
		Short: "Start one process per GPU with a shared Store, as torchrun does",
		Long: `Serve a Store on loopback, start N copies of COMMAND with RANK, WORLD_SIZE,
LOCAL_RANK, MASTER_ADDR, MASTER_PORT, a per-job Store token and IPC job id in
their environment, and wait.

When a rank fails or dies, launch publishes which rank and how ("rank 1 was
killed by signal killed") in the job's Store under the key
symmem/launch/failure. Rank processes run by rank.RunProcess (the symmem
commands) watch that key: their Store waits and waits for their stream stop
and return an error naming the failed rank (rank.PeerFailedError). The other ranks get --drain to exit by themselves,
then get SIGTERM, then SIGKILL after --grace; --drain 0 stops them at once.
launch exits non-zero naming the first rank that failed and its status.
SIGINT and SIGTERM sent to launch are forwarded to every rank at once.

Each rank runs in its own process group: signals reach the processes a rank
started too, and whatever is left of a rank's group when the rank exits is
killed. Launch waits at most 1s after a rank exits for such processes to
close its output.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLaunch(a, f, args, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().IntVar(&f.nproc, "nproc", 2, "number of rank processes")
	cmd.Flags().DurationVar(&f.drain, "drain", 10*time.Second, "time the other ranks get to report a rank's failure and exit by themselves before SIGTERM (0: stop them at once)")
	cmd.Flags().DurationVar(&f.grace, "grace", 5*time.Second, "time the other ranks get to exit after SIGTERM (or a forwarded SIGINT) before SIGKILL")
	return cmd
}

type exit struct {
	rank int
	err  error
}

func runLaunch(a *app, f *launchFlags, args []string, stdout, stderr io.Writer) error {
	if f.nproc < 1 || f.nproc > 72 {
		return fmt.Errorf("--nproc %d: want 1..72", f.nproc)
	}
	if f.drain < 0 || f.grace < 0 {
		return fmt.Errorf("--drain %v, --grace %v: want durations >= 0", f.drain, f.grace)
	}
	token, err := store.NewToken()
	if err != nil {
		return err
	}
	srv, err := store.Serve(a.actorSystem(), "127.0.0.1:0", token)
	if err != nil {
		return fmt.Errorf("launch: serve store: %w", err)
	}
	defer srv.Close()
	hostPort, actorName, _ := strings.Cut(srv.Addr(), "/")
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		return fmt.Errorf("launch: store address %q: %w", srv.Addr(), err)
	}
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return err
	}
	job := "launch-" + hex.EncodeToString(id[:])
	a.log.Info("store served", zap.String("addr", srv.Addr()), zap.String("job", job))
	// launch's own client, to publish a rank's failure to the others.
	reporter := srv.Connect("launch", publishTimeout)

	// Catch SIGINT and SIGTERM before the first rank starts, so that one
	// arriving at any point is forwarded instead of ending launch alone.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)

	stdout, stderr = &lockedWriter{w: stdout}, &lockedWriter{w: stderr}
	procs := make([]*exec.Cmd, f.nproc)
	exits := make(chan exit, f.nproc)
	for i := range procs {
		c := exec.Command(args[0], args[1:]...)
		c.Stdout, c.Stderr = stdout, stderr
		// Each rank leads its own process group, so that a signal reaches
		// the processes it started too; and its output pipes, which such a
		// process may hold after the rank exits, are waited on for at most
		// pipeWait.
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		c.WaitDelay = pipeWait
		c.Env = append(os.Environ(),
			rank.EnvRank+"="+strconv.Itoa(i), rank.EnvWorld+"="+strconv.Itoa(f.nproc),
			rank.EnvLocalRank+"="+strconv.Itoa(i), rank.EnvMasterAddr+"="+host, rank.EnvMasterPort+"="+port,
			rank.EnvStoreActor+"="+actorName, rank.EnvToken+"="+token, ipc.JobEnv+"="+job)
		if err := c.Start(); err != nil {
			stopAll(procs[:i], syscall.SIGTERM, f.grace)
			return fmt.Errorf("launch: start rank %d (%s): %w", i, args[0], err)
		}
		procs[i] = c
		go func() { exits <- exit{i, waitRank(c, i, stderr)} }()
	}

	var first *exit
	var drain <-chan time.Time // fires when the other ranks' time to exit is up
	var drainTimer *time.Timer
	defer func() {
		if drainTimer != nil {
			drainTimer.Stop()
		}
	}()
	for done := 0; done < f.nproc; {
		select {
		case e := <-exits:
			done++
			if e.err == nil || first != nil {
				continue
			}
			first = &e
			status := describe(e.err)
			if err := rank.PublishFailure(reporter, &rank.PeerFailedError{Rank: e.rank, Status: status}); err != nil {
				fmt.Fprintf(stderr, "symmem launch: rank %d %s; stopping the other ranks at once (%v)\n", e.rank, status, err)
				stopAll(procs, syscall.SIGTERM, f.grace)
				continue
			}
			if f.drain <= 0 || done == f.nproc {
				fmt.Fprintf(stderr, "symmem launch: rank %d %s; stopping the other ranks\n", e.rank, status)
				stopAll(procs, syscall.SIGTERM, f.grace)
				continue
			}
			fmt.Fprintf(stderr, "symmem launch: rank %d %s; stopping the other ranks (told through the Store; SIGTERM in %v unless they exit first)\n", e.rank, status, f.drain)
			drainTimer = time.NewTimer(f.drain)
			drain = drainTimer.C
		case <-drain:
			drain = nil
			fmt.Fprintf(stderr, "symmem launch: %d ranks still running after --drain %v; sending SIGTERM\n", f.nproc-done, f.drain)
			stopAll(procs, syscall.SIGTERM, f.grace)
		case s := <-sigs:
			drain = nil
			fmt.Fprintf(stderr, "symmem launch: %v; forwarding it to every rank\n", s)
			stopAll(procs, s, f.grace)
			if first == nil {
				first = &exit{-1, fmt.Errorf("interrupted by %v", s)}
			}
		}
	}
	if first != nil {
		if first.rank < 0 {
			return first.err
		}
		return fmt.Errorf("rank %d %s", first.rank, describe(first.err))
	}
	return nil
}

// pipeWait bounds how long launch waits, once a rank process has exited,
// for the processes it left behind to close its output.
const pipeWait = time.Second

// waitRank waits for rank i's process, then kills what is left of its
// process group: processes the rank started must not outlive it. A rank
// that exited cleanly but left processes holding its output for pipeWait
// is reported on stderr and counts as a success.
func waitRank(c *exec.Cmd, i int, stderr io.Writer) error {
	err := c.Wait()
	killGroup(c, syscall.SIGKILL)
	if errors.Is(err, exec.ErrWaitDelay) {
		fmt.Fprintf(stderr, "symmem launch: rank %d exited, but processes it started still held its output after %v; killed them\n", i, pipeWait)
		return nil
	}
	return err
}

// killGroup sends sig to the process group that c leads; it fails
// harmlessly once the group is gone.
func killGroup(c *exec.Cmd, sig syscall.Signal) {
	_ = syscall.Kill(-c.Process.Pid, sig)
}

// publishTimeout bounds launch's request that publishes a rank's failure
// in the Store.
const publishTimeout = 5 * time.Second

// lockedWriter serialises the writes of several child processes' output
// copiers.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// describe says how a rank process ended.
func describe(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return fmt.Sprintf("was killed by signal %v", ws.Signal())
		}
		return fmt.Sprintf("exited with status %d", ee.ExitCode())
	}
	return err.Error()
}

// stopAll sends sig to every rank's process group, then SIGKILL after
// grace.
func stopAll(procs []*exec.Cmd, sig os.Signal, grace time.Duration) {
	num, ok := sig.(syscall.Signal)
	if !ok {
		num = syscall.SIGTERM
	}
	for _, p := range procs {
		if p != nil {
			killGroup(p, num) // fails harmlessly once the group is gone
		}
	}
	time.AfterFunc(grace, func() {
		for _, p := range procs {
			if p != nil {
				killGroup(p, syscall.SIGKILL)
			}
		}
	})
}
