package ptx

import (
	"testing"
	"time"

	"github.com/symmem/symmem/kernels"
)

// TestKernelsPTXDecodes parses the committed PTX of the kernels and decodes
// every function: every instruction the compiler emitted is one the
// interpreter knows.
func TestKernelsPTXDecodes(t *testing.T) {
	text, err := kernels.PTX()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	m, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Check(); err != nil {
		t.Fatal(err)
	}
	t.Logf("parsed and decoded %d functions (%d entries) in %v", len(m.funcs), len(m.entries), time.Since(start))
}
