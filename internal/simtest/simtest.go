// Package simtest holds what tests of several packages need to run
// simulated jobs. Only tests import it.
package simtest

import (
	"testing"

	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/simjob"
)

// Simulate runs program on cfg's simulated ranks and fails the test on a
// simulation failure or any rank's error.
func Simulate(t testing.TB, cfg simjob.Config, program rank.Program) simjob.Result {
	t.Helper()
	res, err := simjob.Simulate(cfg, program)
	if err != nil {
		t.Fatalf("simulation (seed %d): %v", cfg.Seed, err)
	}
	if err := res.Err(); err != nil {
		t.Fatalf("ranks (seed %d): %v", cfg.Seed, err)
	}
	return res
}
