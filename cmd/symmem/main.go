// Command symmem runs symmetric-memory all-reduce jobs on the deterministic
// simulator or on GPUs.
//
//	symmem allreduce [--world 4] [--bytes 64KiB] [--dtype bf16] [--op sum] [--algo auto] [--seed 1]
//	symmem bench     [--device sim|cuda] [--world 4] [--min 1KiB] [--max 256MiB] [--json F] [--plot F.png]
//	symmem fuzz      [--seeds N] [--strategy random|pct|portfolio] [--faults none|safety|all] [-j N]
//	symmem replay    --seed N --strategy S ... (the command a fuzz failure prints)
//	symmem merge     SHARD.jsonl... (the reports of a campaign's shards: fuzz, check, litmus with --shard i/n --report F)
//	symmem selftest  [--device sim|cuda] [--world N]
//	symmem launch    --nproc N -- COMMAND...
//	symmem topo      [--device sim|cuda]
//	symmem version   (or symmem --version)
//
// Every bad flag is named in one error before any work starts. SIGINT and
// SIGTERM stop a long command with what it has, exit status 130 or 143.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"

	pa "github.com/asynkron/protoactor-go/actor"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/symmem/symmem/actor"
)

// version is set at link time (-ldflags "-X main.version=..."); without
// it the module's version from the build information is printed.
var version = ""

func main() {
	setSoftMemoryLimit()
	os.Exit(runMain(os.Args[1:]))
}

// runMain runs the command line args, prints its error, and returns the
// exit status (130 or 143 when a signal stopped it, see [exitCode]). It
// owns the process: simulation commands set its GOMAXPROCS, the fuzzer its
// soft memory limit, the checker its collector's pace.
func runMain(args []string) int {
	root := newRootApp(&app{terminal: isTerminal, limitProcs: limitProcs, limitFuzzMemory: limitFuzzMemory, checkGC: setCheckGC, hugeHeap: reserveHugeHeap})
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "symmem:", err)
	}
	return exitCode(err)
}

// app carries what every subcommand shares.
type app struct {
	logLevel string
	log      *zap.Logger
	// terminal says whether a command's output is a terminal, where
	// progress is shown.
	terminal func(io.Writer) bool
	// limitProcs, when not nil, is [limitProcs]: set by a command that
	// owns its process (not by tests that run commands in theirs).
	limitProcs func(n int)
	// limitFuzzMemory, when not nil, is [limitFuzzMemory], set as
	// limitProcs is.
	limitFuzzMemory func(workers int)
	// checkGC, when not nil, is [setCheckGC], set as limitProcs is.
	checkGC func()
	// hugeHeap, when not nil, is [reserveHugeHeap], set as limitProcs is:
	// called by the commands that run long simulations (check, selftest).
	hugeHeap func()
	// getenv reads the environment (nil: os.Getenv); campaign commands
	// read their shard there.
	getenv func(string) string
	// inlineDecisions, when not 0, replaces maxInlineDecisions: the
	// longest decisions text a check's replay command carries.
	inlineDecisions int

	sysOnce sync.Once
	sys     *pa.ActorSystem
}

// actorSystem is the process's actor system, created on first use: a
// process serves at most one protoactor remote endpoint.
func (a *app) actorSystem() *pa.ActorSystem {
	a.sysOnce.Do(func() { a.sys = actor.NewSystem() })
	return a.sys
}

func newRoot() *cobra.Command { return newRootApp(&app{terminal: isTerminal}) }

// newRootApp is the command tree sharing a.
func newRootApp(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:           "symmem",
		Short:         "GPU symmetric memory and intra-node all-reduce, on a deterministic simulator or on GPUs",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       versionLine(),
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(a.logLevel, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			a.log = log
			return nil
		},
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.PersistentFlags().StringVar(&a.logLevel, "log-level", "error", "log level: debug (what each rank does: rendezvous, allocations, algorithm choices, launches, timeouts), info, warn, error")
	root.AddCommand(newVersionCmd(), newAllReduceCmd(a), newLaunchCmd(a), newSelftestCmd(a), newTopoCmd())
	root.AddCommand(newBenchCmd(a))
	root.AddCommand(newFuzzCmd(a), newReplayCmd(a), newCheckCmd(a), newLitmusCmd(a), newMergeCmd(a))
	root.AddCommand(newCLIReferenceCmd())
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
		Short: "Print the version: the module's, the commit it was built from and when, and whether the tree was modified",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), versionLine())
		},
	}
}

// versionLine describes this build (see [describeBuild]).
func versionLine() string {
	info, _ := debug.ReadBuildInfo()
	return describeBuild(version, info)
}

// describeBuild describes a build in one line: the version set at link
// time, else the module's version, then the version-control settings the
// Go tool recorded (vcs.revision, vcs.time, vcs.modified) and the Go
// version, e.g. "symmem (devel) commit 5176ace1d2e3 2025-01-02T03:04:05Z
// modified go1.25.0". Without build information it says so.
func describeBuild(linked string, info *debug.BuildInfo) string {
	v := linked
	if v == "" && info != nil {
		v = info.Main.Version
	}
	if v == "" {
		v = "(unknown version)"
	}
	if info == nil {
		return "symmem " + v + " (no build information)"
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	line := "symmem " + v
	if rev := settings["vcs.revision"]; rev != "" {
		line += " commit " + rev[:min(12, len(rev))]
	} else {
		line += " commit unknown (built without version control information)"
	}
	if t := settings["vcs.time"]; t != "" {
		line += " " + t
	}
	if settings["vcs.modified"] == "true" {
		line += " modified"
	}
	return line + " " + info.GoVersion
}
