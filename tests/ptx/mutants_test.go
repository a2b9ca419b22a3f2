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
}

// ptxMutants are compiled kernels broken the way a careless edit of the
// CUDA source would break them, made without a compiler.
var ptxMutants = []ptxMutant{
	{"every bar.sync dropped", regexp.MustCompile(`(?m)^\s*bar\.sync\s+0;\n`), ""},
	{"waits acquire -> relaxed", regexp.MustCompile(`atom\.acquire\.sys\.global\.cas`), "atom.relaxed.sys.global.cas"},
	{"puts release -> relaxed", regexp.MustCompile(`atom\.release\.sys\.global\.cas`), "atom.relaxed.sys.global.cas"},
	{"signals .sys -> .gpu", regexp.MustCompile(`atom\.(acquire|release)\.sys\.global\.cas`), "atom.$1.gpu.global.cas"},
	// A wait's compare-and-swap (1 -> 0) succeeds when it read 1; broken,
	// it takes any value but 2 for success, an idle slot included.
	{"wait's flag compare accepts an idle slot",
		regexp.MustCompile(`(atom\.acquire\.sys\.global\.cas\.b32 (%r\d+), [^\n]*\n[^\n]*\n\s*)setp\.eq\.s32\s+(%p\d+), (%r\d+), 1;`),
		"${1}setp.ne.s32 $3, $4, 2;"},
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
	run := func(text string) (fuzz.Report, error) {
		m, err := ptx.Parse(text)
		if err != nil {
			return fuzz.Report{}, err
		}
		c := cfg
		c.Kernels = sim.Kernels{PTX: true, Module: m}
		return fuzz.Fuzz(context.Background(), c)
	}
	control, err := run(text)
	if err != nil {
		t.Fatal(err)
	}
	if control.Failed != 0 {
		t.Fatalf("the unmutated PTX failed %d of %d cases: %v", control.Failed, control.Cases, control.Failures[0].First.Failure)
	}
	var table strings.Builder
	fmt.Fprintf(&table, "%-44s %-8s %s\n", "PTX mutant", "killed", "first failure")
	for _, m := range ptxMutants {
		edits := len(m.re.FindAllStringIndex(text, -1))
		if edits == 0 {
			t.Errorf("mutant %q: its pattern matches nothing in the PTX", m.name)
			continue
		}
		rep, err := run(m.re.ReplaceAllString(text, m.repl))
		if err != nil {
			t.Fatalf("mutant %q: %v", m.name, err)
		}
		first := "-"
		if rep.Failed > 0 {
			f := rep.Failures[0].First
			first = fmt.Sprintf("seed %d: %s", f.Case.Seed, firstLine(f.Failure.Error()))
		} else {
			t.Errorf("mutant %q (%d edits) survived %d cases", m.name, edits, rep.Cases)
		}
		fmt.Fprintf(&table, "%-44s %d/%-6d %s\n", m.name, rep.Failed, rep.Cases, first)
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
