package tests

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/rank"
	"github.com/symmem/symmem/workload"
)

// TestAllReduceReferenceTable ports the reference's table: every dtype x
// view offset {4, 8, 16 bytes} x size {4, 8192, 8196 bytes}, in a zeroed
// symmetric buffer, for every algorithm form. The result matches the
// kernels' reference bitwise on every rank and the bytes before and after
// the view stay zero.
func TestAllReduceReferenceTable(t *testing.T) {
	const world = 4
	forms := []string{"one-shot", "one-shot-copy", "two-shot", "two-shot-out"}
	for _, dt := range []device.DType{device.Float32, device.BFloat16, device.Float16} {
		for _, form := range forms {
			t.Run(fmt.Sprintf("%v/%s", dt, form), func(t *testing.T) {
				type tc struct{ offset, size uint64 }
				var cases []tc
				for _, off := range []uint64{4, 8, 16} {
					for _, size := range []uint64{4, 8192, 8196} {
						cases = append(cases, tc{off, size})
					}
				}
				inputs := make([][][]byte, len(cases))
				for i, c := range cases {
					inputs[i] = workload.Spec{World: world, Bytes: c.size, DType: dt, Seed: uint64(i)}.Inputs()
				}
				got := make([][][]byte, len(cases)) // [case][rank]
				for i := range got {
					got[i] = make([][]byte, world)
				}
				simulate(t, rank.SimConfig{World: world, Seed: 42}, func(r *rank.Rank) error {
					const bufSize = 16 << 10
					buf, err := r.Alloc(bufSize)
					if err != nil {
						return err
					}
					whole := rank.Tensor{Ptr: buf, DType: device.Float32, Numel: bufSize / 4}
					for i, c := range cases {
						if err := r.Write(whole, make([]byte, bufSize)); err != nil {
							return err
						}
						in := rank.Tensor{Ptr: buf.Add(c.offset), DType: dt, Numel: c.size / uint64(dt.Size())}
						if err := r.Write(in, inputs[i][r.ID()]); err != nil {
							return err
						}
						out, err := runForm(r, form, in)
						if err != nil {
							return fmt.Errorf("case %+v: %w", c, err)
						}
						got[i][r.ID()] = out
						after, err := r.Read(whole)
						if err != nil {
							return err
						}
						if nz := nonZero(after[:c.offset]); nz >= 0 {
							return fmt.Errorf("case %+v: byte %d before the view changed", c, nz)
						}
						if nz := nonZero(after[c.offset+c.size:]); nz >= 0 {
							return fmt.Errorf("case %+v: byte %d after the view changed", c, int(c.offset+c.size)+nz)
						}
					}
					return nil
				})
				for i, c := range cases {
					want, err := kernels.Reference(dt, device.Sum, inputs[i])
					if err != nil {
						t.Fatal(err)
					}
					for r := range world {
						if !bytes.Equal(got[i][r], want) {
							t.Errorf("case %+v rank %d: result differs from the reference", c, r)
						}
					}
					if err := kernels.CheckClose(dt, device.Sum, inputs[i], got[i][0]); err != nil {
						t.Errorf("case %+v: %v", c, err)
					}
				}
			})
		}
	}
}

// runForm runs one all-reduce form on in and returns the result's bytes.
func runForm(r *rank.Rank, form string, in rank.Tensor) ([]byte, error) {
	switch form {
	case "one-shot":
		out, err := r.OneShotAllReduce(in, device.Sum, rank.WorldGroup)
		if err != nil {
			return nil, err
		}
		defer r.FreeTensor(out)
		return r.Read(out)
	case "one-shot-copy":
		local, err := r.Empty(in.Numel, in.DType)
		if err != nil {
			return nil, err
		}
		defer r.FreeTensor(local)
		data, err := r.Read(in)
		if err != nil {
			return nil, err
		}
		if err := r.Write(local, data); err != nil {
			return nil, err
		}
		// Scribble over the symmetric view: the copy form must refill it.
		if err := r.Write(in, bytes.Repeat([]byte{0x7f}, len(data))); err != nil {
			return nil, err
		}
		out, err := r.Empty(in.Numel, in.DType)
		if err != nil {
			return nil, err
		}
		defer r.FreeTensor(out)
		if err := r.OneShotAllReduceCopy(in, local, device.Sum, rank.WorldGroup, out); err != nil {
			return nil, err
		}
		return r.Read(out)
	case "two-shot":
		if err := r.TwoShotAllReduce(in, device.Sum, rank.WorldGroup); err != nil {
			return nil, err
		}
		return r.Read(in)
	case "two-shot-out":
		out, err := r.Empty(in.Numel, in.DType)
		if err != nil {
			return nil, err
		}
		defer r.FreeTensor(out)
		if err := r.TwoShotAllReduceOut(in, device.Sum, rank.WorldGroup, out); err != nil {
			return nil, err
		}
		return r.Read(out)
	}
	return nil, fmt.Errorf("unknown form %q", form)
}

func nonZero(b []byte) int {
	for i, c := range b {
		if c != 0 {
			return i
		}
	}
	return -1
}

// TestSignalsCarryData: rank 1 fills its buffer with 42 and signals; rank 0
// waits and reads 42 through get_buffer. Then the same with a barrier and 43.
func TestSignalsCarryData(t *testing.T) {
	const numel = 256
	fill := func(v float32) []byte {
		vals := make([]float32, numel)
		for i := range vals {
			vals[i] = v
		}
		b, _ := kernels.Encode(device.Float32, vals)
		return b
	}
	for seed := uint64(0); seed < 8; seed++ {
		simulate(t, rank.SimConfig{World: 2, Seed: seed}, func(r *rank.Rank) error {
			buf, err := r.Alloc(numel * 4)
			if err != nil {
				return err
			}
			h, err := r.Rendezvous(buf, rank.WorldGroup)
			if err != nil {
				return err
			}
			peer1, err := h.GetBuffer(1, numel, device.Float32, 0)
			if err != nil {
				return err
			}
			check := func(want float32) error {
				got, err := r.Read(peer1)
				if err != nil {
					return err
				}
				if !bytes.Equal(got, fill(want)) {
					return fmt.Errorf("rank 0 read %v.. through get_buffer(1), want %v", got[:4], want)
				}
				return nil
			}
			if r.ID() == 1 {
				own, _ := h.GetBuffer(1, numel, device.Float32, 0)
				if err := r.Write(own, fill(42)); err != nil {
					return err
				}
				if err := h.PutSignal(0, 0, time.Second); err != nil {
					return err
				}
				// Rank 0 acknowledges once it has read 42.
				if err := h.WaitSignal(0, 1, time.Second); err != nil {
					return err
				}
				if err := r.Write(own, fill(43)); err != nil {
					return err
				}
				return h.Barrier(0, time.Second)
			}
			if err := h.WaitSignal(1, 0, time.Second); err != nil {
				return err
			}
			if err := check(42); err != nil {
				return err
			}
			if err := h.PutSignal(1, 1, time.Second); err != nil {
				return err
			}
			if err := h.Barrier(0, time.Second); err != nil {
				return err
			}
			return check(43)
		})
	}
}

// TestSignalTimeoutIsRecoverable: a wait for a signal that never comes fails
// after 1000 ms (virtual) with an error naming the slot, and the next
// operation on the same stream and pad works.
func TestSignalTimeoutIsRecoverable(t *testing.T) {
	simulate(t, rank.SimConfig{World: 2, Seed: 3}, func(r *rank.Rank) error {
		buf, err := r.Alloc(1024)
		if err != nil {
			return err
		}
		h, err := r.Rendezvous(buf, rank.WorldGroup)
		if err != nil {
			return err
		}
		if r.ID() == 0 {
			err := h.WaitSignal(1, 3, 1000*time.Millisecond)
			ke, ok := errorsAs[*device.KernelError](err)
			if !ok {
				return fmt.Errorf("wait without a put returned %v, want a kernel timeout", err)
			}
			if ke.Peer != 1 || ke.Channel != 3 || ke.Slot != 3*2+1 || ke.Timeout != time.Second {
				return fmt.Errorf("timeout error names %+v, want peer 1, channel 3, slot 7, 1s", ke)
			}
			err = h.Barrier(1, 1000*time.Millisecond)
			if _, ok := errorsAs[*device.KernelError](err); !ok {
				return fmt.Errorf("barrier without a peer returned %v, want a kernel timeout", err)
			}
		}
		// Rank 0's failed barrier on channel 1 left its put in rank 1's pad;
		// the next barrier uses a fresh channel.
		if err := h.Barrier(2, 10*time.Second); err != nil {
			return fmt.Errorf("barrier after a timeout: %w", err)
		}
		return nil
	})
}

// TestSignalBounds: channel = max is rejected and max-1 accepted; ranks -1
// and W are rejected; errors name the value and the bound.
func TestSignalBounds(t *testing.T) {
	simulate(t, rank.SimConfig{World: 2, Seed: 1}, func(r *rank.Rank) error {
		buf, err := r.Alloc(64)
		if err != nil {
			return err
		}
		h, err := r.Rendezvous(buf, rank.WorldGroup)
		if err != nil {
			return err
		}
		maxCh := int(h.SignalPadSize() / (4 * uint64(h.WorldSize())))
		if err := h.Barrier(maxCh, time.Second); err == nil || !strings.Contains(err.Error(), fmt.Sprint(maxCh)) {
			return fmt.Errorf("barrier on channel %d = %v, want an error naming it", maxCh, err)
		}
		if err := h.Barrier(maxCh-1, time.Second); err != nil {
			return fmt.Errorf("barrier on channel %d: %w", maxCh-1, err)
		}
		for _, bad := range []int{-1, h.WorldSize()} {
			if err := h.PutSignal(bad, 0, time.Second); err == nil {
				return fmt.Errorf("put to rank %d accepted", bad)
			}
			if err := h.WaitSignal(bad, 0, time.Second); err == nil {
				return fmt.Errorf("wait for rank %d accepted", bad)
			}
			if _, err := h.GetBuffer(bad, 1, device.Float32, 0); err == nil {
				return fmt.Errorf("get_buffer(%d) accepted", bad)
			}
			if _, err := h.GetSignalPad(bad); err == nil {
				return fmt.Errorf("get_signal_pad(%d) accepted", bad)
			}
		}
		if err := h.PutSignal(0, -1, time.Second); err == nil {
			return errors.New("channel -1 accepted")
		}
		return nil
	})
}

// TestPadAddressesAndIsolation: get_signal_pad(r) is signal_pad_ptrs[r],
// and writes that fill the whole buffer never touch the pad.
func TestPadAddressesAndIsolation(t *testing.T) {
	simulate(t, rank.SimConfig{World: 4, Seed: 5}, func(r *rank.Rank) error {
		const size = 4096
		buf, err := r.Alloc(size)
		if err != nil {
			return err
		}
		h, err := r.Rendezvous(buf, rank.WorldGroup)
		if err != nil {
			return err
		}
		pads := h.SignalPadPtrs()
		for i := range h.WorldSize() {
			pad, err := h.GetSignalPad(i)
			if err != nil {
				return err
			}
			if pad.Ptr != pads[i] || pad.Bytes != h.SignalPadSize() {
				return fmt.Errorf("get_signal_pad(%d) = %+v, signal_pad_ptrs[%d] = %v", i, pad, i, pads[i])
			}
			if pads[i] == h.BufferPtrs()[i] {
				return fmt.Errorf("rank %d's pad and buffer share an address", i)
			}
		}
		own, err := h.GetBuffer(r.ID(), h.BufferSize()/4, device.Float32, 0)
		if err != nil {
			return err
		}
		if err := r.Write(own, bytes.Repeat([]byte{0xff}, int(own.Bytes()))); err != nil {
			return err
		}
		if err := h.Barrier(0, 10*time.Second); err != nil {
			return err
		}
		// Peers may already be in the next barrier (channel 1) and have
		// signalled this pad; every other slot must be back to zero.
		pad, _ := h.GetSignalPad(r.ID())
		b, err := r.Read(rank.Tensor{Ptr: pad.Ptr, DType: device.Float32, Numel: pad.Bytes / 4})
		if err != nil {
			return err
		}
		ch1 := 4 * h.WorldSize()
		if nz := nonZero(b[:ch1]); nz >= 0 {
			return fmt.Errorf("own pad byte %d is %#x after buffer writes and a barrier", nz, b[nz])
		}
		if nz := nonZero(b[2*ch1:]); nz >= 0 {
			return fmt.Errorf("own pad byte %d is %#x after buffer writes and a barrier", 2*ch1+nz, b[2*ch1+nz])
		}
		return h.Barrier(1, 10*time.Second)
	})
}

// TestOneAllocationManyGroups: one allocation rendezvoused on the world and
// on two half-groups; each handle sees the right peers' values.
func TestOneAllocationManyGroups(t *testing.T) {
	const world = 4
	simulate(t, rank.SimConfig{World: world, Seed: 9}, func(r *rank.Rank) error {
		lo, hi := []int{0, 1}, []int{2, 3}
		half, mine := "lo", lo
		if r.ID() >= 2 {
			half, mine = "hi", hi
		}
		if err := r.NewGroup(half, mine); err != nil {
			return err
		}
		buf, err := r.Alloc(64)
		if err != nil {
			return err
		}
		vals, _ := kernels.Encode(device.Float32, []float32{float32(100 + r.ID())})
		if err := r.Write(rank.Tensor{Ptr: buf, DType: device.Float32, Numel: 1}, vals); err != nil {
			return err
		}
		hw, err := r.Rendezvous(buf, rank.WorldGroup)
		if err != nil {
			return err
		}
		hh, err := r.Rendezvous(buf, half)
		if err != nil {
			return err
		}
		if !r.IsRendezvousCompleted(buf, half) || !r.IsRendezvousCompleted(buf, rank.WorldGroup) {
			return errors.New("rendezvous not reported completed")
		}
		if again, _ := r.Rendezvous(buf, half); again != hh {
			return errors.New("second rendezvous on a group did not return the cached handle")
		}
		if err := hw.Barrier(0, 10*time.Second); err != nil {
			return err
		}
		read := func(h *rank.SymmetricMemory, i int) (float32, error) {
			v, err := h.GetBuffer(i, 1, device.Float32, 0)
			if err != nil {
				return 0, err
			}
			b, err := r.Read(v)
			if err != nil {
				return 0, err
			}
			f, _ := kernels.Decode(device.Float32, b)
			return f[0], nil
		}
		for i := range world {
			if v, err := read(hw, i); err != nil || v != float32(100+i) {
				return fmt.Errorf("world handle rank %d reads %v (%v), want %d", i, v, err, 100+i)
			}
		}
		if hh.WorldSize() != 2 || hh.Rank() != r.ID()%2 {
			return fmt.Errorf("half-group handle: rank %d of %d", hh.Rank(), hh.WorldSize())
		}
		for i, g := range mine {
			if v, err := read(hh, i); err != nil || v != float32(100+g) {
				return fmt.Errorf("%s handle rank %d reads %v (%v), want %d", half, i, v, err, 100+g)
			}
		}
		return hw.Barrier(1, 10*time.Second)
	})
}
