package minimize

import (
	"slices"
	"testing"
)

func TestShortestPrefixAndDDMin(t *testing.T) {
	items := []int{1, 2, 3, 4, 5, 6, 7, 8}
	hasAll := func(want ...int) func([]int) bool {
		return func(s []int) bool {
			for _, w := range want {
				if !slices.Contains(s, w) {
					return false
				}
			}
			return true
		}
	}
	if got := ShortestPrefix(items, hasAll(5)); !slices.Equal(got, []int{1, 2, 3, 4, 5}) {
		t.Fatalf("ShortestPrefix = %v, want [1 2 3 4 5]", got)
	}
	if got := DDMin(items, hasAll(2, 7)); !slices.Equal(got, []int{2, 7}) {
		t.Fatalf("DDMin = %v, want [2 7]", got)
	}
	if got := DDMin(items, func([]int) bool { return true }); len(got) != 0 {
		t.Fatalf("DDMin of an always-failing input = %v, want empty", got)
	}
}
