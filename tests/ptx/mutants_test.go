package ptx

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/symmem/symmem/device/sim"
	"github.com/symmem/symmem/device/sim/ptx"
	"github.com/symmem/symmem/fuzz"
	"github.com/symmem/symmem/internal/longtest"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/workload"
)

// ptxMutant is an edit of the kernels' PTX text that breaks the protocol.
type ptxMutant struct {
	name string
	re   *regexp.Regexp
	repl string
	// entry, when set, confines the edit to that entry point's body.
	entry string
	// algos and sizes, when set, replace the table's for this mutant (and
	// its control run): a mutant of one kernel runs that kernel.
	algos []workload.Algo
	sizes []uint64
	// defaults runs the mutant under symmem fuzz --kernels ptx with its
	// default flags (fuzz.DefaultConfig) instead of the table's
	// configuration, for at most defaultSeeds seeds.
	defaults bool
}

// defaultSeeds bounds the seeds of a mutant run with the fuzzer's default
// flags.
const defaultSeeds = 20

// apply returns text with the mutant's edit made, and how many edits.
func (m ptxMutant) apply(text string) (string, int, error) {
	start, end := 0, len(text)
	if m.entry != "" {
		head := ".visible .entry " + m.entry + "("
		start = strings.Index(text, head)
		if start < 0 {
			return "", 0, fmt.Errorf("no entry %s in the PTX", m.entry)
		}
		n := strings.Index(text[start:], "\n}\n")
		if n < 0 {
			return "", 0, fmt.Errorf("entry %s has no end", m.entry)
		}
		end = start + n
	}
	body := text[start:end]
	edits := len(m.re.FindAllStringIndex(body, -1))
	return text[:start] + m.re.ReplaceAllString(body, m.repl) + text[end:], edits, nil
}

// ptxMutants are compiled kernels broken the way a careless edit of the
// CUDA source would break them, made without a compiler.
var ptxMutants = []ptxMutant{
	{name: "every bar.sync dropped", re: regexp.MustCompile(`(?m)^\s*bar\.sync\s+0;\n`)},
	{name: "waits acquire -> relaxed", re: regexp.MustCompile(`atom\.acquire\.sys\.global\.cas`), repl: "atom.relaxed.sys.global.cas"},
	{name: "puts release -> relaxed", re: regexp.MustCompile(`atom\.release\.sys\.global\.cas`), repl: "atom.relaxed.sys.global.cas"},
	{name: "signals .sys -> .gpu", re: regexp.MustCompile(`atom\.(acquire|release)\.sys\.global\.cas`), repl: "atom.$1.gpu.global.cas"},
	// A wait's compare-and-swap (1 -> 0) succeeds when it read 1; broken,
	// it takes any value but 2 for success, an idle slot included.
	{name: "wait's flag compare accepts an idle slot",
		re:   regexp.MustCompile(`(atom\.acquire\.sys\.global\.cas\.b32 (%r\d+), [^\n]*\n[^\n]*\n\s*)setp\.eq\.s32\s+(%p\d+), (%r\d+), 1;`),
		repl: "${1}setp.ne.s32 $3, $4, 2;"},
	// The last LL block to finish stores the next call number; without the
	// fence after its count it does not acquire the other blocks' reads of
	// the number, and its store races with them.
	{name: "LL last block's acquire fence dropped",
		re:   regexp.MustCompile(`(atom\.add\.u32\s+%r\d+, \[%rd\d+\], 1;\n(?:[^\n]*\n){4}\n)\s*membar\.gl;\n`),
		repl: "$1", algos: []workload.Algo{workload.LowLatency}, sizes: []uint64{4 << 10, 8 << 10}},
	// A failing wait claims the launch's error record with a
	// compare-and-swap 0 -> 1 and fills it only when the swap read 0.
	// Broken, the claim expects 1 (cas 1 -> 1, success when it read 1),
	// which a fresh record never holds: the wait gives up, records
	// nothing, and its launch reports success. A wait that fails in the
	// fuzzer's default programs (a timeout step: a wait for a signal
	// nobody sends) must then fail the case. (Editing the cas alone, 1 ->
	// 1 with the test of its result left at 0, breaks nothing that can be
	// seen: the swap reads 0 from the fresh record, the test takes that
	// for a claim, and the wait records its error as before; wait_signal
	// has one recording thread, so no second claim can race it.)
	{name: "wait_signal's error-record claim never succeeds", entry: "wait_signal", defaults: true,
		re:   regexp.MustCompile(`(atom\.global\.sys\.cas\.b32\s+%r\d+, \[%rd\d+\], )0, 1;(\n\s*setp\.ne\.s32\s+%p\d+, %r\d+, )0;`),
		repl: "${1}1, 1;${2}1;"},
}

// TestPTXMutantsAreKilled edits the committed PTX text (no compiler
// needed) and runs the fuzzer in PTX mode, with the race detector, on
// each mutant: every one must fail some case, while the unmutated PTX
// passes the same cases. The table's configuration is a small one (world
// 2, the two-shot kernels, a few seeds); a mutant marked defaults runs
// under the fuzzer's default flags, seed by seed until one fails. Run with
// -v for the kill table. A long sweep (SYMMEM_LONG=1).
func TestPTXMutantsAreKilled(t *testing.T) {
	longtest.Require(t, "the PTX mutant table")
	text, err := kernels.PTX()
	if err != nil {
		t.Fatal(err)
	}
	table := fuzz.Config{
		Seeds: 3, Strategy: fuzz.StrategyRandom, Faults: fuzz.FaultsNone, Race: true, Workers: 2,
		Worlds: []int{2}, Sizes: []uint64{64, 260}, Algos: []workload.Algo{workload.TwoShot},
	}
	defaults := fuzz.DefaultConfig()
	defaults.Seeds, defaults.Workers, defaults.Shrink, defaults.StopOnFailure = defaultSeeds, 1, false, true
	config := func(m ptxMutant) fuzz.Config {
		if m.defaults {
			return defaults
		}
		c := table
		if m.algos != nil {
			c.Algos, c.Sizes = m.algos, m.sizes
		}
		return c
	}
	run := func(text string, c fuzz.Config) (fuzz.Report, error) {
		p, err := ptx.Parse(text)
		if err != nil {
			return fuzz.Report{}, err
		}
		c.Kernels = sim.Kernels{PTX: true, Module: p}
		return fuzz.Fuzz(context.Background(), c)
	}
	control := func(t *testing.T, c fuzz.Config) {
		t.Helper()
		rep, err := run(text, c)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Failed != 0 {
			t.Fatalf("the unmutated PTX failed %d of %d cases: %v", rep.Failed, rep.Cases, rep.Failures[0].First.Failure)
		}
	}
	controlled := map[string]bool{} // the table configurations the unmutated PTX passed
	var kills strings.Builder
	fmt.Fprintf(&kills, "%-48s %-8s %s\n", "PTX mutant", "killed", "first failure")
	for _, m := range ptxMutants {
		t.Run(m.name, func(t *testing.T) {
			mutated, edits, err := m.apply(text)
			if err != nil {
				t.Fatal(err)
			}
			if edits == 0 {
				t.Fatalf("its pattern matches nothing in the PTX")
			}
			c := config(m)
			if key := fmt.Sprint(m.algos, m.sizes); !m.defaults && !controlled[key] {
				control(t, c)
				controlled[key] = true
			}
			rep, err := run(mutated, c)
			if err != nil {
				t.Fatal(err)
			}
			first := "-"
			if rep.Failed > 0 {
				f := rep.Failures[0].First
				first = fmt.Sprintf("seed %d: %s", f.Case.Seed, firstLine(f.Failure.Error()))
				if m.defaults {
					// The seeds up to the one that killed it.
					c.Seeds = int(f.Case.Seed-c.First) + 1
					control(t, c)
				}
			} else {
				t.Errorf("%d edits survived %d cases", edits, rep.Cases)
			}
			fmt.Fprintf(&kills, "%-48s %d/%-6d %s\n", m.name, rep.Failed, rep.Cases, first)
		})
	}
	t.Logf("\n%s", kills.String())
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return s
}
