package litmus

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/symmem/symmem/device/sim/memmodel"
)

// Result is the model's judgement of a test.
type Result struct {
	Test *Test
	// Outcomes are the allowed final states, one value per observable.
	Outcomes [][]int64
	// Holds is whether the test's condition holds under the model.
	Holds bool
	// Explored says how much of the execution space was examined.
	Explored memmodel.Result
}

// Run explores every execution of t the model allows and judges its
// condition.
func Run(t *Test, opts memmodel.Options) (*Result, error) {
	res, err := memmodel.Explore(&t.Program, t.Observables, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.Name, err)
	}
	r := &Result{Test: t, Explored: *res}
	for _, o := range res.Outcomes {
		if t.Filter == nil || t.Filter.Eval(o) {
			r.Outcomes = append(r.Outcomes, o)
		}
	}
	some, all := false, true
	for _, o := range r.Outcomes {
		if t.Cond.Eval(o) {
			some = true
		} else {
			all = false
		}
	}
	switch t.Quant {
	case Exists:
		r.Holds = some
	case NotExists:
		r.Holds = !some
	case Forall:
		r.Holds = all
	}
	return r, nil
}

// Terminates decides whether every fair execution of t's program ends
// (package memmodel's [memmodel.Terminates]); the condition plays no part.
func Terminates(t *Test, opts memmodel.Options) (*memmodel.Termination, error) {
	res, err := memmodel.Terminates(&t.Program, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.Name, err)
	}
	return res, nil
}

// FormatOutcome prints one final state as "P1:r1=1 x=2".
func (t *Test) FormatOutcome(o []int64) string {
	parts := make([]string, len(o))
	for i, v := range o {
		parts[i] = fmt.Sprintf("%s=%d", t.observableName(i), v)
	}
	return strings.Join(parts, " ")
}

// Satisfies reports whether outcome o satisfies the condition.
func (t *Test) Satisfies(o []int64) bool { return t.Cond.Eval(o) }

// Verdict is an expected judgement: whether the condition of the test at
// Path holds.
type Verdict struct {
	Path  string
	Holds bool
}

// ReadVerdicts reads "path,verdict" lines (verdict 1: the condition holds;
// 0: it does not).
func ReadVerdicts(r io.Reader) ([]Verdict, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = 2
	cr.Comment = '#'
	recs, err := cr.ReadAll()
	if err != nil {
		return nil, err
	}
	var out []Verdict
	for i, rec := range recs {
		path, v := strings.TrimSpace(rec[0]), strings.TrimSpace(rec[1])
		if i == 0 && path == "path" {
			continue
		}
		switch v {
		case "0", "1":
		default:
			return nil, fmt.Errorf("line %d: verdict %q: want 0 or 1", i+1, v)
		}
		out = append(out, Verdict{Path: path, Holds: v == "1"})
	}
	return out, nil
}

// Sampled is what seeded runs of the operational model produced.
type Sampled struct {
	// Outcomes are the distinct final states reached, in increasing order.
	Outcomes [][]int64
	// Finished counts the runs that reached a final state (the others
	// deadlocked or ran out of steps).
	Finished int
}

// Sample runs t's program under the operational model once per seed in
// [first, first+seeds), each run at most maxSteps steps.
func Sample(t *Test, first, seeds uint64, maxSteps int) (*Sampled, error) {
	s := &Sampled{}
	seen := map[string]bool{}
	for seed := first; seed < first+seeds; seed++ {
		o, ok, err := memmodel.Simulate(&t.Program, t.Observables, seed, maxSteps)
		if err != nil {
			return nil, fmt.Errorf("%s: seed %d: %w", t.Name, seed, err)
		}
		if !ok {
			continue
		}
		s.Finished++
		if t.Filter != nil && !t.Filter.Eval(o) {
			continue
		}
		if k := fmt.Sprint(o); !seen[k] {
			seen[k] = true
			s.Outcomes = append(s.Outcomes, o)
		}
	}
	slices.SortFunc(s.Outcomes, slices.Compare[[]int64])
	return s, nil
}

// Compare splits sampled outcomes into those the exact model forbids
// (never acceptable) and the allowed outcomes no run reached.
func Compare(exact, sampled [][]int64) (forbidden, unreached [][]int64) {
	in := func(set [][]int64, o []int64) bool {
		for _, x := range set {
			if slices.Equal(x, o) {
				return true
			}
		}
		return false
	}
	for _, o := range sampled {
		if !in(exact, o) {
			forbidden = append(forbidden, o)
		}
	}
	for _, o := range exact {
		if !in(sampled, o) {
			unreached = append(unreached, o)
		}
	}
	return forbidden, unreached
}
