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
	// algos and sizes, when set, replace the table's for this mutant (and
	// its control run): a mutant of one kernel runs that kernel.
	algos []workload.Algo
	sizes []uint64
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
}

// TestPTXMutantsAreKilled edits the committed PTX text (no compiler
// needed) and runs the fuzzer in PTX mode, with the race detector, on
// each mutant: every one must fail some case, while the unmutated PTX
// passes the same cases. Run with -v for the kill table. A long sweep
// (SYMMEM_LONG=1).
func TestPTXMutantsAreKilled(t *testing.T) {
	longtest.Require(t, "the PTX mutant table")
	text, err := kernels.PTX()
	if err != nil {
		t.Fatal(err)
	}
	cfg := fuzz.Config{
		Seeds: 3, Strategy: fuzz.StrategyRandom, Faults: fuzz.FaultsNone, Race: true, Workers: 2,
		Worlds: []int{2}, Sizes: []uint64{64, 260}, Algos: []workload.Algo{workload.TwoShot},
	}
	run := func(text string, m ptxMutant) (fuzz.Report, error) {
		p, err := ptx.Parse(text)
		if err != nil {
			return fuzz.Report{}, err
		}
		c := cfg
		if m.algos != nil {
			c.Algos, c.Sizes = m.algos, m.sizes
		}
		c.Kernels = sim.Kernels{PTX: true, Module: p}
		return fuzz.Fuzz(context.Background(), c)
	}
	controlled := map[string]bool{} // the configurations the unmutated PTX passed
	var table strings.Builder
	fmt.Fprintf(&table, "%-44s %-8s %s\n", "PTX mutant", "killed", "first failure")
	for _, m := range ptxMutants {
		t.Run(m.name, func(t *testing.T) {
			edits := len(m.re.FindAllStringIndex(text, -1))
			if edits == 0 {
				t.Fatalf("its pattern matches nothing in the PTX")
			}
			if key := fmt.Sprint(m.algos, m.sizes); !controlled[key] {
				control, err := run(text, ptxMutant{algos: m.algos, sizes: m.sizes})
				if err != nil {
					t.Fatal(err)
				}
				if control.Failed != 0 {
					t.Fatalf("the unmutated PTX failed %d of %d cases: %v", control.Failed, control.Cases, control.Failures[0].First.Failure)
				}
				controlled[key] = true
			}
			rep, err := run(m.re.ReplaceAllString(text, m.repl), m)
			if err != nil {
				t.Fatal(err)
			}
			first := "-"
			if rep.Failed > 0 {
				f := rep.Failures[0].First
				first = fmt.Sprintf("seed %d: %s", f.Case.Seed, firstLine(f.Failure.Error()))
			} else {
				t.Errorf("%d edits survived %d cases", edits, rep.Cases)
			}
			fmt.Fprintf(&table, "%-44s %d/%-6d %s\n", m.name, rep.Failed, rep.Cases, first)
		})
	}
	t.Logf("\n%s", table.String())
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
