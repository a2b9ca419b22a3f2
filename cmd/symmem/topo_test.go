package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestTopoPrintsALegend: topo's matrix comes with a legend of what its
// entries mean and a summary line; a pair without links is not fully
// connected.
func TestTopoPrintsALegend(t *testing.T) {
	out, err := runCmd(t, "topo", "--world", "3")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{" GPU2   18   18    0", "Legend: the entry in row GPUi, column GPUj is the number of NVLink links", "0 on the diagonal"} {
		if !strings.Contains(out, want) {
			t.Errorf("topo output lacks %q:\n%s", want, out)
		}
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); lines[len(lines)-1] != "3 simulated devices, fully connected: true" {
		t.Errorf("last line %q, want the summary", lines[len(lines)-1])
	}
	var b bytes.Buffer
	printMatrix(&b, [][]int{{0, 2}, {0, 0}}, false)
	if !strings.HasSuffix(b.String(), "2 devices, fully connected: false\n") {
		t.Errorf("a pair without links:\n%s", b.String())
	}
}
