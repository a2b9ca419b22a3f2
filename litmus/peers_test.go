package litmus

import (
	"path/filepath"
	"testing"

	"github.com/symmem/symmem/device/sim/memmodel"
)

// TestPeerShapes runs the litmus tests of the ordering problems that
// symmem check finds in shipped all-reduce kernels (docs/peers.md): each
// has its verdict under the PTX model, and each shape a kernel has (all but
// the fixed start barrier) races on its data location, as the kernel's
// finding says.
func TestPeerShapes(t *testing.T) {
	checkCorpus(t, filepath.Join("testdata", "peers", "expected.csv"), operationalSeeds)
	for _, c := range []struct{ file, loc string }{
		{"MP-volatile-start-barrier.litmus", "x"},
		{"LB-volatile-end-barrier.litmus", "x"},
		{"LB-volatile-start-tmp.litmus", "t"},
		{"flag-read-after-bar.litmus", "g"},
		{"S-rearm-weak.litmus", "x"},
		{"MP-release-without-bar.litmus", "x"},
		{"atom-gpu-scope-across-devices.litmus", "x"},
		{"shared-same-value.litmus", "x"},
	} {
		file, loc := c.file, c.loc
		test, err := ParseFile(filepath.Join("testdata", "peers", file))
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(test, memmodel.Options{})
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		raced := false
		for _, r := range res.Explored.Races {
			if r.First.Loc == loc && r.First.Thread != r.Second.Thread {
				raced = true
			}
		}
		if !raced {
			t.Errorf("%s: no race on %s (races %v)", file, loc, res.Explored.Races)
		}
	}
}
