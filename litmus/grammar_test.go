package litmus

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/symmem/symmem/device/sim/memmodel"
)

// TestGrammarForms parses the forms herd and Dat3M accept beside the
// common ones: spaces around a thread's colon, numbered threads, bracketed
// locations, comments, "not exists", a locations list, a filter, ordering
// comparisons, labels with a space before the colon, and spaced headers.
func TestGrammarForms(t *testing.T) {
	const prog = `PTX forms
"a comment"
{ x = 0 ; P1 : r3 = 7 ; y @ generic aliases x ; s @ surface aliases x ; }
 P0 @ cta 0 , gpu 0 | P1@cta 0,gpu 0 ;
 st.weak x, 1       | ld.weak r0 , y ;
 LC00 :             | suld.weak r1, s ;
`
	for _, c := range []struct {
		tail string
		// outcome and whether it satisfies the condition
		vals  map[string]int64
		holds bool
		quant Quantifier
	}{
		{"exists (P1: r0 == 1)", map[string]int64{"P1:r0": 1}, true, Exists},
		{"exists (1 : r0 = 1 /\\ [x] == 1)", map[string]int64{"P1:r0": 1, "x": 1}, true, Exists},
		{"not exists (P1:r0 >= 1 \\/ P1:r3 < 7)", map[string]int64{"P1:r0": 0, "P1:r3": 7}, false, NotExists},
		{"~ exists (* why *) (P1:r0 <= 0)", map[string]int64{"P1:r0": 1}, false, NotExists},
		{"locations [x; P1:r1;]\nforall (P1:r1 > -1 /\\ not (P1:r0 <> P1:r0))", map[string]int64{"P1:r1": 0, "P1:r0": 1}, true, Forall},
		{"filter (P1:r0 == 1)\nexists (P1:r1 == 0);", map[string]int64{"P1:r0": 1, "P1:r1": 0}, true, Exists},
	} {
		test, err := Parse(prog + c.tail)
		if err != nil {
			t.Errorf("%q: %v", c.tail, err)
			continue
		}
		if test.Quant != c.quant {
			t.Errorf("%q: quantifier %v, want %v", c.tail, test.Quant, c.quant)
		}
		o := make([]int64, len(test.Observables))
		for i := range o {
			v, ok := c.vals[test.observableName(i)]
			if !ok {
				t.Fatalf("%q: observable %s not in the case", c.tail, test.observableName(i))
			}
			o[i] = v
		}
		if got := test.Satisfies(o); got != c.holds {
			t.Errorf("%q: %s on %v = %v, want %v", c.tail, test.Cond, c.vals, got, c.holds)
		}
	}
	test, err := Parse(prog + "exists (x == 1)")
	if err != nil {
		t.Fatal(err)
	}
	if a := test.Program.Aliases["y"]; a.Of != "x" || a.Kind != memmodel.Generic {
		t.Errorf("alias y = %+v", a)
	}
	if in := test.Program.Threads[1].Code[1]; in.Op != memmodel.OpLoad || in.Proxy != memmodel.Surface || in.Loc != "s" {
		t.Errorf("suld = %+v", in)
	}
	if _, ok := test.Program.Init["y"]; ok {
		t.Errorf("alias y has an initial value of its own: %v", test.Program.Init)
	}
	if got := test.Program.Threads[1].Regs["r3"]; got != 7 {
		t.Errorf("P1:r3 starts at %d, want 7", got)
	}
}

// TestParseProxyForms reads every proxy instruction form.
func TestParseProxyForms(t *testing.T) {
	for _, c := range []struct {
		text  string
		op    memmodel.Op
		proxy memmodel.Proxy
	}{
		{"suld.weak r0, s", memmodel.OpLoad, memmodel.Surface},
		{"sust.relaxed.gpu s, 1", memmodel.OpStore, memmodel.Surface},
		{"tld.weak r0, s", memmodel.OpLoad, memmodel.Texture},
		{"cold.weak r0, s", memmodel.OpLoad, memmodel.Constant},
		{"suatom.relaxed.gpu.add r0, s, 1", memmodel.OpAtom, memmodel.Surface},
		{"sured.relaxed.gpu.add s, 1", memmodel.OpAtom, memmodel.Surface},
		{"fence.proxy.alias", memmodel.OpProxyFence, memmodel.ProxyAlias},
		{"fence.proxy.surface", memmodel.OpProxyFence, memmodel.Surface},
		{"fence.proxy.texture", memmodel.OpProxyFence, memmodel.Texture},
		{"fence.proxy.constant", memmodel.OpProxyFence, memmodel.Constant},
		{"fence.proxy.generic", memmodel.OpProxyFence, memmodel.Generic},
	} {
		in, _, err := parseInst(c.text)
		if err != nil {
			t.Errorf("%s: %v", c.text, err)
			continue
		}
		if in.Op != c.op || in.Proxy != c.proxy {
			t.Errorf("%s: op %d proxy %v, want op %d proxy %v", c.text, in.Op, in.Proxy, c.op, c.proxy)
		}
	}
}

// TestSharedCorpusParses parses every litmus file of the shared corpus,
// whether or not a verdict file names it.
func TestSharedCorpusParses(t *testing.T) {
	root := filepath.Join(sharedCorpus, "ptx")
	if _, err := os.Stat(root); err != nil {
		t.Skipf("no shared litmus corpus at %s (a fresh clone has none)", sharedCorpus)
	}
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".litmus") {
			return err
		}
		n++
		test, err := ParseFile(path)
		if err != nil {
			t.Errorf("%v", err)
		} else if len(test.Program.Threads) == 0 || test.Cond == nil {
			t.Errorf("%s: no threads or no condition", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 250 {
		t.Errorf("parsed %d files, want the corpus's 253 or more", n)
	}
	t.Logf("parsed %d files", n)
}
