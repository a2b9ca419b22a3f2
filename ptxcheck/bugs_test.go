package ptxcheck

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// bugPairs are the pairs of examples/bugs: the finding each bug.json must
// give (its kind and the CUDA lines, or the harness step, its title
// names); fixed.json gives none. symptoms are the kinds of the other
// findings the bug may give besides, its consequences (a wrong result of
// a call whose data a peer overwrote).
var bugPairs = map[string]struct {
	kind     string
	lines    []string
	symptoms []string
}{
	"graph_frozen_epoch": {"race", []string{"graph_frozen_epoch/bug.cu:41", "graph_frozen_epoch/bug.cu:46"}, nil},
	"counter_wrap":       {"race", []string{"counter_wrap/bug.cu:43", "counter_wrap/bug.cu:48"}, []string{"result"}},
	// The hang names the poll of bug.cu:46 (get_value inlined there).
	"sentinel_negative_zero": {"hang", []string{"sentinel_negative_zero/bug.cu:46"}, nil},
	// The race names the memset's step and put_flag's store (bug.cu:18).
	"memset_after_peer_signal": {"race", []string{"the host's memset (store) of step 1 step 1 (memset flags)", "memset_after_peer_signal/bug.cu:18"}, nil},
	"missing_exit_barrier":     {"race", []string{"missing_exit_barrier/bug.cu:41", "missing_exit_barrier/bug.cu:46"}, []string{"result"}},
	// The two calls' stores of bug.cu:49 race with each other and with
	// the loads of bug.cu:54.
	"two_calls_two_streams":    {"race", []string{"two_calls_two_streams/bug.cu:49"}, []string{"result"}},
	"ranks_in_different_order": {"race", []string{"ranks_in_different_order/bug.cu:56", "ranks_in_different_order/bug.cu:61"}, []string{"result"}},
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
					if k == "fixed" || !hit && !slices.Contains(want.symptoms, f.Kind) {
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
