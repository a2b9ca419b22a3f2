package launch

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

	pa "github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/actor/store"
	"github.com/symmem/symmem/rank/ipc"
)

// exit is how one rank process ended.
type exit struct {
	rank int
	err  error
}

// Options configure [Run].
type Options struct {
	NProc int           // rank processes, 1 to 72
	Drain time.Duration // the other ranks' time to exit by themselves after a failure (0: stop them at once)
	Grace time.Duration // time between SIGTERM (or a forwarded signal) and SIGKILL
	// Stdout and Stderr receive the ranks' output and launch's own
	// messages (nil: discarded).
	Stdout, Stderr io.Writer
	Logger         *zap.Logger     // nil: no logs
	System         *pa.ActorSystem // where the Store actor lives (nil: a new system)
}

// Run is the launcher: it serves a Store on loopback, starts o.NProc copies
// of the command args with the environment a rank process reads
// ([ProcessEnvFromOS]), and waits for them. When a rank fails or dies it
// publishes which rank and how under [FailureKey], gives the other ranks
// o.Drain to exit by themselves, then SIGTERM, then SIGKILL after o.Grace.
// SIGINT and SIGTERM sent to this process are forwarded to every rank at
// once. Each rank leads its own process group: signals reach the
// processes it started too, and whatever is left of its group when it
// exits is killed. Run returns an error naming the first rank that failed
// and how.
func Run(o Options, args []string) error {
	if len(args) == 0 {
		return errors.New("launch: no command to run")
	}
	if o.NProc < 1 || o.NProc > 72 {
		return fmt.Errorf("launch: %d rank processes: want 1..72", o.NProc)
	}
	if o.Drain < 0 || o.Grace < 0 {
		return fmt.Errorf("launch: drain %v, grace %v: want durations >= 0", o.Drain, o.Grace)
	}
	log, sys, stdout, stderr := o.Logger, o.System, o.Stdout, o.Stderr
	if log == nil {
		log = zap.NewNop()
	}
	if sys == nil {
		sys = actor.NewSystem()
	}
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	token, err := store.NewToken()
	if err != nil {
		return err
	}
	srv, err := store.Serve(sys, "127.0.0.1:0", token)
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
	log.Info("store served", zap.String("addr", srv.Addr()), zap.String("job", job))
	// launch's own client, to publish a rank's failure to the others.
	reporter := srv.Connect("launch", publishTimeout)

	// Catch SIGINT and SIGTERM before the first rank starts, so that one
	// arriving at any point is forwarded instead of ending launch alone.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)

	stdout, stderr = &lockedWriter{w: stdout}, &lockedWriter{w: stderr}
	procs := make([]*exec.Cmd, o.NProc)
	exits := make(chan exit, o.NProc)
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
			EnvRank+"="+strconv.Itoa(i), EnvWorld+"="+strconv.Itoa(o.NProc),
			EnvLocalRank+"="+strconv.Itoa(i), EnvMasterAddr+"="+host, EnvMasterPort+"="+port,
			EnvStoreActor+"="+actorName, EnvToken+"="+token, ipc.JobEnv+"="+job)
		if err := c.Start(); err != nil {
			stopAll(procs[:i], syscall.SIGTERM, o.Grace)
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
	for done := 0; done < o.NProc; {
		select {
		case e := <-exits:
			done++
			if e.err == nil || first != nil {
				continue
			}
			first = &e
			status := describe(e.err)
			if err := PublishFailure(reporter, &PeerFailedError{Rank: e.rank, Status: status}); err != nil {
				fmt.Fprintf(stderr, "symmem launch: rank %d %s; stopping the other ranks at once (%v)\n", e.rank, status, err)
				stopAll(procs, syscall.SIGTERM, o.Grace)
				continue
			}
			if o.Drain <= 0 || done == o.NProc {
				fmt.Fprintf(stderr, "symmem launch: rank %d %s; stopping the other ranks\n", e.rank, status)
				stopAll(procs, syscall.SIGTERM, o.Grace)
				continue
			}
			fmt.Fprintf(stderr, "symmem launch: rank %d %s; stopping the other ranks (told through the Store; SIGTERM in %v unless they exit first)\n", e.rank, status, o.Drain)
			drainTimer = time.NewTimer(o.Drain)
			drain = drainTimer.C
		case <-drain:
			drain = nil
			fmt.Fprintf(stderr, "symmem launch: %d ranks still running after --drain %v; sending SIGTERM\n", o.NProc-done, o.Drain)
			stopAll(procs, syscall.SIGTERM, o.Grace)
		case s := <-sigs:
			drain = nil
			fmt.Fprintf(stderr, "symmem launch: %v; forwarding it to every rank\n", s)
			stopAll(procs, s, o.Grace)
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
