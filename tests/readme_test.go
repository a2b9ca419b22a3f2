package tests

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeDocumentsDifferences: the README says where symmem departs from
// the reference, beginning with compare_set on a missing key.
func TestReadmeDocumentsDifferences(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i := strings.Index(text, "## Where it differs from PyTorch's symmetric memory and c10d")
	if i < 0 {
		t.Fatal("README has no section on its differences from the reference")
	}
	section := text[i:]
	if j := strings.Index(section[3:], "\n## "); j >= 0 {
		section = section[:j+3]
	}
	for _, want := range []string{"compare_set", "missing key", "rank.PadRegions", "AllocID", "4-byte alignment"} {
		if !strings.Contains(section, want) {
			t.Errorf("the differences section does not mention %q", want)
		}
	}
}
