package hostmem

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	got, err := Parse(strings.NewReader("MemTotal:       24684096 kB\nMemFree:  100 kB\nMemAvailable:   24072936 kB\n"))
	if err != nil || got != 24072936<<10 {
		t.Fatalf("Parse = %d, %v; want %d", got, err, uint64(24072936)<<10)
	}
	for _, bad := range []string{"MemTotal: 1 kB\n", "MemAvailable: lots kB\n", "MemAvailable: 12 MB\n", "MemAvailable:\n"} {
		if _, err := Parse(strings.NewReader(bad)); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

// TestParseField reads MemTotal the same way.
func TestParseField(t *testing.T) {
	got, err := ParseField(strings.NewReader("MemFree:  1000 kB\nMemTotal:       24576000 kB\n"), "MemTotal")
	if err != nil || got != 24576000<<10 {
		t.Fatalf("ParseField = %d, %v; want %d", got, err, uint64(24576000)<<10)
	}
	for _, bad := range []string{"", "MemFree: 10 kB\n", "MemTotal: lots kB\n", "MemTotal: 10 MB\n"} {
		if _, err := ParseField(strings.NewReader(bad), "MemTotal"); err == nil {
			t.Errorf("ParseField(%q, MemTotal) accepted", bad)
		}
	}
}

func TestAvailableOnThisHost(t *testing.T) {
	n, err := Available()
	if err != nil {
		t.Skipf("no %s here: %v", Path, err)
	}
	if n == 0 {
		t.Fatal("0 bytes available")
	}
}
