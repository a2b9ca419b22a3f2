package slab

import "testing"

// TestNewCarvesDistinctZeroValues checks that New hands out zero values,
// each its own, across the end of an array.
func TestNewCarvesDistinctZeroValues(t *testing.T) {
	var s Slab[[2]int]
	seen := map[*[2]int]bool{}
	for i := range 3*Size + 1 {
		x := s.New()
		if *x != [2]int{} {
			t.Fatalf("value %d is not zero: %v", i, *x)
		}
		if seen[x] {
			t.Fatalf("value %d handed out twice", i)
		}
		seen[x] = true
		x[0], x[1] = i, -i // a later value must not see these
	}
}
