package ptxcheck

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/symmem/symmem/internal/longtest"
)

// mscclppRun is one run of TestPeersMSCCLPP: a harness of examples/peers,
// the PTX file it names with its architecture replaced, the vars and
// worlds it runs with, and the findings the docs explain.
type mscclppRun struct {
	harness   string
	arch      string // "_sm80.ptx", "_sm100.ptx" or "" (the harness's own)
	seeds     int
	vars      map[string]Expr
	worlds    []int
	explained []explained
	must      []explained // the findings the run must make (nil: none asked)
	bigPTX    bool        // the family's bigPTX: left out of the default run under -race
}

// mscclppMin is the all-pairs harness of the MIN reduction (f32 then f16)
// on the compute_80 PTX, written from the skeleton of symmem check --init
// (docs/peers-mscclpp.md): the LL8 packets read torn (H) give wrong
// minima, the zero a fresh scratch holds.
var mscclppMin = struct {
	harness string
	small   map[string]Expr
}{"mscclpp_allpair_min_sm80", map[string]Expr{"n": "256", "blocks": "world - 1", "threads": "32*(world - 1)"}}

// mscclppRuns lists the runs of TestPeersMSCCLPP: the MSCCL++ families of
// peerFamilies (their harnesses name the compute_90 PTX) with the
// compute_80 and compute_100 PTX, whose entry names are the same, and the
// MIN harness (compute_80). By default each family's world-2 harness at
// its small size with the compute_100 PTX, one seed; with SYMMEM_LONG=1 worlds 2 and 4 at the harness's own
// size, 3 seeds, and world 8 at the small size, one seed (under the race
// detector worlds 2 and 4 at the small size, one seed), and the MIN
// harness at the host's own launch shape.
func mscclppRuns() []mscclppRun {
	var runs []mscclppRun
	for _, fam := range peerFamilies {
		if !strings.HasPrefix(fam.family, "mscclpp ") {
			continue
		}
		archs := []string{"_sm100.ptx"} // compute_80 by default through the MIN harness
		if longtest.Enabled() {
			archs = []string{"_sm80.ptx", "_sm100.ptx"}
		}
		for _, arch := range archs {
			hs := fam.harnesses[:1]
			if longtest.Enabled() {
				hs = fam.harnesses
			}
			for k, h := range hs {
				r := mscclppRun{harness: h, arch: arch, seeds: 1, vars: fam.small, worlds: fam.smallWorlds, explained: fam.explained, bigPTX: fam.bigPTX}
				if k == 0 {
					r.must = fam.must
				}
				if longtest.Enabled() {
					w8 := strings.HasSuffix(h, "_w8")
					if raceOn && w8 {
						continue
					}
					// World 8 at its own size takes minutes a
					// seed (the all-pairs and packet kernels):
					// it runs at the small size, one seed.
					if !raceOn && !w8 {
						r.seeds, r.vars, r.worlds, r.must = 3, nil, nil, nil
					}
				}
				runs = append(runs, r)
			}
		}
	}
	torn := []explained{torn}
	runs = append(runs, mscclppRun{harness: mscclppMin.harness, seeds: 1, vars: mscclppMin.small, worlds: []int{2}, explained: torn, must: torn})
	if longtest.Enabled() && !raceOn {
		// The host's own shape, (world-1)*4 blocks of 512 threads, at
		// worlds 2 and 4; the small shape at world 8.
		runs = append(runs,
			mscclppRun{harness: mscclppMin.harness, seeds: 3, worlds: []int{2, 4}, explained: torn},
			mscclppRun{harness: mscclppMin.harness, seeds: 3, vars: mscclppMin.small, worlds: []int{8}, explained: torn})
	}
	return runs
}

// TestPeersMSCCLPP runs MSCCL++'s all-reduce kernels of ../shared/peers
// (skipped when it is absent) at the architectures TestPeers leaves out,
// and the MIN reduction: every finding must be one docs/peers.md
// explains (H, I or J), and the default runs must make the findings the
// family's first harness makes at compute_90.
func TestPeersMSCCLPP(t *testing.T) {
	if _, err := os.Stat(peersDir); err != nil {
		t.Skipf("no shipped kernels at %s (a fresh clone has none): %v", peersDir, err)
	}
	if raceOn && longtest.Enabled() {
		t.Log("the race detector is on: worlds 2 and 4 at the small sizes, 1 seed (every harness at its own size, 3 seeds, runs without -race)")
	}
	// Under the race detector the blocks run at most 128 threads, as in
	// TestPeers.
	maxThreads := 0
	if raceOn {
		maxThreads = 128
	}
	sources := map[string]*Source{}
	for _, r := range mscclppRuns() {
		name := r.harness
		if r.arch != "" {
			name += " at " + strings.TrimSuffix(strings.TrimPrefix(r.arch, "_"), ".ptx")
		}
		if r.vars == nil {
			name += " (own size)"
		}
		if r.worlds != nil {
			name += fmt.Sprintf(" worlds %v", r.worlds)
		}
		t.Run(name, func(t *testing.T) {
			if r.bigPTX && raceOn && !longtest.Enabled() {
				t.Skip("its PTX takes the race detector tens of seconds to parse: it runs without -race, and with SYMMEM_LONG=1")
			}
			p, err := LoadHarness("../examples/peers/" + r.harness + ".json")
			if err != nil {
				t.Fatal(err)
			}
			if r.arch != "" {
				if !strings.Contains(p.PTX, "_sm90.ptx") {
					t.Fatalf("%s names %s, not a compute_90 file", r.harness, p.PTX)
				}
				p.PTX = strings.Replace(p.PTX, "_sm90.ptx", r.arch, 1)
			}
			src := sources[p.PTX]
			if src == nil {
				src = load(t, p.PTX)
				sources[p.PTX] = src
			}
			start := time.Now()
			rep, err := RunProgram(p, src, Options{Worlds: r.worlds, Seeds: r.seeds, Vars: r.vars, Jobs: 2, MaxThreads: maxThreads})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, f := range rep.Findings {
				name := ""
				for _, e := range r.explained {
					if e.matches(f) {
						name = e.name
						break
					}
				}
				if name == "" {
					t.Errorf("a finding docs/peers.md does not explain: %s\n%s", f.Title, strings.Join(f.Details, "\n"))
					name = "unexplained"
				}
				names = append(names, name)
			}
			t.Logf("%d findings (%s) in %v", len(rep.Findings), strings.Join(names, ", "), time.Since(start).Round(time.Millisecond))
			for _, e := range r.must {
				found := false
				for _, f := range rep.Findings {
					found = found || e.matches(f)
				}
				if !found {
					t.Errorf("no %s finding (%s %q)", e.name, e.kind, e.has)
				}
			}
		})
	}
}
