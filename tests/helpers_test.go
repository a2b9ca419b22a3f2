package tests

import (
	"testing"

	"github.com/symmem/symmem/internal/simtest"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/simjob"
)

// simulate runs program on simulated ranks and fails the test on a
// simulation failure or any rank's error.
func simulate(t *testing.T, cfg simjob.Config, program rank.Program) simjob.Result {
	t.Helper()
	return simtest.Simulate(t, cfg, program)
}
