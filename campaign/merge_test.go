package campaign

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
)

// campaignOf is a toy campaign: seed s finds signature sigs[s%len] when
// s%3 == 0, and reaches trace "t<s%5>". One process reports each
// signature at its lowest seed, counts the seeds that found it, and counts
// cases, failures and distinct traces; the shards write what a shard
// would. The oracle, whole, is computed seed by seed, apart from Merge.
type toy struct {
	all  Range
	sigs []string
}

func (c toy) found(s uint64) (string, bool) {
	return c.sigs[s%uint64(len(c.sigs))], s%3 == 0
}

// write writes shard i of n's report into dir and returns its path.
func (c toy) write(t *testing.T, dir string, i, n int, build Build, flags []string) string {
	t.Helper()
	sh := Shard{Index: i, Count: n, Source: "--shard"}
	r := sh.Range(c.all)
	path := filepath.Join(dir, fmt.Sprintf("shard-%d-of-%d-%s.jsonl", i, n, build.Revision))
	w, err := Create(path, Header{Command: "toy", Shard: sh, Seeds: r})
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int64{"cases": int64(r.Count)}
	traces := map[string]bool{}
	firsts := map[string]*Finding{}
	var order []string
	for s := r.First; s < r.First+r.Count; s++ {
		traces[fmt.Sprintf("t%d", s%5)] = true
		sig, ok := c.found(s)
		if !ok {
			continue
		}
		counts["failed"]++
		if f := firsts[sig]; f != nil {
			f.Count++
			continue
		}
		firsts[sig] = &Finding{Signature: sig, Kind: "toy", Title: sig + " at " + fmt.Sprint(s), Order: []uint64{s}, Seed: s, Count: 1, Lines: []string{"replay: toy --seed " + fmt.Sprint(s)}}
		order = append(order, sig)
	}
	for _, sig := range order {
		w.Finding(*firsts[sig])
	}
	var set []string
	for tr := range traces {
		set = append(set, tr)
	}
	if err := w.Close(Summary{Command: "toy", Build: build, Flags: flags, Shard: sh, Campaign: c.all, Seeds: r,
		Counts: counts, Sets: map[string][]string{"traces": set}, Durations: map[string]float64{"cases": float64(i + 1)},
		WallSeconds: float64(i + 1), CPUSeconds: 1}); err != nil {
		t.Fatal(err)
	}
	return path
}

// whole is what one process over every seed reports.
func (c toy) whole() (failed int64, firsts map[string]uint64, counts map[string]int, traces int) {
	firsts, counts = map[string]uint64{}, map[string]int{}
	tr := map[uint64]bool{}
	for s := c.all.First; s < c.all.First+c.all.Count; s++ {
		tr[s%5] = true
		if sig, ok := c.found(s); ok {
			failed++
			if _, seen := firsts[sig]; !seen {
				firsts[sig] = s
			}
			counts[sig]++
		}
	}
	return failed, firsts, counts, len(tr)
}

var testBuild = Build{Version: "v1.2.3", Revision: "abc", Go: "go1.25"}

func readAll(t *testing.T, paths ...string) []*Report {
	t.Helper()
	var out []*Report
	for _, p := range paths {
		r, err := Read(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func TestMergeEqualsOneProcess(t *testing.T) {
	c := toy{all: Range{First: 10, Count: 97}, sigs: []string{"race a/b", "hang x", "race a/b", "wrong result y", "race c/d"}}
	failed, firsts, counts, traces := c.whole()
	for _, n := range []int{1, 2, 4, 7} {
		dir := t.TempDir()
		var paths []string
		for i := n - 1; i >= 0; i-- { // any order
			paths = append(paths, c.write(t, dir, i, n, testBuild, []string{"--seeds=97"}))
		}
		m, err := Merge(readAll(t, paths...))
		if err != nil {
			t.Fatal(err)
		}
		if m.Status() != StatusFindings || len(m.Problems) > 0 {
			t.Fatalf("%d shards: status %d, problems %q", n, m.Status(), m.Problems)
		}
		if m.Counts["cases"] != int64(c.all.Count) || m.Counts["failed"] != failed || len(m.Sets["traces"]) != traces {
			t.Errorf("%d shards: counts %v, %d traces; want %d cases, %d failed, %d traces", n, m.Counts, len(m.Sets["traces"]), c.all.Count, failed, traces)
		}
		if len(m.Findings) != len(firsts) {
			t.Fatalf("%d shards: %d findings, want %d", n, len(m.Findings), len(firsts))
		}
		for i, f := range m.Findings {
			if f.Seed != firsts[f.Signature] || f.Count != counts[f.Signature] {
				t.Errorf("%d shards: %q first at %d in %d seeds, want %d in %d", n, f.Signature, f.Seed, f.Count, firsts[f.Signature], counts[f.Signature])
			}
			if i > 0 && m.Findings[i-1].Seed > f.Seed {
				t.Errorf("%d shards: findings out of order: %d before %d", n, m.Findings[i-1].Seed, f.Seed)
			}
		}
		if m.Durations["cases"] != float64(n) || m.Wall != float64(n) || m.CPU != float64(n) {
			t.Errorf("%d shards: longest phase %v, wall %v, CPU %v; want %d, %d, %d", n, m.Durations["cases"], m.Wall, m.CPU, n, n, n)
		}
	}
}

func TestMergeRefusesOtherCampaigns(t *testing.T) {
	c := toy{all: Range{First: 0, Count: 20}, sigs: []string{"a"}}
	dir := t.TempDir()
	base := c.write(t, dir, 0, 2, testBuild, []string{"--faults=all", "--seeds=20"})
	other := testBuild
	other.Revision = "def"
	modified := testBuild
	modified.Modified = true
	for _, x := range []struct {
		name, path, want string
	}{
		{"build", c.write(t, dir, 1, 2, other, []string{"--faults=all", "--seeds=20"}), "build v1.2.3 def"},
		{"modified tree", c.write(t, t.TempDir(), 1, 2, modified, []string{"--faults=all", "--seeds=20"}), "+modified"},
		{"flags", c.write(t, t.TempDir(), 1, 2, testBuild, []string{"--faults=none", "--seeds=20"}), "flags --faults=none"},
		{"shard count", c.write(t, t.TempDir(), 1, 3, testBuild, []string{"--faults=all", "--seeds=20"}), "3 shards"},
		{"seeds", toy{all: Range{First: 0, Count: 30}, sigs: []string{"a"}}.write(t, t.TempDir(), 1, 2, testBuild, []string{"--faults=all", "--seeds=20"}), "campaign seeds 0-29"},
	} {
		t.Run(x.name, func(t *testing.T) {
			m, err := Merge(readAll(t, base, x.path))
			if err == nil || !strings.Contains(err.Error(), x.want) || !strings.Contains(err.Error(), x.path) {
				t.Fatalf("merged %+v, error %v; want a refusal naming %s and %q", m, err, x.path, x.want)
			}
		})
	}
}

func TestMergeMissingAndDuplicateShards(t *testing.T) {
	c := toy{all: Range{First: 0, Count: 40}, sigs: []string{"a", "b"}}
	dir := t.TempDir()
	var paths []string
	for i := range 5 {
		paths = append(paths, c.write(t, dir, i, 5, testBuild, nil))
	}
	// Shards 1 and 3 are missing; shard 4's report is there twice.
	again := filepath.Join(t.TempDir(), "retry.jsonl")
	data, err := os.ReadFile(paths[4])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(again, data, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Merge(readAll(t, paths[0], paths[2], paths[4], again))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.Missing, []int{1, 3}) {
		t.Errorf("missing %v, want [1 3]", m.Missing)
	}
	if d := m.Duplicates[4]; len(m.Duplicates) != 1 || !slices.Equal(d, []string{paths[4], again}) {
		t.Errorf("duplicates %v, want shard 4 in %s and %s", m.Duplicates, paths[4], again)
	}
	if m.Status() != StatusFailed || len(m.Problems) != 1 || !strings.Contains(m.Problems[0], "2 of 5 shards have no report: 1/5, 3/5") {
		t.Errorf("status %d, problems %q", m.Status(), m.Problems)
	}
	if want := int64(3 * 8); m.Counts["cases"] != want {
		t.Errorf("%d cases, want %d (the duplicate counted once)", m.Counts["cases"], want)
	}

	// A duplicate that found something else means the runs are not
	// deterministic: the campaign failed.
	r := readAll(t, paths[4])[0]
	r.Path = "changed.jsonl"
	r.Summary.Counts = map[string]int64{"cases": 8, "failed": 0}
	r.Findings = nil
	m, err = Merge(append(readAll(t, paths...), r))
	if err != nil {
		t.Fatal(err)
	}
	if m.Status() != StatusFailed || len(m.Problems) != 1 || !strings.Contains(m.Problems[0], "shard 4/5") || !strings.Contains(m.Problems[0], "disagree") {
		t.Errorf("status %d, problems %q", m.Status(), m.Problems)
	}
}

func TestMergeFailedShards(t *testing.T) {
	c := toy{all: Range{First: 0, Count: 10}, sigs: []string{"a"}}
	dir := t.TempDir()
	rs := readAll(t, c.write(t, dir, 0, 2, testBuild, nil), c.write(t, dir, 1, 2, testBuild, nil))
	rs[0].Summary.Interrupted = true
	rs[1].Summary.Error = "seed 7: no such program"
	m, err := Merge(rs)
	if err != nil {
		t.Fatal(err)
	}
	if m.Status() != StatusFailed || len(m.Problems) != 2 || !strings.Contains(m.Problems[0], "interrupted") || !strings.Contains(m.Problems[1], "seed 7: no such program") {
		t.Errorf("status %d, problems %q", m.Status(), m.Problems)
	}
}

// TestMergeFixedLines: lines every shard computes alike are taken from
// any; shards that computed them differently fail the campaign.
func TestMergeFixedLines(t *testing.T) {
	c := toy{all: Range{First: 0, Count: 10}, sigs: []string{"a"}}
	dir := t.TempDir()
	rs := readAll(t, c.write(t, dir, 0, 2, testBuild, nil), c.write(t, dir, 1, 2, testBuild, nil))
	for _, r := range rs {
		r.Summary.Fixed = map[string][]string{"test.litmus": {"exists x=1: holds"}}
	}
	m, err := Merge(rs)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Problems) > 0 || !slices.Equal(m.Fixed["test.litmus"], []string{"exists x=1: holds"}) {
		t.Fatalf("problems %q, fixed %q", m.Problems, m.Fixed)
	}
	rs[1].Summary.Fixed = map[string][]string{"test.litmus": {"exists x=1: does not hold"}}
	if m, err = Merge(rs); err != nil {
		t.Fatal(err)
	}
	if m.Status() != StatusFailed || len(m.Problems) != 1 || !strings.Contains(m.Problems[0], "shard 1/2") {
		t.Fatalf("status %d, problems %q", m.Status(), m.Problems)
	}
}

func TestMergeClean(t *testing.T) {
	c := toy{all: Range{First: 1, Count: 2}, sigs: []string{"a"}} // seeds 1, 2: none divisible by 3
	dir := t.TempDir()
	m, err := Merge(readAll(t, c.write(t, dir, 0, 2, testBuild, nil), c.write(t, dir, 1, 2, testBuild, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if m.Status() != StatusClean || len(m.Findings) != 0 {
		t.Errorf("status %d, findings %v", m.Status(), m.Findings)
	}
}

func TestWriterLeavesNoPartialReport(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.jsonl")
	w, err := Create(path, Header{Command: "toy", Shard: Whole(), Seeds: Range{0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	w.Finding(Finding{Signature: "x", Order: []uint64{0}, Count: 1})
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the report exists before it is closed: %v", err)
	}
	w.Abort()
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("an aborted report left %v", ents)
	}
	if _, err := Create(filepath.Join(dir, "no", "such", "r.jsonl"), Header{}); err == nil || !strings.Contains(err.Error(), "--report") {
		t.Fatalf("a report in a folder that does not exist: %v", err)
	}
}

func TestReadRefusesPartialReports(t *testing.T) {
	c := toy{all: Range{First: 0, Count: 9}, sigs: []string{"a", "b"}}
	path := c.write(t, t.TempDir(), 0, 1, testBuild, nil)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n")
	for _, x := range []struct {
		name, text, want string
	}{
		{"no summary", strings.Join(lines[:len(lines)-1], ""), `"finding" record where a "summary" record belongs`},
		{"cut mid-line", string(data[:len(data)-20]), "line"},
		{"a finding lost", lines[0] + strings.Join(lines[2:], ""), "counts 2 findings, the report has 1"},
		{"empty", "", "not a report"},
		{"not JSON", "hello\nworld\n", "line 1"},
	} {
		t.Run(x.name, func(t *testing.T) {
			_, err := Parse([]byte(x.text))
			if err == nil || !strings.Contains(err.Error(), x.want) {
				t.Fatalf("error %v, want one with %q", err, x.want)
			}
		})
	}
}

func TestBuildOf(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.25.0", Main: debug.Module{Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.modified", Value: "true"}}}
	if b := BuildOf("", info); b != (Build{Version: "(devel)", Revision: "0123abcd", Modified: true, Go: "go1.25.0"}) {
		t.Errorf("build %+v", b)
	}
	if b := BuildOf("v2.0.0", info); b.Version != "v2.0.0" {
		t.Errorf("linked version: %+v", b)
	}
	if b := BuildOf("", nil); b.Revision != "unknown" || b.Version != "unknown" {
		t.Errorf("no build information: %+v", b)
	}
}
