package litmus

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/symmem/symmem/device/sim/memmodel"
)

// sharedCorpus is the PTX litmus corpus beside the repository, when there.
const sharedCorpus = "../../shared/litmus"

// checkVerdicts runs every test of a verdict file and fails on each
// disagreement.
func checkVerdicts(t *testing.T, csvPath string) {
	t.Helper()
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	verdicts, err := ReadVerdicts(f)
	if err != nil {
		t.Fatalf("%s: %v", csvPath, err)
	}
	if len(verdicts) == 0 {
		t.Fatalf("%s: no verdicts", csvPath)
	}
	agree := 0
	for _, v := range verdicts {
		test, err := ParseFile(filepath.Join(filepath.Dir(csvPath), v.Path))
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		res, err := Run(test, memmodel.Options{})
		if err != nil {
			t.Errorf("%s: %v", v.Path, err)
			continue
		}
		if res.Holds != v.Holds {
			t.Errorf("%s: condition holds = %v, want %v; outcomes:", v.Path, res.Holds, v.Holds)
			for _, o := range res.Outcomes {
				t.Logf("  %s", test.FormatOutcome(o))
			}
			continue
		}
		agree++
	}
	t.Logf("%d/%d agree", agree, len(verdicts))
}

// TestProjectLitmus runs the project's own litmus tests: fence shortcuts,
// store buffering, message passing, load buffering and shared memory.
func TestProjectLitmus(t *testing.T) {
	checkVerdicts(t, filepath.Join("testdata", "expected.csv"))
}

// TestSharedCorpus runs the shared PTX litmus corpus (Dat3M's tests with the
// PTX model's verdicts) when it is beside the repository.
func TestSharedCorpus(t *testing.T) {
	csv := filepath.Join(sharedCorpus, "expected.csv")
	if _, err := os.Stat(csv); err != nil {
		t.Skipf("no shared litmus corpus at %s (a fresh clone has none)", sharedCorpus)
	}
	checkVerdicts(t, csv)
}
