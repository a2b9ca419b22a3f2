package main

import (
	"strings"
	"testing"
)

// TestMemTotal reads MemTotal from /proc/meminfo's format and refuses
// what it cannot read.
func TestMemTotal(t *testing.T) {
	got, ok := memTotal(strings.NewReader("MemFree:  1000 kB\nMemTotal:       24576000 kB\nSwapTotal: 0 kB\n"))
	if !ok || got != 24576000<<10 {
		t.Fatalf("memTotal = %d, %v; want %d, true", got, ok, uint64(24576000)<<10)
	}
	for _, bad := range []string{"", "MemFree: 10 kB\n", "MemTotal: lots kB\n", "MemTotal: 10 MB\n"} {
		if got, ok := memTotal(strings.NewReader(bad)); ok {
			t.Errorf("memTotal(%q) = %d, true; want false", bad, got)
		}
	}
}
