package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/symmem/symmem/campaign"
)

// campaignFlags are the flags that split a seeded command into shards and
// write its report file (docs/campaigns.md).
type campaignFlags struct {
	shard  string
	count  int
	report string
}

// add defines the flags on fl.
func (c *campaignFlags) add(fl *pflag.FlagSet) {
	fl.StringVar(&c.shard, "shard", "", "run shard i of n of the seeds (i from 0, e.g. 0/4); without it the shard comes from SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX or TEST_SHARD_INDEX (docs/campaigns.md)")
	fl.IntVar(&c.count, "shard-count", 0, "the number of shards of a Kubernetes Indexed Job (with JOB_COMPLETION_INDEX; else SYMMEM_SHARD_COUNT)")
	fl.StringVar(&c.report, "report", "", "write the findings and a summary to this file as JSON lines, for symmem merge (written under a temporary name, renamed when done)")
}

// notIdentity are the flags that do not change what a command runs or
// reports: shards of one campaign may differ in them.
var notIdentity = []string{"shard", "shard-count", "report", "jobs", "progress", "cpuprofile", "log-level", "help", "runs"}

// identity is a command's arguments and every flag that decides what it
// runs and reports, "--name=value", in the order of names.
func identity(cmd *cobra.Command, args []string) []string {
	out := slices.Clone(args)
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !slices.Contains(notIdentity, f.Name) {
			out = append(out, "--"+f.Name+"="+f.Value.String())
		}
	})
	return out
}

// flagValue is the value of --name in an identity (see [identity]).
func flagValue(flags []string, name string) string {
	for _, f := range flags {
		if v, ok := strings.CutPrefix(f, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

// shardRun is one shard of a campaign being run: its seeds and, with
// --report, its report file.
type shardRun struct {
	command  string
	shard    campaign.Shard
	all      campaign.Range // the campaign's seeds
	seeds    campaign.Range // the shard's
	flags    []string
	w        *campaign.Writer
	start    time.Time
	cpuStart time.Duration
}

// startShard resolves the shard of a command over the seeds all (from
// the flags, else the environment), touches a test runner's status file
// and creates the report file, if one is asked for.
func startShard(command string, c *campaignFlags, all campaign.Range, flags []string, getenv func(string) string) (*shardRun, error) {
	s := &shardRun{command: command, all: all, flags: flags, start: time.Now(), cpuStart: cpuTime()}
	var err error
	if s.shard, err = campaign.Resolve(c.shard, c.count, getenv); err != nil {
		return nil, err
	}
	s.seeds = s.shard.Range(all)
	if err := s.shard.Touch(); err != nil {
		return nil, err
	}
	if c.report != "" {
		if s.w, err = campaign.Create(c.report, campaign.Header{Command: command, Shard: s.shard, Seeds: s.seeds}); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// line is the first line of a sharded command's report: the shard, where
// it came from, and its seeds; "" when the command runs the whole
// campaign.
func (s *shardRun) line() string {
	if !s.shard.Sharded() {
		return ""
	}
	return fmt.Sprintf("shard %s (%s): seeds %s of %s\n", s.shard, s.shard.Source, s.seeds, s.all)
}

// finish writes the report file, if one was asked for: findings, then the
// summary of counts, sets and durations. interrupted and runErr say the
// shard did not run all its seeds.
func (s *shardRun) finish(findings []campaign.Finding, sum campaign.Summary, interrupted bool, runErr error) error {
	if s.w == nil {
		return nil
	}
	for _, f := range findings {
		s.w.Finding(f)
	}
	sum.Command, sum.Flags, sum.Shard, sum.Campaign, sum.Seeds = s.command, s.flags, s.shard, s.all, s.seeds
	sum.Build = campaignBuild()
	sum.WallSeconds = time.Since(s.start).Seconds()
	sum.CPUSeconds = (cpuTime() - s.cpuStart).Seconds()
	sum.Interrupted = interrupted
	if runErr != nil {
		sum.Error = runErr.Error()
	}
	w := s.w
	s.w = nil
	return w.Close(sum)
}

// abort drops the report file of a shard that could not start.
func (s *shardRun) abort() {
	if s != nil && s.w != nil {
		s.w.Abort()
	}
}

// campaignBuild identifies this build in a report.
func campaignBuild() campaign.Build {
	info, _ := debug.ReadBuildInfo()
	return campaign.BuildOf(version, info)
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// exitError is an error with its own exit status.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// ExitCode is the process's exit status.
func (e *exitError) ExitCode() int { return e.code }

func newMergeCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "merge REPORT.jsonl...",
		Short: "Merge the reports of a campaign's shards into the report one process would have printed",
		Long: `merge reads the --report files of the shards of one symmem fuzz, check or
litmus --seeds campaign and prints the report one process running every
seed would have printed: each distinct finding once (the one found first,
by signature: its kind and sites), with the counts of every shard summed.
Times are the longest shard's; workers, the shards' together.

It refuses reports of different builds, flags or seeds. It lists, on
stderr, shards with no report and shards with several (a retried shard:
the first one is used; reports that disagree fail the campaign).

Exit status: 0 when every shard ran all its seeds and nothing was found,
1 when something was found, 2 when the campaign itself failed (a shard
missing, interrupted or failed, a report unreadable or of another
campaign).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMerge(cmd.OutOrStdout(), cmd.ErrOrStderr(), args)
		},
	}
}

// runMerge merges the reports paths and prints the campaign's report.
func runMerge(out, errOut io.Writer, paths []string) error {
	failed := func(err error) error { return &exitError{code: campaign.StatusFailed, err: err} }
	var reports []*campaign.Report
	var bad []error
	for _, p := range paths {
		r, err := campaign.Read(p)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		reports = append(reports, r)
	}
	if err := errors.Join(bad...); err != nil {
		return failed(err)
	}
	m, err := campaign.Merge(reports)
	if err != nil {
		return failed(err)
	}
	fmt.Fprintf(errOut, "merge: %d reports of symmem %s, build %s, seeds %s in %d shards: %d shards merged, %.1f CPU-seconds\n",
		len(reports), m.Command, m.Build, m.Campaign, m.Shards, len(m.Used), m.CPU)
	for _, i := range sortedKeys(m.Duplicates) {
		fmt.Fprintf(errOut, "merge: shard %d/%d has %d reports (the first is used): %s\n", i, m.Shards, len(m.Duplicates[i]), strings.Join(m.Duplicates[i], ", "))
	}
	switch m.Command {
	case "fuzz":
		err = printMergedFuzz(out, m)
	case "check":
		err = printMergedCheck(out, m)
	case "litmus":
		err = printMergedLitmus(out, m)
	default:
		return failed(fmt.Errorf("reports of symmem %s: merge knows fuzz, check and litmus", m.Command))
	}
	if err != nil {
		return failed(err)
	}
	if len(m.Problems) > 0 {
		return failed(fmt.Errorf("the campaign failed:\n  %s", strings.Join(m.Problems, "\n  ")))
	}
	if n := len(m.Findings); n > 0 {
		return &exitError{code: campaign.StatusFindings, err: fmt.Errorf("%d distinct findings in %d shards", n, m.Shards)}
	}
	return nil
}

// sortedKeys are m's keys in order.
func sortedKeys[V any](m map[int]V) []int {
	var k []int
	for i := range m {
		k = append(k, i)
	}
	slices.Sort(k)
	return k
}

// envOr is getenv, or os.Getenv when nil.
func envOr(getenv func(string) string) func(string) string {
	if getenv == nil {
		return os.Getenv
	}
	return getenv
}
