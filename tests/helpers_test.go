package tests

import (
	"testing"

	"github.com/symmem/symmem/rank"
)

// simulate runs program on world simulated ranks and fails the test on a
// simulation failure or any rank's error.
func simulate(t *testing.T, cfg rank.SimConfig, program rank.Program) rank.Result {
	t.Helper()
	res, err := rank.Simulate(cfg, program)
	if err != nil {
		t.Fatalf("simulation (seed %d): %v", cfg.Seed, err)
	}
	if err := res.Err(); err != nil {
		t.Fatalf("ranks (seed %d): %v", cfg.Seed, err)
	}
	return res
}
