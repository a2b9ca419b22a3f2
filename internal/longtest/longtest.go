// Package longtest is the switch for the suite's long sweeps: PTX
// conformance at every world, soaks and the mutant tables. The README's
// test command leaves them out; SYMMEM_LONG=1 runs them (.ci/run does, with
// explicit -timeout values). Only tests import it.
package longtest

import (
	"os"
	"testing"
)

// Env is the environment variable that turns the long sweeps on.
const Env = "SYMMEM_LONG"

// Enabled reports whether the long sweeps run: Env is set to 1.
func Enabled() bool { return os.Getenv(Env) == "1" }

// Require skips t, naming what was left out and how to run it, unless the
// long sweeps are enabled.
func Require(t testing.TB, what string) {
	t.Helper()
	if !Enabled() {
		t.Skipf("%s is a long sweep: run it with %s=1", what, Env)
	}
}
