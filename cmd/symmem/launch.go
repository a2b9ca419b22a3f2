package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/symmem/symmem/launch"
)

type launchFlags struct {
	nproc int
	drain time.Duration
	grace time.Duration
	bad   []error // flags whose values did not parse
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
symmem/launch/failure. Rank processes run by launch.RunProcess (the symmem
commands) watch that key: their Store waits and waits for their stream stop
and return an error naming the failed rank (launch.PeerFailedError). The other ranks get --drain to exit by themselves,
then get SIGTERM, then SIGKILL after --grace; --drain 0 stops them at once.
launch exits non-zero naming the first rank that failed and its status.
SIGINT and SIGTERM sent to launch are forwarded to every rank at once.

Each rank runs in its own process group: signals reach the processes a rank
started too, and whatever is left of a rank's group when the rank exits is
killed. Launch waits at most 1s after a rank exits for such processes to
close its output.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.bad = flagErrors(cmd)
			return runLaunch(a, f, args, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().IntVar(&f.nproc, "nproc", 2, "number of rank processes")
	cmd.Flags().DurationVar(&f.drain, "drain", 10*time.Second, "time the other ranks get to report a rank's failure and exit by themselves before SIGTERM (0: stop them at once)")
	cmd.Flags().DurationVar(&f.grace, "grace", 5*time.Second, "time the other ranks get to exit after SIGTERM (or a forwarded SIGINT) before SIGKILL")
	collectFlagErrors(cmd)
	return cmd
}

func runLaunch(a *app, f *launchFlags, args []string, stdout, stderr io.Writer) error {
	errs := append(f.bad, checkWorld("nproc", f.nproc))
	if len(args) == 0 {
		errs = append(errs, errors.New("no command to launch: want symmem launch --nproc N -- COMMAND [ARGS...]"))
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"drain", f.drain}, {"grace", f.grace}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("--%s %v: want a duration >= 0", d.flag, d.v))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	start := time.Now()
	err := launch.Run(launch.Options{
		NProc: f.nproc, Drain: f.drain, Grace: f.grace,
		Stdout: stdout, Stderr: stderr, Logger: a.log, System: a.actorSystem(),
	}, args)
	if err == nil {
		// Failures are reported by main; success gets its summary here.
		fmt.Fprintf(stdout, "launch: %d ranks of %s exited 0 in %v\n", f.nproc, args[0], time.Since(start).Round(time.Millisecond))
	}
	return err
}
