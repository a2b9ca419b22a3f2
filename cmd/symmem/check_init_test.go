package main

import (
	"strings"
	"testing"
)

// TestCheckInit: --init prints the skeleton of a module's only entry, or
// of the entry named; for a module of several entries without one named
// it fails with the list of them, printing no harness.
func TestCheckInit(t *testing.T) {
	out, err := runCmd(t, "check", "--init", "../../examples/kernels/twostage_relacq.ptx")
	if err != nil || !strings.Contains(out, `"entry": "twostage_relacq"`) || !strings.Contains(out, `"grid": "TODO: blocks"`) {
		t.Fatalf("skeleton of the only entry: %v\n%s", err, out)
	}
	out, err = runCmd(t, "check", "--init", "../../examples/kernels/cas_barrier.ptx")
	if err == nil || out != "" || !strings.Contains(err.Error(), "has 2 entries") ||
		!strings.Contains(err.Error(), "cas_exchange (8 parameters, 48 bytes)") || !strings.Contains(err.Error(), "cas_exchange_relaxed_wait") {
		t.Fatalf("several entries: %v\n%s", err, out)
	}
	out, err = runCmd(t, "check", "--init", "../../examples/kernels/cas_barrier.ptx", "cas_exchange_relaxed_wait")
	if err != nil || !strings.Contains(out, `"entry": "cas_exchange_relaxed_wait"`) || !strings.Contains(out, `{"f32": "TODO`) {
		t.Fatalf("the entry named: %v\n%s", err, out)
	}
	if _, err := runCmd(t, "check", "--init", "../../examples/kernels/cas_barrier.ptx", "nope"); err == nil || !strings.Contains(err.Error(), `no entry point "nope"`) {
		t.Fatalf("an entry the module lacks: %v", err)
	}
}
