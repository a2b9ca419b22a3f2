package sim

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
)

// Test layout of every rank's symmetric block: [pad | data] in one granule.
const (
	testPadBytes = 4096
	testDataOff  = 4096
	testBlock    = device.Granularity
	testDataSize = testBlock - testDataOff
)

// harness is a world of devices with one symmetric block per rank mapped on
// every device by hand (create, export, transfer, import, map), plus a local
// scratch block per device holding the pointer arrays and non-symmetric
// input and output tensors.
type harness struct {
	t     testing.TB
	s     *actor.Scheduler
	w     *World
	n     int
	peer  [][]device.Ptr // peer[r][p]: rank p's block as mapped on device r
	local []device.Ptr   // scratch block of device r
}

// scratch layout
const (
	bufArrOff = 0
	padArrOff = 1024
	inOff     = 4096
	outOff    = 4096 + (testBlock-4096)/2
)

func newHarness(t testing.TB, n int, seed uint64) *harness {
	t.Helper()
	s := actor.NewScheduler(actor.Config{Seed: seed})
	w, err := NewWorld(s, Config{World: n})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, s: s, w: w, n: n}
	h.run(func() error { return h.setup() })
	return h
}

func (h *harness) dev(r int) device.Device { return h.w.Device(r) }

// run runs fn as a task to completion and fails the test on any error.
func (h *harness) run(fn func() error) {
	h.t.Helper()
	var err error
	h.s.Go("test", func() { err = fn() })
	if rerr := h.s.Run(); rerr != nil {
		h.t.Fatal(rerr)
	}
	if err != nil {
		h.t.Fatal(err)
	}
}

// ranks runs fn for every rank as concurrent tasks and returns their errors.
func (h *harness) ranks(fn func(r int) error) []error {
	h.t.Helper()
	errs := make([]error, h.n)
	for r := 0; r < h.n; r++ {
		h.s.Go(fmt.Sprintf("rank %d", r), func() { errs[r] = fn(r) })
	}
	if err := h.s.Run(); err != nil {
		h.t.Fatal(err)
	}
	return errs
}

func (h *harness) setup() error {
	handles := make([]device.Handle, h.n)
	fds := make([]int, h.n)
	for r := 0; r < h.n; r++ {
		hd, err := h.dev(r).CreatePhysical(testBlock)
		if err != nil {
			return err
		}
		handles[r] = hd
		if fds[r], err = h.dev(r).ExportHandle(hd); err != nil {
			return err
		}
	}
	h.peer = make([][]device.Ptr, h.n)
	h.local = make([]device.Ptr, h.n)
	for r := 0; r < h.n; r++ {
		d := h.dev(r)
		h.peer[r] = make([]device.Ptr, h.n)
		for p := 0; p < h.n; p++ {
			hd := handles[p]
			if p != r {
				fd, err := h.w.Transfer(h.w.PID(p), fds[p], h.w.PID(r))
				if err != nil {
					return err
				}
				if hd, err = d.ImportHandle(fd); err != nil {
					return err
				}
				if err := d.CloseFD(fd); err != nil {
					return err
				}
			}
			ptr, err := mapBlock(d, hd, testBlock)
			if err != nil {
				return err
			}
			h.peer[r][p] = ptr
		}
		lh, err := d.CreatePhysical(testBlock)
		if err != nil {
			return err
		}
		if h.local[r], err = mapBlock(d, lh, testBlock); err != nil {
			return err
		}
		if err := d.Memset(0, h.peer[r][r], 0, testPadBytes); err != nil {
			return err
		}
		bufs := make([]byte, 8*h.n)
		pads := make([]byte, 8*h.n)
		for p := 0; p < h.n; p++ {
			binary.LittleEndian.PutUint64(bufs[8*p:], uint64(h.peer[r][p]+testDataOff))
			binary.LittleEndian.PutUint64(pads[8*p:], uint64(h.peer[r][p]))
		}
		if err := d.Write(0, h.local[r]+bufArrOff, bufs); err != nil {
			return err
		}
		if err := d.Write(0, h.local[r]+padArrOff, pads); err != nil {
			return err
		}
		if err := d.Synchronize(0); err != nil {
			return err
		}
	}
	for r := 0; r < h.n; r++ {
		if err := h.dev(r).CloseFD(fds[r]); err != nil {
			return err
		}
	}
	return nil
}

func mapBlock(d device.Device, hd device.Handle, size uint64) (device.Ptr, error) {
	p, err := d.Reserve(size)
	if err != nil {
		return 0, err
	}
	if err := d.Map(p, size, hd); err != nil {
		return 0, err
	}
	return p, d.SetAccess(p, size)
}

func (h *harness) buf(r int) device.Ptr { return h.peer[r][r] + testDataOff }

func (h *harness) signalArgs(r, peer, channel int, timeoutNs int64) kernels.SignalArgs {
	return kernels.SignalArgs{
		Rank: int32(r), World: int32(h.n), Peer: int32(peer), Channel: int32(channel),
		PadPtrs: h.local[r] + padArrOff, PadBytes: testPadBytes, TimeoutNs: timeoutNs,
	}
}

func (h *harness) allReduceArgs(r int, dt device.DType, op device.ReduceOp, offset, numel uint64) kernels.AllReduceArgs {
	return kernels.AllReduceArgs{
		Rank: int32(r), World: int32(h.n), DType: dt, Op: op,
		BufferPtrs: h.local[r] + bufArrOff, PadPtrs: h.local[r] + padArrOff, PadBytes: testPadBytes,
		Offset: offset, Numel: numel,
	}
}

// launch enqueues kernel on device r's stream 0 and synchronizes.
func (h *harness) launch(r int, kernel string, blocks, threads int, args any) error {
	d := h.dev(r)
	if err := d.Launch(0, device.Launch{Kernel: kernel, Blocks: blocks, Threads: threads, Args: args}); err != nil {
		return err
	}
	return d.Synchronize(0)
}

// padsZero checks that every rank's pad is back to zero.
func (h *harness) padsZero() error {
	for r := 0; r < h.n; r++ {
		pad := make([]byte, testPadBytes)
		if err := h.dev(r).Read(0, pad, h.peer[r][r]); err != nil {
			return err
		}
		for i := 0; i < len(pad); i += 4 {
			if v := binary.LittleEndian.Uint32(pad[i:]); v != 0 {
				return fmt.Errorf("rank %d pad slot %d holds %d after the kernel", r, i/4, v)
			}
		}
	}
	return nil
}
