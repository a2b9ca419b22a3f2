package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/symmem/symmem/campaign"
	"github.com/symmem/symmem/device/sim/memmodel"
	"github.com/symmem/symmem/litmus"
)

func newLitmusCmd(a *app) *cobra.Command {
	var expected, liveness string
	var loopBound int
	var seeds uint64
	var terminates bool
	var cf campaignFlags
	cmd := &cobra.Command{
		Use:   "litmus [--expected FILE.csv] [--liveness FILE.csv] [FILE.litmus...]",
		Short: "Judge PTX litmus tests on the simulator's memory model",
		Long: `Runs herd-style PTX litmus tests on the simulator's memory model: every
execution the PTX model allows is explored. For each test it prints the final
states (the registers and locations the condition names) and whether the
condition holds, then the data races of the allowed executions (conflicting
accesses neither morally strong nor ordered by causality). With --expected,
the tests named in the csv (path,verdict;
paths relative to the csv's folder) are run too and compared with their
verdicts; any disagreement makes the command fail. With --liveness, the
tests named in that csv (path,verdict; 1: every fair execution ends, 0:
some fair execution spins or waits forever) are decided for termination
and compared the same way. With --seeds N each file
is also run N times under the operational model (the seeded step-by-step
semantics, loads choosing among the stores they may read), which must
reach only outcomes the exact model allows; the command fails, after
every file ran, when one reached a forbidden outcome. --shard i/n runs
shard i of n of those seeds (see symmem fuzz --help and docs/campaigns.md),
--report writes its findings for symmem merge.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && expected == "" && liveness == "" {
				return fmt.Errorf("name litmus files, --expected FILE.csv or --liveness FILE.csv")
			}
			if loopBound < 1 {
				return fmt.Errorf("--loop-bound %d: want at least 1", loopBound)
			}
			opts := memmodel.Options{LoopBound: loopBound}
			out := cmd.OutOrStdout()
			if seeds == 0 {
				if cf != (campaignFlags{}) {
					return fmt.Errorf("--shard, --shard-count and --report split and report --seeds: give --seeds N")
				}
			} else if expected != "" && (cf != (campaignFlags{})) {
				return fmt.Errorf("--expected is not seeded: run it on its own, not in a campaign of --seeds with --shard or --report")
			}
			var sh *shardRun
			if seeds > 0 {
				var err error
				if sh, err = startShard("litmus", &cf, campaign.Range{Count: seeds}, identity(cmd, args), envOr(a.getenv)); err != nil {
					return err
				}
				io.WriteString(out, sh.line())
			}
			sum := campaign.Summary{Counts: map[string]int64{}, Sets: map[string][]string{}, Fixed: map[string][]string{}}
			var findings []campaign.Finding
			var forbidden []string
			// An interrupt stops the files between two of them: the report
			// covers those that ran.
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			for i, path := range args {
				if ctx.Err() != nil {
					break
				}
				var exact strings.Builder
				res, err := runLitmus(&exact, path, opts)
				io.WriteString(out, exact.String())
				if err != nil {
					sh.abort()
					return err
				}
				if terminates {
					if err := printTermination(out, res.Test, opts); err != nil {
						sh.abort()
						return err
					}
				}
				if seeds == 0 {
					continue
				}
				found, err := sampleLitmus(out, res, i, path, sh.seeds, seeds, sum)
				if err != nil {
					sh.abort()
					return err
				}
				sum.Fixed[path] = strings.Split(strings.TrimSuffix(exact.String(), "\n"), "\n")
				findings = append(findings, found...)
				if len(found) > 0 {
					forbidden = append(forbidden, fmt.Sprintf("%s: the operational model reached %d outcomes the PTX model forbids", res.Test.Name, len(found)))
				}
			}
			interrupted := interruptErr(ctx, "litmus")
			if sh != nil {
				if err := sh.finish(findings, sum, interrupted != nil, nil); err != nil {
					return err
				}
			}
			if interrupted != nil {
				fmt.Fprintf(out, "%s: the files after those above did not run\n", interrupted)
				return interrupted
			}
			if len(forbidden) > 0 {
				return errors.New(strings.Join(forbidden, "; "))
			}
			if expected != "" {
				if err := checkExpected(out, expected, opts, judgeCondition); err != nil {
					return err
				}
			}
			if liveness != "" {
				return checkExpected(out, liveness, opts, judgeTermination)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&expected, "expected", "", "csv of path,verdict (1: the condition holds) to compare with")
	cmd.Flags().StringVar(&liveness, "liveness", "", "csv of path,verdict (1: every fair execution ends, 0: one may hang) to compare with")
	cmd.Flags().IntVar(&loopBound, "loop-bound", 2, "backward jumps one thread may take")
	cmd.Flags().Uint64Var(&seeds, "seeds", 0, "also run each file this many times under the operational model")
	cmd.Flags().BoolVar(&terminates, "terminates", false, "also decide whether every fair execution of each file ends, and show a hang")
	cf.add(cmd.Flags())
	return cmd
}

// runLitmus judges one file and prints its outcomes and verdict.
func runLitmus(out io.Writer, path string, opts memmodel.Options) (*litmus.Result, error) {
	t, err := litmus.ParseFile(path)
	if err != nil {
		return nil, err
	}
	res, err := litmus.Run(t, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	fmt.Fprintf(out, "%s (%s)\n", path, t.Name)
	for _, o := range res.Outcomes {
		mark := " "
		if t.Satisfies(o) {
			mark = "*"
		}
		fmt.Fprintf(out, "  %s %s\n", mark, t.FormatOutcome(o))
	}
	verdict := "condition does not hold"
	if res.Holds {
		verdict = "condition holds"
	}
	fmt.Fprintf(out, "  %s %s: %s (%d outcomes, %d candidate executions, %d consistent",
		t.Quant, t.Cond, verdict, len(res.Outcomes), res.Explored.Candidates, res.Explored.Consistent)
	if res.Explored.CutRuns > 0 {
		fmt.Fprintf(out, ", %d runs cut at the loop bound", res.Explored.CutRuns)
	}
	fmt.Fprintln(out, ")")
	for _, r := range res.Explored.Races {
		fmt.Fprintf(out, "  data race on %s: %s and %s\n", r.First.Loc, accessName(t, r.First), accessName(t, r.Second))
	}
	return res, nil
}

// printTermination decides whether every fair execution of t ends and
// prints a hang when one may not.
func printTermination(out io.Writer, t *litmus.Test, opts memmodel.Options) error {
	res, err := litmus.Terminates(t, opts)
	if err != nil {
		return err
	}
	if res.Ends {
		fmt.Fprintf(out, "  termination: every fair execution ends (%d candidate executions", res.Candidates)
		if res.CutRuns > 0 {
			fmt.Fprintf(out, ", %d runs cut at the loop bound", res.CutRuns)
		}
		fmt.Fprintln(out, ")")
		return nil
	}
	fmt.Fprintln(out, "  termination: a fair execution may hang:")
	for _, te := range res.Hang {
		fmt.Fprintf(out, "    %s %s\n", t.Program.Threads[te.Thread].Name, te)
	}
	return nil
}

// The names of a litmus report's counts and sets, per file.
const (
	litmusFinished = "finished "
	litmusReached  = "reached "
	litmusAllowed  = "allowed "
)

// sampleLitmus runs a judged test (file number i, path) under the
// operational model over the seeds r of a campaign of all seeds, prints
// what it reached, and returns the outcomes it reached that the exact
// model forbids as findings; it adds its counts and sets to sum.
func sampleLitmus(out io.Writer, res *litmus.Result, i int, path string, r campaign.Range, all uint64, sum campaign.Summary) ([]campaign.Finding, error) {
	t := res.Test
	s, err := litmus.Sample(t, r.First, r.Count, 10_000)
	if err != nil {
		return nil, err
	}
	forbidden, _ := litmus.Compare(res.Outcomes, s.Outcomes)
	sum.Counts[litmusFinished+path] = int64(s.Finished)
	sum.Sets[litmusReached+path] = outcomeKeys(s.Outcomes)
	sum.Sets[litmusAllowed+path] = outcomeKeys(res.Outcomes)
	var found []campaign.Finding
	for _, o := range forbidden {
		order := []uint64{uint64(i)}
		for _, v := range o {
			order = append(order, uint64(v)^1<<63) // the order of int64s
		}
		found = append(found, campaign.Finding{Signature: path + " forbidden " + fmt.Sprint(o), Kind: "forbidden",
			Title: t.FormatOutcome(o), Order: order, Count: 1})
	}
	printSample(out, all, int64(s.Finished), sum.Sets[litmusReached+path], sum.Sets[litmusAllowed+path], found)
	return found, nil
}

// outcomeKeys are outcomes as strings.
func outcomeKeys(os [][]int64) []string {
	k := make([]string, len(os))
	for i, o := range os {
		k[i] = fmt.Sprint(o)
	}
	slices.Sort(k)
	return k
}

// printSample prints what seeds runs under the operational model reached
// and the forbidden outcomes among them.
func printSample(out io.Writer, seeds uint64, finished int64, reached, allowed []string, forbidden []campaign.Finding) {
	unreached := 0
	for _, a := range allowed {
		if !slices.Contains(reached, a) {
			unreached++
		}
	}
	fmt.Fprintf(out, "  operational model, %d seeds (%d finished): %d outcomes, %d allowed ones not reached\n",
		seeds, finished, len(reached), unreached)
	for _, f := range forbidden {
		fmt.Fprintf(out, "  FORBIDDEN %s\n", f.Title)
	}
}

// printMergedLitmus prints a merged litmus campaign's report: each file's
// exact outcomes and what the campaign's seeds reached.
func printMergedLitmus(out io.Writer, m *campaign.Merged) error {
	i := 0
	for _, path := range m.Flags {
		if strings.HasPrefix(path, "--") {
			continue
		}
		lines, ok := m.Fixed[path]
		if !ok {
			return fmt.Errorf("the reports have no outcomes of %s", path)
		}
		for _, l := range lines {
			fmt.Fprintln(out, l)
		}
		var forbidden []campaign.Finding
		for _, f := range m.Findings {
			if f.Order[0] == uint64(i) {
				forbidden = append(forbidden, f)
			}
		}
		printSample(out, m.Campaign.Count, m.Counts[litmusFinished+path], m.Sets[litmusReached+path], m.Sets[litmusAllowed+path], forbidden)
		i++
	}
	return nil
}

// judge gives a test's verdict for a verdict csv, and words for it.
type judge struct {
	verdict func(*litmus.Test, memmodel.Options) (bool, error)
	yes, no string
}

// judgeCondition: whether the test's condition holds.
var judgeCondition = judge{
	verdict: func(t *litmus.Test, opts memmodel.Options) (bool, error) {
		res, err := litmus.Run(t, opts)
		if err != nil {
			return false, err
		}
		return res.Holds, nil
	},
	yes: "holds", no: "does not hold",
}

// judgeTermination: whether every fair execution ends.
var judgeTermination = judge{
	verdict: func(t *litmus.Test, opts memmodel.Options) (bool, error) {
		res, err := litmus.Terminates(t, opts)
		if err != nil {
			return false, err
		}
		return res.Ends, nil
	},
	yes: "ends", no: "may hang",
}

// checkExpected judges every test of a verdict csv and prints the
// agreement table; it fails on any disagreement.
func checkExpected(out io.Writer, csvPath string, opts memmodel.Options, j judge) error {
	f, err := os.Open(csvPath)
	if err != nil {
		return err
	}
	verdicts, err := litmus.ReadVerdicts(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", csvPath, err)
	}
	type row struct {
		path            string
		want, got, fail string
	}
	var rows []row
	agree := 0
	for _, v := range verdicts {
		r := row{path: v.Path, want: j.word(v.Holds)}
		t, err := litmus.ParseFile(filepath.Join(filepath.Dir(csvPath), v.Path))
		if err == nil {
			var got bool
			if got, err = j.verdict(t, opts); err == nil {
				r.got = j.word(got)
				if got == v.Holds {
					agree++
				} else {
					r.fail = "DISAGREE"
				}
			}
		}
		if err != nil {
			r.got, r.fail = "error", err.Error()
		}
		rows = append(rows, r)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "test\texpected\tmodel\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.path, r.want, r.got, r.fail)
	}
	tw.Flush()
	fmt.Fprintf(out, "agreement: %d/%d\n", agree, len(verdicts))
	if agree != len(verdicts) {
		return fmt.Errorf("%d of %d tests disagree with %s", len(verdicts)-agree, len(verdicts), csvPath)
	}
	return nil
}

// accessName is "P1's load (line 7)".
func accessName(t *litmus.Test, a memmodel.Access) string {
	kind := "load"
	if a.Write {
		kind = "store"
	}
	return fmt.Sprintf("%s's %s (line %d)", t.Program.Threads[a.Thread].Name, kind, a.Line)
}

func (j judge) word(yes bool) string {
	if yes {
		return j.yes
	}
	return j.no
}
