package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/rank"
)

// rendezvousWorld allocates size bytes and rendezvouses them on the world.
func rendezvousWorld(r *rank.Rank, size uint64) (device.Ptr, *rank.SymmetricMemory, error) {
	buf, err := r.Alloc(size)
	if err != nil {
		return 0, nil, err
	}
	h, err := r.Rendezvous(buf, rank.WorldGroup)
	if err != nil {
		_ = r.Free(buf)
		return 0, nil, err
	}
	return buf, h, nil
}

func filled(numel int, v float32) []byte {
	vals := make([]float32, numel)
	for i := range vals {
		vals[i] = v
	}
	b, _ := kernels.Encode(device.Float32, vals)
	return b
}

// signalsCarryData: rank 1 fills its buffer with 42 and signals rank 0,
// which waits and reads 42 through get_buffer(1); after an acknowledgement
// the same with a barrier and 43. Other ranks only join the barriers.
func signalsCarryData(r *rank.Rank) error {
	const numel = 256
	buf, h, err := rendezvousWorld(r, numel*4)
	if err != nil {
		return err
	}
	defer r.Free(buf)
	peer1, err := h.GetBuffer(1, numel, device.Float32, 0)
	if err != nil {
		return err
	}
	check := func(want float32) error {
		got, err := r.Read(peer1)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, filled(numel, want)) {
			return fmt.Errorf("rank 0 read %v.. through get_buffer(1), want %v", got[:4], want)
		}
		return nil
	}
	const t = 10 * time.Second
	switch r.ID() {
	case 1:
		if err := r.Write(peer1, filled(numel, 42)); err != nil {
			return err
		}
		if err := h.PutSignal(0, 0, t); err != nil {
			return err
		}
		if err := h.WaitSignal(0, 1, t); err != nil { // rank 0 has read 42
			return err
		}
		if err := r.Write(peer1, filled(numel, 43)); err != nil {
			return err
		}
		return h.Barrier(2, t)
	case 0:
		if err := h.WaitSignal(1, 0, t); err != nil {
			return err
		}
		if err := check(42); err != nil {
			return err
		}
		if err := h.PutSignal(1, 1, t); err != nil {
			return err
		}
		if err := h.Barrier(2, t); err != nil {
			return err
		}
		return check(43)
	}
	return h.Barrier(2, t)
}

// signalTimeout: a wait for a signal that never comes fails after 1000 ms
// with an error naming peer, channel and slot; so does a barrier no peer
// joins; the next barrier on the same stream works.
func signalTimeout(r *rank.Rank) error {
	buf, h, err := rendezvousWorld(r, 1024)
	if err != nil {
		return err
	}
	defer r.Free(buf)
	w := h.WorldSize()
	if r.ID() == 0 {
		err := h.WaitSignal(1, 3, 1000*time.Millisecond)
		var ke *device.KernelError
		if !errors.As(err, &ke) {
			return fmt.Errorf("wait without a put returned %v, want a kernel timeout", err)
		}
		if ke.Peer != 1 || ke.Channel != 3 || ke.Slot != 3*w+1 || ke.Timeout != time.Second {
			return fmt.Errorf("timeout error names %+v, want peer 1, channel 3, slot %d, 1s", ke, 3*w+1)
		}
		if err := h.Barrier(1, 1000*time.Millisecond); !errors.As(err, &ke) {
			return fmt.Errorf("barrier without peers returned %v, want a kernel timeout", err)
		}
	}
	// Rank 0's failed barrier left puts on channel 1; use a fresh channel.
	if err := h.Barrier(2, 30*time.Second); err != nil {
		return fmt.Errorf("barrier after a timeout: %w", err)
	}
	return nil
}

// signalBounds: channel = max is rejected, max-1 accepted; ranks -1 and W
// are rejected everywhere a rank is taken.
func signalBounds(r *rank.Rank) error {
	buf, h, err := rendezvousWorld(r, 64)
	if err != nil {
		return err
	}
	defer r.Free(buf)
	maxCh := int(h.SignalPadSize() / (4 * uint64(h.WorldSize())))
	if err := h.Barrier(maxCh, time.Second); err == nil || !strings.Contains(err.Error(), fmt.Sprint(maxCh)) {
		return fmt.Errorf("barrier on channel %d = %v, want an error naming it", maxCh, err)
	}
	if err := h.Barrier(maxCh-1, 30*time.Second); err != nil {
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
}

// padIsolation: get_signal_pad(r) is signal_pad_ptrs[r], and filling the
// whole buffer never touches the pad.
func padIsolation(r *rank.Rank) error {
	buf, h, err := rendezvousWorld(r, 4096)
	if err != nil {
		return err
	}
	defer r.Free(buf)
	pads := h.SignalPadPtrs()
	for i := range h.WorldSize() {
		pad, err := h.GetSignalPad(i)
		if err != nil {
			return err
		}
		if pad.Ptr != pads[i] || pad.Bytes != h.SignalPadSize() {
			return fmt.Errorf("get_signal_pad(%d) = %+v, signal_pad_ptrs[%d] = %v", i, pad, i, pads[i])
		}
	}
	own, err := h.GetBuffer(h.Rank(), h.BufferSize()/4, device.Float32, 0)
	if err != nil {
		return err
	}
	if err := r.Write(own, bytes.Repeat([]byte{0xff}, int(own.Bytes()))); err != nil {
		return err
	}
	if err := h.Barrier(0, 30*time.Second); err != nil {
		return err
	}
	// Peers may already be in the next barrier (channel 1) and signal this
	// pad: read every other slot (channel 0 and channels 2 and up).
	pad, _ := h.GetSignalPad(h.Rank())
	ch := uint64(4 * h.WorldSize())
	for _, part := range []struct{ from, to uint64 }{{0, ch}, {2 * ch, pad.Bytes}} {
		if part.from >= part.to {
			continue
		}
		b, err := r.Read(rank.Tensor{Ptr: pad.Ptr.Add(part.from), DType: device.Float32, Numel: (part.to - part.from) / 4})
		if err != nil {
			return err
		}
		if nz := nonZero(b); nz >= 0 {
			return fmt.Errorf("own pad byte %d is %#x after buffer writes and a barrier", int(part.from)+nz, b[nz])
		}
	}
	return h.Barrier(1, 30*time.Second)
}

// oneAllocationManyGroups: one allocation rendezvoused on the world and on
// the two halves of it; each handle sees the right peers' values.
func oneAllocationManyGroups(r *rank.Rank) error {
	w := r.World()
	var lo, hi []int
	for i := range w {
		if i < w/2 {
			lo = append(lo, i)
		} else {
			hi = append(hi, i)
		}
	}
	half, mine := "lo", lo
	if r.ID() >= w/2 {
		half, mine = "hi", hi
	}
	if err := r.NewGroup(half, mine); err != nil {
		return err
	}
	buf, err := r.Alloc(64)
	if err != nil {
		return err
	}
	defer r.Free(buf)
	if err := r.Write(rank.Tensor{Ptr: buf, DType: device.Float32, Numel: 1}, filled(1, float32(100+r.ID()))); err != nil {
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
		return errors.New("a second rendezvous on a group did not return the cached handle")
	}
	if err := hw.Barrier(0, 30*time.Second); err != nil {
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
	for i := range w {
		if v, err := read(hw, i); err != nil || v != float32(100+i) {
			return fmt.Errorf("world handle rank %d reads %v (%v), want %d", i, v, err, 100+i)
		}
	}
	if hh.WorldSize() != len(mine) {
		return fmt.Errorf("half-group handle has %d members, want %d", hh.WorldSize(), len(mine))
	}
	for i, g := range mine {
		if v, err := read(hh, i); err != nil || v != float32(100+g) {
			return fmt.Errorf("%s handle rank %d reads %v (%v), want %d", half, i, v, err, 100+g)
		}
	}
	return hw.Barrier(1, 30*time.Second)
}
