package litmus

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/symmem/symmem/device/sim/memmodel"
)

// checkOperational samples every test of a verdict file under the
// operational model and fails on any outcome the exact model forbids. It
// returns how many allowed outcomes no run reached, over how many.
func checkOperational(t *testing.T, csvPath string, seeds uint64) (unreached, allowed int) {
	t.Helper()
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	verdicts, err := ReadVerdicts(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range verdicts {
		test, err := ParseFile(filepath.Join(filepath.Dir(csvPath), v.Path))
		if err != nil {
			t.Fatal(err)
		}
		exact, err := Run(test, memmodel.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := Sample(test, 0, seeds, 400)
		if err != nil {
			t.Fatal(err)
		}
		bad, missed := Compare(exact.Outcomes, s.Outcomes)
		for _, o := range bad {
			t.Errorf("%s: the operational model reached %s, which the PTX model forbids", v.Path, test.FormatOutcome(o))
		}
		for _, o := range missed {
			t.Logf("%s: allowed but not reached in %d seeds: %s", v.Path, seeds, test.FormatOutcome(o))
		}
		unreached += len(missed)
		allowed += len(exact.Outcomes)
	}
	return unreached, allowed
}

// TestOperationalModelIsSound: every outcome the seeded operational model
// reaches on the project's litmus tests is one the exact model allows.
func TestOperationalModelIsSound(t *testing.T) {
	u, a := checkOperational(t, filepath.Join("testdata", "expected.csv"), 200)
	t.Logf("%d of %d allowed outcomes not reached", u, a)
}

// TestOperationalModelIsSoundOnSharedCorpus is the same on the shared
// corpus, when present.
func TestOperationalModelIsSoundOnSharedCorpus(t *testing.T) {
	csv := filepath.Join(sharedCorpus, "expected.csv")
	if _, err := os.Stat(csv); err != nil {
		t.Skipf("no shared litmus corpus at %s (a fresh clone has none)", sharedCorpus)
	}
	u, a := checkOperational(t, csv, 200)
	t.Logf("%d of %d allowed outcomes not reached", u, a)
}
