package litmus

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/symmem/symmem/device/sim/memmodel"
)

// sharedCorpus is the PTX litmus corpus beside the repository, when there.
const sharedCorpus = "../../shared/litmus"

// operationalSeeds is how many seeded runs of the operational model each
// test gets.
const operationalSeeds = 100

// checkCorpus runs every test of a verdict file: the exact model must give
// the expected verdict, and the operational model, over seeds runs, must
// reach only outcomes the exact model allows.
func checkCorpus(t *testing.T, csvPath string, seeds uint64) {
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
	agree, allowed, unreached := 0, 0, 0
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
		} else {
			agree++
		}
		s, err := Sample(test, 0, seeds, 400)
		if err != nil {
			t.Errorf("%s: %v", v.Path, err)
			continue
		}
		forbidden, missed := Compare(res.Outcomes, s.Outcomes)
		for _, o := range forbidden {
			t.Errorf("%s: the operational model reached %s, which the PTX model forbids", v.Path, test.FormatOutcome(o))
		}
		allowed += len(res.Outcomes)
		unreached += len(missed)
	}
	t.Logf("%d/%d verdicts agree; the operational model, %d seeds a test, reached %d of %d allowed outcomes and none forbidden",
		agree, len(verdicts), seeds, allowed-unreached, allowed)
}

// TestProjectLitmus runs the project's own litmus tests: fence shortcuts,
// store buffering, message passing, load buffering and shared memory.
func TestProjectLitmus(t *testing.T) {
	checkCorpus(t, filepath.Join("testdata", "expected.csv"), operationalSeeds)
}

// TestSharedCorpus runs the shared PTX litmus corpus (Dat3M's tests with the
// PTX model's verdicts) when it is beside the repository: the tests
// without proxies (expected.csv) and those of proxies and virtual aliases
// (expected-proxy.csv).
func TestSharedCorpus(t *testing.T) {
	if _, err := os.Stat(sharedCorpus); err != nil {
		t.Skipf("no shared litmus corpus at %s (a fresh clone has none)", sharedCorpus)
	}
	for _, name := range []string{"expected.csv", "expected-proxy.csv"} {
		t.Run(name, func(t *testing.T) {
			checkCorpus(t, filepath.Join(sharedCorpus, name), operationalSeeds)
		})
	}
	t.Run("liveness.csv", func(t *testing.T) {
		checkLiveness(t, filepath.Join(sharedCorpus, "liveness.csv"))
	})
}

// checkLiveness decides termination of every test of a verdict file (1:
// every fair execution ends) and compares.
func checkLiveness(t *testing.T, csvPath string) {
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	verdicts, err := ReadVerdicts(f)
	if err != nil {
		t.Fatalf("%s: %v", csvPath, err)
	}
	agree, hangs := 0, 0
	for _, v := range verdicts {
		test, err := ParseFile(filepath.Join(filepath.Dir(csvPath), v.Path))
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		res, err := Terminates(test, memmodel.Options{})
		if err != nil {
			t.Errorf("%s: %v", v.Path, err)
			continue
		}
		if res.Ends != v.Holds {
			t.Errorf("%s: every fair execution ends = %v, want %v (hang %v)", v.Path, res.Ends, v.Holds, res.Hang)
			continue
		}
		agree++
		if !res.Ends {
			hangs++
		}
	}
	if len(verdicts) == 0 || agree != len(verdicts) {
		t.Errorf("%d/%d termination verdicts agree", agree, len(verdicts))
	}
	t.Logf("%d/%d termination verdicts agree (%d hangs)", agree, len(verdicts), hangs)
}

// TestOperationalStoreOrder: in 200 seeds the operational model reaches
// the clear-then-set outcome (the answer to a set lands before the
// thread's earlier clear, which erases it), and with fences on both sides
// never does.
func TestOperationalStoreOrder(t *testing.T) {
	for _, c := range []struct {
		fence   string
		allowed bool
	}{{"", true}, {"fence.sc.sys", false}} {
		body := "PTX S\n{ x=1; y=0; }\n P0@cta 0,gpu 0 | P1@cta 0,gpu 1 ;\n" +
			" st.relaxed.sys x, 0 | ld.relaxed.sys r0, y ;\n" +
			" " + c.fence + " | bne r0, 1, L1 ;\n" +
			" st.relaxed.sys y, 1 | " + c.fence + " ;\n" +
			"                     | st.relaxed.sys x, 1 ;\n" +
			"                     | L1: ;\n" +
			"exists (P1:r0 == 1 /\\ x == 0)"
		test, err := Parse(body)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(test, memmodel.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Holds != c.allowed {
			t.Fatalf("fence %q: the PTX model allows the lost answer: %v, want %v", c.fence, res.Holds, c.allowed)
		}
		s, err := Sample(test, 0, 200, 400)
		if err != nil {
			t.Fatal(err)
		}
		hit := false
		for _, o := range s.Outcomes {
			hit = hit || test.Satisfies(o)
		}
		if forbidden, _ := Compare(res.Outcomes, s.Outcomes); len(forbidden) > 0 || hit != c.allowed {
			t.Errorf("fence %q: the operational model reached the lost answer: %v, want %v (forbidden outcomes reached: %v)", c.fence, hit, c.allowed, forbidden)
		}
	}
}
