package mutants

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/oracle"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/signal"
)

// The programs every rank runs. Each checks its own results, so a mutant
// that corrupts data fails the run even when no race is seen.

const size = 256 // bytes per tensor

// input is rank r's input in iteration it: small integers, so sums are
// exact and every rank can compute the expected result.
func input(r, it int) []byte {
	vals := make([]float32, size/4)
	for i := range vals {
		vals[i] = float32((r*7+it*13+i)%19 - 9)
	}
	b, _ := kernels.Encode(device.Float32, vals)
	return b
}

func expect(ranks []int, it int) []byte {
	ins := make([][]byte, len(ranks))
	for i, r := range ranks {
		ins[i] = input(r, it)
	}
	want, _ := oracle.AllReduce(device.Float32, device.Sum, ins)
	return want
}

func worldRanks(r *rank.Rank) []int {
	out := make([]int, r.World())
	for i := range out {
		out[i] = i
	}
	return out
}

// kind of all-reduce a program runs.
type kind int

const (
	oneShot    kind = iota
	twoShotOut      // the "_out" form: start, middle and end barriers
)

// reduceLoop all-reduces one buffer twice: write the input, reduce, read and
// check. The rendezvous comes first, so only the kernels' barriers order a
// rank's writes against its peers' reads.
func reduceLoop(k kind) rank.Program {
	return func(r *rank.Rank) error {
		buf, err := r.Alloc(size)
		if err != nil {
			return err
		}
		defer r.Free(buf)
		if _, err := r.Rendezvous(buf, rank.WorldGroup); err != nil {
			return err
		}
		in := rank.Tensor{Ptr: buf, DType: device.Float32, Numel: size / 4}
		out, err := r.Empty(in.Numel, in.DType)
		if err != nil {
			return err
		}
		defer r.FreeTensor(out)
		for it := range 2 {
			if err := r.Write(in, input(r.ID(), it)); err != nil {
				return err
			}
			if k == oneShot {
				err = r.OneShotAllReduceOut(in, device.Sum, rank.WorldGroup, out)
			} else {
				err = r.TwoShotAllReduceOut(in, device.Sum, rank.WorldGroup, out)
			}
			if err != nil {
				return err
			}
			if err := check(r, out, expect(worldRanks(r), it), it); err != nil {
				return err
			}
		}
		return nil
	}
}

func check(r *rank.Rank, t rank.Tensor, want []byte, it int) error {
	got, err := r.Read(t)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("rank %d iteration %d: wrong result", r.ID(), it)
	}
	return nil
}

// channelProbe checks, like the reference test, that a barrier on the first
// channel past the pad is refused by the device, and that the buffer after
// the pad is untouched.
func channelProbe(r *rank.Rank) error {
	buf, err := r.Alloc(size)
	if err != nil {
		return err
	}
	defer r.Free(buf)
	h, err := r.Rendezvous(buf, rank.WorldGroup)
	if err != nil {
		return err
	}
	own := rank.Tensor{Ptr: buf, DType: device.Float32, Numel: size / 4}
	guard := bytes.Repeat([]byte{0xa5}, size)
	if err := r.Write(own, guard); err != nil {
		return err
	}
	if err := h.Barrier(0, r.Timeout()); err != nil {
		return err
	}
	w := h.WorldSize()
	past := signal.Channels(h.SignalPadSize(), w)
	args := kernels.SignalArgs{
		Rank: int32(h.Rank()), World: int32(w), Channel: int32(past),
		PadPtrs: h.SignalPadPtrsDev(), PadBytes: h.SignalPadSize(), TimeoutNs: int64(r.Timeout()),
	}
	if err := r.Device().Launch(r.Stream(), device.Launch{Kernel: kernels.Barrier, Blocks: 1, Threads: w, Args: args}); err == nil {
		serr := r.Device().Synchronize(r.Stream())
		return fmt.Errorf("rank %d: a barrier on channel %d of a pad with %d channels was accepted (synchronize: %v)", r.ID(), past, past, serr)
	}
	if err := h.Barrier(1, r.Timeout()); err != nil {
		return err
	}
	got, err := r.Read(own)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, guard) {
		return fmt.Errorf("rank %d: wrong result: the buffer after the pad was overwritten", r.ID())
	}
	return nil
}

// overlappingGroups (world 3) rendezvouses one allocation on the world, on
// {0,1} and on {1,2}, and interleaves one-shot all-reduces of the three
// groups on three views of it. Rank 1 takes part in all three, ranks 0 and
// 2 in two, so the groups' pads are only distinct when every member's
// pads in use count.
func overlappingGroups(r *rank.Rank) error {
	groups := []struct {
		name    string
		members []int
	}{{rank.WorldGroup, []int{0, 1, 2}}, {"left", []int{0, 1}}, {"right", []int{1, 2}}}
	x, err := r.Alloc(3 * size)
	if err != nil {
		return err
	}
	defer r.Free(x)
	out, err := r.Empty(size/4, device.Float32)
	if err != nil {
		return err
	}
	defer r.FreeTensor(out)
	var mine []int
	for i, g := range groups {
		if !slices.Contains(g.members, r.ID()) {
			continue
		}
		if g.name != rank.WorldGroup {
			if err := r.NewGroup(g.name, g.members); err != nil {
				return err
			}
		}
		if _, err := r.Rendezvous(x, g.name); err != nil {
			return err
		}
		mine = append(mine, i)
	}
	for it := range 3 {
		for _, i := range mine {
			g := groups[i]
			t := rank.Tensor{Ptr: x.Add(uint64(i) * size), DType: device.Float32, Numel: size / 4}
			n := 10*i + it
			if err := r.Write(t, input(r.ID(), n)); err != nil {
				return err
			}
			if err := r.OneShotAllReduceOut(t, device.Sum, g.name, out); err != nil {
				return err
			}
			if err := check(r, out, expect(g.members, n), n); err != nil {
				return err
			}
		}
	}
	return nil
}

// subgroupThenWorld rendezvouses an allocation on the pair {0, 1} first,
// then another on the world, and all-reduces the latter.
func subgroupThenWorld(r *rank.Rank) error {
	if r.ID() < 2 {
		if err := r.NewGroup("first-two", []int{0, 1}); err != nil {
			return err
		}
		a, err := r.Alloc(size)
		if err != nil {
			return err
		}
		defer r.Free(a)
		if _, err := r.Rendezvous(a, "first-two"); err != nil {
			return err
		}
	}
	b, err := r.Alloc(size)
	if err != nil {
		return err
	}
	defer r.Free(b)
	in := rank.Tensor{Ptr: b, DType: device.Float32, Numel: size / 4}
	if err := r.Write(in, input(r.ID(), 0)); err != nil {
		return err
	}
	out, err := r.OneShotAllReduce(in, device.Sum, rank.WorldGroup)
	if err != nil {
		return err
	}
	defer r.FreeTensor(out)
	return check(r, out, expect(worldRanks(r), 0), 0)
}

// barrierThenRead: each rank writes its buffer, a barrier publishes it, the
// rank reads its right neighbour's buffer through get_buffer and then
// all-reduces the buffers (whose start barrier uses the same pad channel
// as the barrier). Twice.
func barrierThenRead(r *rank.Rank) error {
	buf, err := r.Alloc(size)
	if err != nil {
		return err
	}
	defer r.Free(buf)
	h, err := r.Rendezvous(buf, rank.WorldGroup)
	if err != nil {
		return err
	}
	in := rank.Tensor{Ptr: buf, DType: device.Float32, Numel: size / 4}
	out, err := r.Empty(in.Numel, in.DType)
	if err != nil {
		return err
	}
	defer r.FreeTensor(out)
	next := (r.ID() + 1) % r.World()
	for it := range 2 {
		if err := r.Write(in, input(r.ID(), it)); err != nil {
			return err
		}
		if err := h.Barrier(0, r.Timeout()); err != nil {
			return err
		}
		peer, err := h.GetBuffer(next, in.Numel, in.DType, 0)
		if err != nil {
			return err
		}
		if err := check(r, peer, input(next, it), it); err != nil {
			return fmt.Errorf("reading rank %d's buffer: %w", next, err)
		}
		if err := r.OneShotAllReduceOut(in, device.Sum, rank.WorldGroup, out); err != nil {
			return err
		}
		if err := check(r, out, expect(worldRanks(r), it), it); err != nil {
			return err
		}
	}
	return nil
}
