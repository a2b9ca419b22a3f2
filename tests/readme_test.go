package tests

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeDocumentsDifferences: docs/differences.md says where symmem
// departs from the reference, beginning with compare_set on a missing key,
// and the README links to it.
func TestReadmeDocumentsDifferences(t *testing.T) {
	b, err := os.ReadFile("../docs/differences.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(b)
	if !strings.HasPrefix(section, "# Where symmem differs from PyTorch's symmetric memory and c10d\n") {
		t.Error("docs/differences.md does not start with its title")
	}
	for _, want := range []string{"compare_set", "missing key", "rank.PadRegions", "AllocID", "4-byte alignment"} {
		if !strings.Contains(section, want) {
			t.Errorf("docs/differences.md does not mention %q", want)
		}
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "(docs/differences.md)") {
		t.Error("README does not link to docs/differences.md")
	}
}
