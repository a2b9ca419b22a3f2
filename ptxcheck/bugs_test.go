package ptxcheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bugPairs are the pairs of examples/bugs: the finding each bug.json must
// give (its kind and the CUDA lines its title names); fixed.json gives
// none.
var bugPairs = map[string]struct {
	kind  string
	lines []string
}{
	"graph_frozen_epoch":       {"race", []string{"graph_frozen_epoch/bug.cu:41", "graph_frozen_epoch/bug.cu:46"}},
	"clear_then_set_lost_flag": {"hang", []string{"clear_then_set_lost_flag/bug.cu:39", "clear_then_set_lost_flag/bug.cu:38", "clear_then_set_lost_flag/bug.cu:23"}},
}

// TestBugPairs: every pair of examples/bugs, built by nvcc from CUDA, is
// listed above; its bug is found at world 2 within 2 seeds, naming the
// lines of the cause, and its fix, under the same harness, is clean.
func TestBugPairs(t *testing.T) {
	dirs, err := filepath.Glob("../examples/bugs/*/bug.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) != len(bugPairs) {
		t.Errorf("%d pairs in examples/bugs, %d listed here", len(dirs), len(bugPairs))
	}
	for name, want := range bugPairs {
		t.Run(name, func(t *testing.T) {
			for _, k := range []string{"bug", "fixed"} {
				path := filepath.Join("../examples/bugs", name, k+".json")
				if _, err := os.Stat(path); err != nil {
					t.Fatal(err)
				}
				p, err := LoadHarness(path)
				if err != nil {
					t.Fatal(err)
				}
				rep, err := RunProgram(p, load(t, p.PTX), Options{Worlds: []int{2}, Seeds: 2, Vars: map[string]Expr{"n": "64"}})
				if err != nil {
					t.Fatal(err)
				}
				found := false
				for _, f := range rep.Findings {
					hit := f.Kind == want.kind
					for _, l := range want.lines {
						hit = hit && strings.Contains(f.Title, l)
					}
					found = found || hit
					if k == "fixed" || !hit {
						t.Errorf("%s: %s: %s\n%s", k, f.Kind, f.Title, strings.Join(f.Details, "\n"))
					}
				}
				if k == "bug" && !found {
					t.Errorf("bug: no %s naming %s", want.kind, strings.Join(want.lines, " and "))
				}
			}
		})
	}
}
