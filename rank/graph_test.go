package rank

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/symmem/symmem/actor/store"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
)

// TestGraphReplaysCollectives: a captured graph of low-latency (two sizes,
// so two grid shapes), one-shot and two-shot calls gives the reference on
// every replay with fresh inputs written between replays. A replayed
// low-latency call reuses its captured arguments, so this also shows that
// the call numbers kept on the device advance with every replay: a stale
// packet from an earlier replay would carry an earlier round's data.
func TestGraphReplaysCollectives(t *testing.T) {
	const world, small, large, rounds = 3, 37, 1500, 3
	sizes := []int{small, large, small, large}
	got := make([][][]byte, world) // [rank][round*4+call]
	res, err := Simulate(SimConfig{World: world, Seed: 11}, func(r *Rank) error {
		l, err := r.NewLowLatency(WorldGroup, large*4)
		if err != nil {
			return err
		}
		defer l.Close()
		buf, err := r.Alloc(2 * large * 4)
		if err != nil {
			return err
		}
		llSmall, err := r.Empty(small, device.Float32)
		if err != nil {
			return err
		}
		llLarge, err := r.Empty(large, device.Float32)
		if err != nil {
			return err
		}
		ins := []Tensor{
			llSmall,
			llLarge,
			{Ptr: buf, DType: device.Float32, Numel: small},
			{Ptr: buf.Add(large * 4), DType: device.Float32, Numel: large},
		}
		outs := make([]Tensor, len(ins))
		for i, in := range ins {
			if outs[i], err = r.Empty(in.Numel, device.Float32); err != nil {
				return err
			}
		}
		calls := func() error {
			for i, in := range ins {
				var err error
				switch i {
				case 0, 1:
					err = l.AllReduce(in, device.Sum, outs[i])
				case 2:
					err = r.OneShotAllReduceOut(in, device.Sum, WorldGroup, outs[i])
				default:
					err = r.TwoShotAllReduceOut(in, device.Sum, WorldGroup, outs[i])
				}
				if err != nil {
					return err
				}
			}
			return nil
		}
		// The first calls rendezvous the symmetric buffer, which a capture
		// cannot do, and advance the call number before the capture.
		if err := calls(); err != nil {
			return err
		}
		g, err := r.Capture(calls)
		if err != nil {
			return err
		}
		defer g.Close()
		ex, err := store.NewExchange(r.Store(), "graph-test", store.Group{Name: WorldGroup, Ranks: []int{0, 1, 2}}, r.ID())
		if err != nil {
			return err
		}
		for round := range rounds {
			for i, in := range ins {
				if err := r.Write(in, encodeInputs(world, int(in.Numel), 10*round+i)[r.ID()]); err != nil {
					return err
				}
			}
			if err := g.Replay(); err != nil {
				return err
			}
			for _, out := range outs {
				b, err := r.Read(out)
				if err != nil {
					return err
				}
				got[r.ID()] = append(got[r.ID()], b)
			}
			// Meet before the next round's inputs overwrite this one's.
			if err := ex.Barrier(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	for round := range rounds {
		for i, n := range sizes {
			want, _ := kernels.Reference(device.Float32, device.Sum, encodeInputs(world, n, 10*round+i))
			for r := range world {
				if !bytes.Equal(got[r][round*len(sizes)+i], want) {
					t.Errorf("round %d call %d (%d elements), rank %d: result differs from the reference", round, i, n, r)
				}
			}
		}
	}
}

// TestCaptureRefusals: what cannot be captured fails with a clear error, a
// failed capture leaves no graph and a working stream, and a closed graph
// refuses replays.
func TestCaptureRefusals(t *testing.T) {
	res, err := Simulate(SimConfig{World: 2, Seed: 12}, func(r *Rank) error {
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
