package rank_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/simjob"
)

// Replays of captured collectives with fresh inputs are checked by the
// "graphs" conformance case, on the simulator (tests/) and on GPUs.

// TestCaptureRefusals: what cannot be captured fails with a clear error, a
// failed capture leaves no graph and a working stream, and a closed graph
// refuses replays.
func TestCaptureRefusals(t *testing.T) {
	res, err := simjob.Simulate(simjob.Config{World: 2, Seed: 12}, func(r *rank.Rank) error {
		a, err := r.Empty(16, device.Float32)
		if err != nil {
			return err
		}
		for _, c := range []struct {
			what string
			call func() error
			want string
		}{
			{"synchronize", r.Synchronize, "capturing a graph"},
			{"write", func() error { return r.Write(a, make([]byte, 64)) }, "capturing a graph"},
			{"failing recorder", func() error { return errors.New("recorder gave up") }, "recorder gave up"},
		} {
			g, err := r.Capture(c.call)
			if g != nil || err == nil || !strings.Contains(err.Error(), c.want) {
				return fmt.Errorf("capture of %s = %v, %v; want an error containing %q", c.what, g, err, c.want)
			}
		}
		if _, err := r.Capture(func() error { return nil }); err != nil {
			return fmt.Errorf("empty capture after failed ones: %w", err)
		}
		if err := r.Write(a, make([]byte, 64)); err != nil {
			return fmt.Errorf("write after failed captures: %w", err)
		}
		g, err := r.Capture(func() error { return nil })
		if err != nil {
			return err
		}
		if err := g.Close(); err != nil {
			return err
		}
		if err := g.Close(); err != nil {
			return fmt.Errorf("second close: %w", err)
		}
		if err := g.Replay(); err == nil || !strings.Contains(err.Error(), "closed") {
			return fmt.Errorf("replay of a closed graph: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
}
