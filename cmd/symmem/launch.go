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
	grace time.Duration
}

func newLaunchCmd(a *app) *cobra.Command {
	f := &launchFlags{}
	cmd := &cobra.Command{
		Use:   "launch --nproc N -- COMMAND [ARGS...]",
		Short: "Start one process per GPU with a shared Store, as torchrun does",
		Long: `Serve a Store on loopback, start N copies of COMMAND with RANK, WORLD_SIZE,
LOCAL_RANK, MASTER_ADDR, MASTER_PORT, a per-job Store token and IPC job id in
their environment, and wait. When a rank fails or dies, the others are
stopped and launch exits non-zero naming the rank and its status. SIGINT
and SIGTERM sent to launch are forwarded to every rank.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLaunch(a, f, args, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().IntVar(&f.nproc, "nproc", 2, "number of rank processes")
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
		c.Env = append(os.Environ(),
			rank.EnvRank+"="+strconv.Itoa(i), rank.EnvWorld+"="+strconv.Itoa(f.nproc),
			rank.EnvLocalRank+"="+strconv.Itoa(i), rank.EnvMasterAddr+"="+host, rank.EnvMasterPort+"="+port,
			rank.EnvStoreActor+"="+actorName, rank.EnvToken+"="+token, ipc.JobEnv+"="+job)
		if err := c.Start(); err != nil {
			stopAll(procs[:i], syscall.SIGTERM, f.grace)
			return fmt.Errorf("launch: start rank %d (%s): %w", i, args[0], err)
		}
		procs[i] = c
		go func() { exits <- exit{i, c.Wait()} }()
	}

	var first *exit
	for done := 0; done < f.nproc; {
		select {
		case e := <-exits:
			done++
			if e.err != nil && first == nil {
				first = &e
				fmt.Fprintf(stderr, "symmem launch: rank %d %s; stopping the other ranks\n", e.rank, describe(e.err))
				stopAll(procs, syscall.SIGTERM, f.grace)
			}
		case s := <-sigs:
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

// stopAll sends sig to every live process, then SIGKILL after grace.
func stopAll(procs []*exec.Cmd, sig os.Signal, grace time.Duration) {
	for _, p := range procs {
		if p != nil {
			_ = p.Process.Signal(sig) // fails harmlessly once it has exited
		}
	}
	time.AfterFunc(grace, func() {
		for _, p := range procs {
			if p != nil {
				_ = p.Process.Kill()
			}
		}
	})
}
