package race

import "testing"

// TestReported: the set of accesses reported against one access takes
// each once, past the length where its list becomes a map too, and is
// empty after a reset.
func TestReported(t *testing.T) {
	recs := make([]rec, 3*reportedList)
	var p reported
	for round := range 2 {
		for i := range recs {
			if !p.add(&recs[i]) {
				t.Fatalf("round %d: access %d taken as reported before it was", round, i)
			}
		}
		for i := range recs {
			if p.add(&recs[i]) {
				t.Fatalf("round %d: access %d taken again", round, i)
			}
		}
		p.reset()
	}
}
