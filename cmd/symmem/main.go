// Command symmem runs symmetric-memory all-reduce jobs on the deterministic
// simulator or on GPUs.
//
//	symmem allreduce [--world 4] [--bytes 64KiB] [--dtype bf16] [--op sum] [--algo auto] [--seed 1]
//	symmem bench     [--device sim|cuda] [--world 4] [--min 1KiB] [--max 256MiB] [--json F] [--plot F.png]
//	symmem fuzz      [--seeds N] [--strategy random|pct|portfolio] [--faults none|safety|all] [-j N]
//	symmem replay    --seed N --strategy S ... (the command a fuzz failure prints)
//	symmem selftest  [--device sim|cuda] [--world N]
//	symmem launch    --nproc N -- COMMAND...
//	symmem topo      [--device sim|cuda]
//	symmem version
package main

import (
	"fmt"
	"io"
	"os"
	"sync"

	pa "github.com/asynkron/protoactor-go/actor"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/symmem/symmem/actor"
)

// version is set at link time (-ldflags "-X main.version=...").
var version = "dev"

func main() {
	if err := newRoot().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "symmem:", err)
		os.Exit(1)
	}
}

// app carries what every subcommand shares.
type app struct {
	logLevel string
	log      *zap.Logger

	sysOnce sync.Once
	sys     *pa.ActorSystem
}

// actorSystem is the process's actor system, created on first use: a
// process serves at most one protoactor remote endpoint.
func (a *app) actorSystem() *pa.ActorSystem {
	a.sysOnce.Do(func() { a.sys = actor.NewSystem() })
	return a.sys
}

func newRoot() *cobra.Command {
	a := &app{}
	root := &cobra.Command{
		Use:           "symmem",
		Short:         "GPU symmetric memory and intra-node all-reduce, on a deterministic simulator or on GPUs",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(a.logLevel, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			a.log = log
			return nil
		},
	}
	root.PersistentFlags().StringVar(&a.logLevel, "log-level", "error", "log level: debug (what each rank does: rendezvous, allocations, algorithm choices, launches, timeouts), info, warn, error")
	root.AddCommand(newVersionCmd(), newAllReduceCmd(a), newLaunchCmd(a), newSelftestCmd(a), newTopoCmd())
	root.AddCommand(newBenchCmd(a))
	root.AddCommand(newFuzzCmd(a), newReplayCmd(a), newLitmusCmd())
	return root
}

// newLogger builds the command's logger: human-readable lines at level
// and above, written to w (stderr).
func newLogger(level string, w io.Writer) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	enc := zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig())
	return zap.New(zapcore.NewCore(enc, zapcore.Lock(zapcore.AddSync(w)), lvl)), nil
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(cmd.OutOrStdout(), "symmem %s\n", version)
		},
	}
}
