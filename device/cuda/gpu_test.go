package cuda

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/kernels/cabi"
	"github.com/symmem/symmem/oracle"
)

// The tests below run on real GPUs: only with SYMMEM_GPU_TESTS=1 and a
// driver that sees devices.

// gpus opens n devices (or skips).
func gpus(t *testing.T, n int) []device.Device {
	t.Helper()
	if os.Getenv("SYMMEM_GPU_TESTS") != "1" {
		t.Skip("set SYMMEM_GPU_TESTS=1 to run on GPUs")
	}
	count, err := DeviceCount()
	if err != nil {
		t.Skipf("no GPU: %v", err)
	}
	if count < n {
		t.Skipf("%d GPUs, the test needs %d", count, n)
	}
	// SYMMEM_TEST_FATBIN names a kernel image to use instead of the
	// embedded one (a fatbin built on the GPU machine itself).
	var opts Options
	if path := os.Getenv("SYMMEM_TEST_FATBIN"); path != "" {
		img, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		opts.Module = img
	}
	devs := make([]device.Device, n)
	for i := range devs {
		d, err := Open(i, opts)
		if err != nil {
			t.Fatal(err)
		}
		devs[i] = d
		t.Cleanup(func() {
			if err := d.Close(); err != nil {
				t.Errorf("close device %d: %v", i, err)
			}
		})
	}
	return devs
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestGPUOpen(t *testing.T) {
	devs := gpus(t, 1)
	a := devs[0].Attributes()
	t.Logf("device 0: %+v", a)
	if a.Name == "" || a.SMCount < 1 || a.Granularity == 0 || a.Granularity%4096 != 0 || a.Index != 0 {
		t.Fatalf("attributes look wrong: %+v", a)
	}
	if os.Getenv("TORCH_SYMM_MEM_DISABLE_MULTICAST") != "" && a.MulticastSupported {
		t.Fatal("multicast reported although TORCH_SYMM_MEM_DISABLE_MULTICAST is set")
	}
	if _, err := Open(1<<20, Options{}); err == nil {
		t.Fatal("Open of a device index out of range: no error")
	}
}

func TestGPUMemory(t *testing.T) {
	devs := gpus(t, 2)
	d0, d1 := devs[0], devs[1]
	g := d0.Attributes().Granularity
	size := 2 * g
	h0, err := d0.CreatePhysical(size)
	must(t, err)
	fd, err := d0.ExportHandle(h0)
	must(t, err)
	h1, err := d1.ImportHandle(fd)
	must(t, err)
	must(t, d1.CloseFD(fd))
	// Map on the owner and on the peer.
	p0, err := d0.Reserve(size)
	must(t, err)
	must(t, d0.Map(p0, size, h0))
	must(t, d0.SetAccess(p0, size))
	p1, err := d1.Reserve(size)
	must(t, err)
	must(t, d1.Map(p1, size, h1))
	must(t, d1.SetAccess(p1, size))
	s0, err := d0.NewStream()
	must(t, err)
	s1, err := d1.NewStream()
	must(t, err)

	pattern := make([]byte, g/2+12345)
	for i := range pattern {
		pattern[i] = byte(i*7 + i>>8)
	}
	must(t, d0.Memset(s0, p0, 0xee, size))
	must(t, d0.Write(s0, p0.Add(64), pattern))
	got := make([]byte, len(pattern))
	must(t, d1.Read(s1, got, p1.Add(64)))
	if !bytes.Equal(got, pattern) {
		t.Fatal("peer read through the imported mapping differs from what the owner wrote")
	}
	// Copy on the peer device into its view of the allocation, then read
	// on the owner.
	must(t, d1.Copy(s1, p1.Add(g), p1.Add(64), uint64(len(pattern))))
	must(t, d1.Synchronize(s1))
	must(t, d0.Read(s0, got, p0.Add(g)))
	if !bytes.Equal(got, pattern) {
		t.Fatal("copy made on the peer is not seen by the owner")
	}
	tail := make([]byte, 64)
	must(t, d0.Read(s0, tail, p0))
	if !bytes.Equal(tail, bytes.Repeat([]byte{0xee}, 64)) {
		t.Fatalf("memset: % x", tail)
	}
	// Events time device work.
	e0, err := d0.NewEvent()
	must(t, err)
	e1, err := d0.NewEvent()
	must(t, err)
	must(t, d0.RecordEvent(e0, s0))
	for i := 0; i < 10; i++ {
		must(t, d0.Memset(s0, p0, byte(i), size))
	}
	must(t, d0.RecordEvent(e1, s0))
	el, err := d0.Elapsed(e0, e1)
	must(t, err)
	t.Logf("10 memsets of %d bytes: %v", size, el)
	if el <= 0 {
		t.Fatalf("elapsed %v", el)
	}
	must(t, d0.DestroyEvent(e0))
	must(t, d0.DestroyEvent(e1))
	// Bad input is rejected, not passed on.
	if err := d0.Map(p0, size, 9999); err == nil {
		t.Fatal("map of an unknown handle: no error")
	}
	if _, err := d0.CreatePhysical(g + 1); err == nil {
		t.Fatal("allocation of a size that is not a multiple of the granularity: no error")
	}
	if err := d0.Synchronize(12345); err == nil {
		t.Fatal("synchronize of an unknown stream: no error")
	}
	// Stream 0 exists from the start and cannot be destroyed.
	must(t, d0.Memset(0, p0, 1, 4096))
	must(t, d0.Synchronize(0))
	if err := d0.DestroyStream(0); err == nil {
		t.Fatal("destroying the default stream: no error")
	}
	// Tear down in order.
	must(t, d1.Unmap(p1, size))
	must(t, d1.FreeRange(p1, size))
	must(t, d1.ReleasePhysical(h1))
	must(t, d0.Unmap(p0, size))
	must(t, d0.FreeRange(p0, size))
	must(t, d0.ReleasePhysical(h0))
	must(t, d0.DestroyStream(s0))
	must(t, d1.DestroyStream(s1))
}

func TestGPUNVLinkMatrix(t *testing.T) {
	devs := gpus(t, 1)
	m, err := devs[0].NVLinkMatrix()
	must(t, err)
	n, _ := DeviceCount()
	t.Logf("NVLink matrix: %v", m)
	if len(m) != n {
		t.Fatalf("%d rows for %d devices", len(m), n)
	}
	for i := range m {
		if len(m[i]) != n || m[i][i] != 0 {
			t.Fatalf("row %d: %v", i, m[i])
		}
		for j := range m[i] {
			if m[i][j] != m[j][i] {
				t.Fatalf("matrix not symmetric at %d,%d: %v", i, j, m)
			}
		}
	}
}

// world is a symmetric-memory group of ranks placed on devices (several
// ranks may share a device): each rank owns a pad and a data buffer, every
// device maps every rank's pad and buffer, and keeps device arrays of the
// addresses as it maps them.
type world struct {
	t        *testing.T
	devs     []device.Device
	rankDev  []int
	streams  []device.Stream
	bufs     [][]device.Ptr // [device][rank]
	pads     [][]device.Ptr
	bufArr   []device.Ptr // per device
	padArr   []device.Ptr
	scratch  []device.Ptr // per rank: a local, non-symmetric buffer of 2*bufBytes
	bufBytes uint64
	padBytes uint64
}

func newWorld(t *testing.T, devs []device.Device, rankDev []int, bufBytes uint64) *world {
	t.Helper()
	g := devs[0].Attributes().Granularity
	w := &world{t: t, devs: devs, rankDev: rankDev, bufBytes: bufBytes, padBytes: g}
	n := len(rankDev)
	// Physical allocations: per rank a pad and a buffer, plus per rank a
	// scratch buffer; per device one for the pointer arrays.
	type alloc struct {
		dev int
		h   device.Handle
		fd  int
	}
	mk := func(dev int, size uint64) alloc {
		h, err := devs[dev].CreatePhysical(size)
		must(t, err)
		fd, err := devs[dev].ExportHandle(h)
		must(t, err)
		return alloc{dev, h, fd}
	}
	pads := make([]alloc, n)
	bufs := make([]alloc, n)
	for r, d := range rankDev {
		pads[r] = mk(d, w.padBytes)
		bufs[r] = mk(d, bufBytes)
	}
	// mapAll maps every rank's allocation on device d in one range.
	mapAll := func(d int, as []alloc, size uint64) []device.Ptr {
		base, err := devs[d].Reserve(size * uint64(n))
		must(t, err)
		ptrs := make([]device.Ptr, n)
		for r, a := range as {
			h := a.h
			if a.dev != d {
				h, err = devs[d].ImportHandle(a.fd)
				must(t, err)
			}
			ptrs[r] = base.Add(uint64(r) * size)
			must(t, devs[d].Map(ptrs[r], size, h))
		}
		must(t, devs[d].SetAccess(base, size*uint64(n)))
		return ptrs
	}
	w.bufs = make([][]device.Ptr, len(devs))
	w.pads = make([][]device.Ptr, len(devs))
	w.bufArr = make([]device.Ptr, len(devs))
	w.padArr = make([]device.Ptr, len(devs))
	setup := make([]device.Stream, len(devs))
	for d := range devs {
		w.pads[d] = mapAll(d, pads, w.padBytes)
		w.bufs[d] = mapAll(d, bufs, bufBytes)
		s, err := devs[d].NewStream()
		must(t, err)
		setup[d] = s
		arr := w.local(d, g)
		w.padArr[d], w.bufArr[d] = arr, arr.Add(1024)
		must(t, devs[d].Write(s, w.padArr[d], addrs(w.pads[d])))
		must(t, devs[d].Write(s, w.bufArr[d], addrs(w.bufs[d])))
	}
	for r, d := range rankDev {
		must(t, devs[d].Memset(setup[d], w.pads[d][r], 0, w.padBytes))
		must(t, devs[d].Synchronize(setup[d]))
		s, err := devs[d].NewStream()
		must(t, err)
		w.streams = append(w.streams, s)
		w.scratch = append(w.scratch, w.local(d, 2*bufBytes))
	}
	for _, as := range [][]alloc{pads, bufs} {
		for _, a := range as {
			must(t, devs[a.dev].CloseFD(a.fd))
		}
	}
	return w
}

// local maps a new allocation of size bytes on device d for d alone.
func (w *world) local(d int, size uint64) device.Ptr {
	h, err := w.devs[d].CreatePhysical(size)
	must(w.t, err)
	p, err := w.devs[d].Reserve(size)
	must(w.t, err)
	must(w.t, w.devs[d].Map(p, size, h))
	must(w.t, w.devs[d].SetAccess(p, size))
	return p
}

func addrs(ps []device.Ptr) []byte {
	b := make([]byte, 8*len(ps))
	for i, p := range ps {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(p))
	}
	return b
}

// dev and stream of rank r; buf is rank q's buffer as rank r sees it.
func (w *world) dev(r int) device.Device    { return w.devs[w.rankDev[r]] }
func (w *world) buf(r, q int) device.Ptr    { return w.bufs[w.rankDev[r]][q] }
func (w *world) stream(r int) device.Stream { return w.streams[r] }

func (w *world) signal(r, peer, channel int, timeout time.Duration) kernels.SignalArgs {
	return kernels.SignalArgs{Rank: int32(r), World: int32(len(w.rankDev)), Peer: int32(peer), Channel: int32(channel),
		PadPtrs: w.padArr[w.rankDev[r]], PadBytes: w.padBytes, TimeoutNs: int64(timeout)}
}

func (w *world) launch(r int, kernel string, blocks, threads int, args any) {
	w.t.Helper()
	must(w.t, w.dev(r).Launch(w.stream(r), device.Launch{Kernel: kernel, Blocks: blocks, Threads: threads, Args: args}))
}

func (w *world) syncAll() {
	w.t.Helper()
	for r := range w.rankDev {
		must(w.t, w.dev(r).Synchronize(w.stream(r)))
	}
}

// padsZero checks that every pad is back at rest.
func (w *world) padsZero() {
	w.t.Helper()
	for r := range w.rankDev {
		b := make([]byte, 4096)
		must(w.t, w.dev(r).Read(w.stream(r), b, w.pads[w.rankDev[r]][r]))
		if !bytes.Equal(b, make([]byte, len(b))) {
			w.t.Fatalf("pad of rank %d is not zero after the test", r)
		}
	}
}

func TestGPUSignals(t *testing.T) {
	devs := gpus(t, 2)
	w := newWorld(t, devs, []int{0, 1}, 2<<20)
	const timeout = 5 * time.Second

	// Rank 1 fills its buffer with 42 and puts; rank 0 waits and reads 42.
	must(t, w.dev(1).Memset(w.stream(1), w.buf(1, 1), 42, 4096))
	w.launch(1, kernels.PutSignal, 1, 1, w.signal(1, 0, 0, timeout))
	w.launch(0, kernels.WaitSignal, 1, 1, w.signal(0, 1, 0, timeout))
	w.syncAll()
	got := make([]byte, 4096)
	must(t, w.dev(0).Read(w.stream(0), got, w.buf(0, 1)))
	if !bytes.Equal(got, bytes.Repeat([]byte{42}, 4096)) {
		t.Fatal("rank 0 does not read 42 from rank 1 after put/wait")
	}
	// The same with barrier and 43, on another channel.
	must(t, w.dev(1).Memset(w.stream(1), w.buf(1, 1), 43, 4096))
	w.launch(1, kernels.Barrier, 1, 2, w.signal(1, 0, 7, timeout))
	w.launch(0, kernels.Barrier, 1, 2, w.signal(0, 0, 7, timeout))
	w.syncAll()
	must(t, w.dev(0).Read(w.stream(0), got, w.buf(0, 1)))
	if !bytes.Equal(got, bytes.Repeat([]byte{43}, 4096)) {
		t.Fatal("rank 0 does not read 43 from rank 1 after barrier")
	}
	w.padsZero()

	// A wait that nobody answers times out with a recoverable error.
	w.launch(0, kernels.WaitSignal, 1, 1, w.signal(0, 1, 3, time.Millisecond))
	err := w.dev(0).Synchronize(w.stream(0))
	var ke *device.KernelError
	if !errors.As(err, &ke) {
		t.Fatalf("unanswered wait: %v, want a *device.KernelError", err)
	}
	t.Logf("timeout reported: %v", ke)
	want := device.KernelError{Kernel: kernels.WaitSignal, Rank: 0, Block: 0, Peer: 1, Channel: 3, Slot: 3*2 + 1,
		Timeout: time.Millisecond, Reason: "wait timed out (no signal arrived)"}
	if *ke != want {
		t.Fatalf("timeout error %+v, want %+v", *ke, want)
	}
	// A second put before the first is consumed times out too.
	w.launch(1, kernels.PutSignal, 1, 1, w.signal(1, 0, 4, timeout))
	w.launch(1, kernels.PutSignal, 1, 1, w.signal(1, 0, 4, 2*time.Millisecond))
	err = w.dev(1).Synchronize(w.stream(1))
	if !errors.As(err, &ke) || ke.Rank != 1 || ke.Peer != 0 || ke.Slot != 4*2+1 ||
		ke.Reason != "put timed out (previous signal still pending in pad of rank 0)" {
		t.Fatalf("second put: %v", err)
	}
	// The devices stay usable: consume the pending signal, run a barrier.
	w.launch(0, kernels.WaitSignal, 1, 1, w.signal(0, 1, 4, timeout))
	w.launch(0, kernels.Barrier, 1, 32, w.signal(0, 0, 0, timeout))
	w.launch(1, kernels.Barrier, 1, 32, w.signal(1, 0, 0, timeout))
	w.syncAll()
	w.padsZero()
}

// fill makes n random elements of dt, with special values sprinkled in.
func fill(rng *rand.Rand, dt device.DType, n int) []byte {
	vals := make([]float32, n)
	special := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.Copysign(0, -1)), 0, 1e-40, -3e-39, 65504, 3e38}
	for i := range vals {
		switch rng.IntN(50) {
		case 0:
			vals[i] = special[rng.IntN(len(special))]
		default:
			vals[i] = float32(rng.NormFloat64() * math.Pow(2, float64(rng.IntN(20)-10)))
		}
	}
	b, err := kernels.Encode(dt, vals)
	if err != nil {
		panic(err)
	}
	return b
}

// allReduceCase runs every all-reduce form on one tensor and compares each
// result bitwise with oracle.AllReduce. The tensor of numel elements lies
// at byte offset off of every rank's buffer, between sentinel bytes that
// must survive.
func (w *world) allReduceCase(rng *rand.Rand, dt device.DType, op device.ReduceOp, off, numel uint64) {
	t := w.t
	t.Helper()
	n := len(w.rankDev)
	bytesN := numel * uint64(dt.Size())
	name := fmt.Sprintf("world %d %v %v offset %d numel %d", n, dt, op, off, numel)
	inputs := make([][]byte, n)
	for r := range inputs {
		inputs[r] = fill(rng, dt, int(numel))
	}
	want, err := oracle.AllReduce(dt, op, inputs)
	must(t, err)
	region := off + bytesN + 64
	sentinel := bytes.Repeat([]byte{0x5a}, int(region))
	load := func() {
		for r := range inputs {
			must(t, w.dev(r).Write(w.stream(r), w.buf(r, r), sentinel))
			must(t, w.dev(r).Write(w.stream(r), w.buf(r, r).Add(off), inputs[r]))
		}
	}
	// checkBuffer checks rank r's buffer: sentinels around the tensor and
	// the tensor equal to wantTensor.
	checkBuffer := func(form string, r int, wantTensor []byte) {
		got := make([]byte, region)
		must(t, w.dev(r).Read(w.stream(r), got, w.buf(r, r)))
		if !bytes.Equal(got[:off], sentinel[:off]) || !bytes.Equal(got[off+bytesN:], sentinel[off+bytesN:]) {
			t.Fatalf("%s %s: rank %d: bytes around the tensor changed", name, form, r)
		}
		if !bytes.Equal(got[off:off+bytesN], wantTensor) {
			t.Fatalf("%s %s: rank %d: buffer differs from the reference", name, form, r)
		}
	}
	checkOut := func(form string, r int, p device.Ptr) {
		got := make([]byte, bytesN)
		must(t, w.dev(r).Read(w.stream(r), got, p))
		if !bytes.Equal(got, want) {
			for i := 0; i < int(bytesN); i += dt.Size() {
				if !bytes.Equal(got[i:i+dt.Size()], want[i:i+dt.Size()]) {
					t.Fatalf("%s %s: rank %d: element %d is % x, reference % x (inputs %v)", name, form, r,
						i/dt.Size(), got[i:i+dt.Size()], want[i:i+dt.Size()], column(inputs, i, dt.Size()))
				}
			}
		}
	}
	args := func(r int) kernels.AllReduceArgs {
		d := w.rankDev[r]
		return kernels.AllReduceArgs{Rank: int32(r), World: int32(n), DType: dt, Op: op,
			BufferPtrs: w.bufArr[d], PadPtrs: w.padArr[d], PadBytes: w.padBytes, Offset: off, Numel: numel,
			TimeoutNs: int64(10 * time.Second)}
	}
	// Every block of every rank must be resident at once (block b waits for
	// block b of each peer): ranks sharing a device split its
	// multiprocessors.
	perDev := map[int]int{}
	most := 1
	for _, d := range w.rankDev {
		perDev[d]++
		most = max(most, perDev[d])
	}
	sm := w.devs[0].Attributes().SMCount / most
	oneBlocks, oneThreads := kernels.Shape(kernels.OneShotAllReduce, numel, dt, n, sm)
	twoBlocks, twoThreads := kernels.Shape(kernels.TwoShotAllReduce, numel, dt, n, sm)
	poison := func(r int) {
		must(t, w.dev(r).Memset(w.stream(r), w.scratch[r], 0xab, bytesN))
	}
	outAt := func(r int) device.Ptr { return w.scratch[r].Add(w.bufBytes) }

	// one-shot into Output.
	load()
	for r := range inputs {
		must(t, w.dev(r).Memset(w.stream(r), outAt(r), 0xab, bytesN))
		a := args(r)
		a.Output = outAt(r)
		w.launch(r, kernels.OneShotAllReduce, oneBlocks, oneThreads, a)
	}
	w.syncAll()
	for r := range inputs {
		checkOut("one-shot", r, outAt(r))
		checkBuffer("one-shot", r, inputs[r])
	}
	// one-shot copy form: the input comes from a local buffer.
	for r := range inputs {
		must(t, w.dev(r).Write(w.stream(r), w.buf(r, r), sentinel))
		must(t, w.dev(r).Write(w.stream(r), w.scratch[r], inputs[r]))
		must(t, w.dev(r).Memset(w.stream(r), outAt(r), 0xab, bytesN))
		a := args(r)
		a.Input, a.Output = w.scratch[r], outAt(r)
		w.launch(r, kernels.OneShotAllReduce, oneBlocks, oneThreads, a)
	}
	w.syncAll()
	for r := range inputs {
		checkOut("one-shot copy", r, outAt(r))
		checkBuffer("one-shot copy", r, inputs[r])
	}
	// two-shot in place.
	load()
	for r := range inputs {
		w.launch(r, kernels.TwoShotAllReduce, twoBlocks, twoThreads, args(r))
	}
	w.syncAll()
	for r := range inputs {
		checkBuffer("two-shot", r, want)
	}
	// two-shot into Output.
	load()
	for r := range inputs {
		poison(r)
		a := args(r)
		a.Output = w.scratch[r]
		w.launch(r, kernels.TwoShotAllReduce, twoBlocks, twoThreads, a)
	}
	w.syncAll()
	for r := range inputs {
		checkOut("two-shot out", r, w.scratch[r])
	}
}

func column(inputs [][]byte, i, size int) []string {
	var s []string
	for _, in := range inputs {
		s = append(s, fmt.Sprintf("% x", in[i:i+size]))
	}
	return s
}

func TestGPUAllReduce(t *testing.T) {
	devs := gpus(t, 2)
	rng := rand.New(rand.NewPCG(1, 2))
	dtypes := []device.DType{device.Float32, device.BFloat16, device.Float16}
	ops := []device.ReduceOp{device.Sum, device.Avg, device.Max, device.Min}
	w := newWorld(t, devs, []int{0, 1}, 8<<20)
	for _, dt := range dtypes {
		for _, op := range ops {
			for _, off := range []uint64{4, 8, 16} {
				for _, size := range []uint64{4, 8192, 8196, 1<<20 + 16} {
					w.allReduceCase(rng, dt, op, off, size/uint64(dt.Size()))
				}
			}
		}
	}
	w.padsZero()
	// Worlds of 3 (generic path), 4 and 8 with ranks sharing devices.
	for _, placement := range [][]int{{0, 1, 0}, {0, 1, 0, 1}, {0, 1, 0, 1, 0, 1, 0, 1}} {
		w := newWorld(t, devs, placement, 4<<20)
		for _, dt := range dtypes {
			for _, op := range []device.ReduceOp{device.Sum, device.Avg, device.Max} {
				for _, size := range []uint64{8192, 8196, 3<<20 + 8} {
					w.allReduceCase(rng, dt, op, 16, size/uint64(dt.Size()))
				}
			}
		}
		w.padsZero()
	}
}

// TestGPUAllReduceChecks: what the host cannot see, the all-reduce kernels
// check before their first barrier, through the specialised entries
// (16-byte vectors) and the generic one alike: a null buffer or pad
// pointer of a peer, a peer's tensor off the vector width and an output
// overlapping this rank's tensor are refused with the record naming them.
// A specialised entry given a launch it was not built for refuses it.
func TestGPUAllReduceChecks(t *testing.T) {
	devs := gpus(t, 2)
	w := newWorld(t, devs, []int{0, 1}, 2<<20)
	arr := w.local(0, devs[0].Attributes().Granularity)
	const off = 256
	type edit func(a *kernels.AllReduceArgs)
	ptrs := func(at uint64, ps ...device.Ptr) device.Ptr {
		must(t, devs[0].Write(w.stream(0), arr.Add(at), addrs(ps)))
		return arr.Add(at)
	}
	for _, numel := range []uint64{4096, 4098} { // bf16: 16-byte vectors (specialised entry), 4-byte (generic)
		vec := 16
		if numel == 4098 {
			vec = 4
		}
		for _, c := range []struct {
			name string
			edit edit
			want string
		}{
			{"null peer buffer", func(a *kernels.AllReduceArgs) { a.BufferPtrs = ptrs(0, w.buf(0, 0), 0) },
				"pointer array entry of rank 1 is null"},
			{"null peer pad", func(a *kernels.AllReduceArgs) { a.PadPtrs = ptrs(64, w.pads[0][0], 0) },
				"pointer array entry of rank 1 is null"},
			{"misaligned peer", func(a *kernels.AllReduceArgs) { a.BufferPtrs = ptrs(128, w.buf(0, 0), w.buf(0, 1).Add(2)) },
				fmt.Sprintf("tensor of rank 1 is not aligned to the %d-byte vector", vec)},
			{"output overlaps", func(a *kernels.AllReduceArgs) { a.Output = w.buf(0, 0).Add(off + 64) },
				"Output overlaps this rank's buffer tensor"},
		} {
			for _, kernel := range []string{kernels.OneShotAllReduce, kernels.TwoShotAllReduce} {
				a := kernels.AllReduceArgs{Rank: 0, World: 2, DType: device.BFloat16, Op: device.Sum,
					BufferPtrs: w.bufArr[0], PadPtrs: w.padArr[0], PadBytes: w.padBytes, Offset: off, Numel: numel,
					TimeoutNs: int64(time.Second)}
				if kernel == kernels.OneShotAllReduce {
					a.Output = w.scratch[0]
				}
				c.edit(&a)
				name := fmt.Sprintf("%s via %s, %s", kernel, cabi.Entry(kernel, a), c.name)
				blocks, threads := kernels.Shape(kernel, numel, device.BFloat16, 2, 0)
				w.launch(0, kernel, blocks, threads, a)
				err := devs[0].Synchronize(w.stream(0))
				var ke *device.KernelError
				if !errors.As(err, &ke) || ke.Kernel != kernel || !strings.Contains(ke.Reason, c.want) {
					t.Errorf("%s: %v, want a kernel error %q", name, err, c.want)
				}
			}
		}
	}
	// The low-latency kernel checks its one pointer array the same way.
	slot, _ := kernels.LowLatencyWorkspace(1024, 2)
	ll := kernels.AllReduceArgs{Rank: 0, World: 2, DType: device.BFloat16, Op: device.Sum,
		BufferPtrs: ptrs(192, w.buf(0, 0), 0), PadPtrs: w.padArr[0], PadBytes: w.padBytes, Numel: 512,
		Input: w.scratch[0], Output: w.scratch[0].Add(4096), SlotBytes: slot, TimeoutNs: int64(time.Second)}
	blocks, threads := kernels.Shape(kernels.LowLatencyAllReduce, ll.Numel, ll.DType, 2, 0)
	w.launch(0, kernels.LowLatencyAllReduce, blocks, threads, ll)
	if err := devs[0].Synchronize(w.stream(0)); err == nil || !strings.Contains(err.Error(), "pointer array entry of rank 1 is null") {
		t.Errorf("low-latency launch with a null peer buffer: %v", err)
	}
	// A specialised entry for world 2 given a world-4 launch.
	a := kernels.AllReduceArgs{Rank: 0, World: 4, DType: device.BFloat16, Op: device.Sum,
		BufferPtrs: w.bufArr[0], PadPtrs: w.padArr[0], PadBytes: w.padBytes, Offset: off, Numel: 4096,
		TimeoutNs: int64(time.Second)}
	launchEntry(t, devs[0], w.stream(0), device.Launch{Kernel: kernels.TwoShotAllReduce, Blocks: 1, Threads: 256, Args: a},
		"two_shot_all_reduce_bf16_w2")
	err := devs[0].Synchronize(w.stream(0))
	var ke *device.KernelError
	if !errors.As(err, &ke) || !strings.Contains(ke.Reason, "not the one its entry point was built for") {
		t.Errorf("world-4 launch of a world-2 entry: %v, want a wrong-entry error", err)
	}
	w.padsZero()
}

// launchEntry launches l through the named entry point rather than the
// one cabi.Entry picks.
func launchEntry(t *testing.T, dev device.Device, s device.Stream, l device.Launch, entry string) {
	t.Helper()
	g := dev.(*gpu)
	packed, err := cabi.Pack(cabi.LaunchHeader{}, l.Kernel, l.Args)
	must(t, err)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	g.mu.Lock()
	defer g.mu.Unlock()
	must(t, g.drv.check("cuCtxSetCurrent", g.drv.ctxSetCurrent(g.ctx)))
	must(t, g.launch(g.streams[s], launchLabel{kernel: l.Kernel}, entry, uint32(l.Blocks), uint32(l.Threads), packed))
}

// TestGPUAllReduceTiming logs how long all-reduces take on two GPUs (no
// assertion on the numbers).
func TestGPUAllReduceTiming(t *testing.T) {
	devs := gpus(t, 2)
	w := newWorld(t, devs, []int{0, 1}, 16<<20)
	sm := devs[0].Attributes().SMCount
	for _, c := range []struct {
		kernel string
		bytes  uint64
	}{
		{kernels.OneShotAllReduce, 256 << 10},
		{kernels.TwoShotAllReduce, 256 << 10},
		{kernels.TwoShotAllReduce, 8 << 20},
	} {
		numel := c.bytes / 2
		blocks, threads := kernels.Shape(c.kernel, numel, device.BFloat16, 2, sm)
		run := func(iters int) time.Duration {
			start := time.Now()
			for i := 0; i < iters; i++ {
				for r := 0; r < 2; r++ {
					a := kernels.AllReduceArgs{Rank: int32(r), World: 2, DType: device.BFloat16, Op: device.Sum,
						BufferPtrs: w.bufArr[r], PadPtrs: w.padArr[r], PadBytes: w.padBytes, Numel: numel,
						TimeoutNs: int64(10 * time.Second)}
					if c.kernel == kernels.OneShotAllReduce {
						a.Output = w.scratch[r]
					}
					w.launch(r, c.kernel, blocks, threads, a)
				}
			}
			w.syncAll()
			return time.Since(start)
		}
		run(5)
		const iters = 200
		el := run(iters) / iters
		t.Logf("%s bf16 %d bytes (%d x %d): %.1f us per all-reduce, algbw %.1f GB/s",
			c.kernel, c.bytes, blocks, threads, float64(el)/1e3, float64(c.bytes)/el.Seconds()/1e9)
	}
	w.padsZero()
}

// TestGPUGraph: a memset and a copy captured on a stream do not run while
// capturing and run in order on every replay, reading memory as it is at
// replay time; misuse is refused with a clear error.
func TestGPUGraph(t *testing.T) {
	d := gpus(t, 1)[0]
	size := d.Attributes().Granularity
	h, err := d.CreatePhysical(size)
	must(t, err)
	p, err := d.Reserve(size)
	must(t, err)
	must(t, d.Map(p, size, h))
	must(t, d.SetAccess(p, size))
	s, err := d.NewStream()
	must(t, err)
	src, dst := p, p.Add(4096)
	must(t, d.Memset(s, p, 0, 8192))
	must(t, d.BeginCapture(s))
	if err := d.BeginCapture(s); err == nil || !strings.Contains(err.Error(), "already capturing") {
		t.Errorf("second BeginCapture: %v", err)
	}
	if err := d.Synchronize(s); err == nil || !strings.Contains(err.Error(), "capturing a graph") {
		t.Errorf("Synchronize while capturing: %v", err)
	}
	must(t, d.Memset(s, dst, 'x', 8))
	must(t, d.Copy(s, dst, src, 6))
	g, err := d.EndCapture(s)
	must(t, err)
	got := make([]byte, 8)
	must(t, d.Read(s, got, dst))
	if !bytes.Equal(got, make([]byte, 8)) {
		t.Errorf("captured work ran during capture: %q", got)
	}
	for _, word := range []string{"first!", "second"} {
		must(t, d.Write(s, src, []byte(word)))
		must(t, d.LaunchGraph(g, s))
		must(t, d.Read(s, got, dst))
		if want := word + "xx"; string(got) != want {
			t.Errorf("replay: %q, want %q", got, want)
		}
	}
	if err := d.LaunchGraph(g, 0); err == nil || !strings.Contains(err.Error(), "captured on stream") {
		t.Errorf("replay on another stream: %v", err)
	}
	must(t, d.DestroyGraph(g))
	if err := d.LaunchGraph(g, s); err == nil || !strings.Contains(err.Error(), "unknown graph") {
		t.Errorf("replay of a destroyed graph: %v", err)
	}
	must(t, d.DestroyStream(s))
	must(t, d.Unmap(p, size))
	must(t, d.FreeRange(p, size))
	must(t, d.ReleasePhysical(h))
}

// TestGPUTwoOpensOfOneDevice: two ranks of one process that each open the
// same GPU (two device objects, as ranks with overlapping devices do) see
// each other's memory through their mappings, signal each other and
// all-reduce, as ranks on one shared device object do.
func TestGPUTwoOpensOfOneDevice(t *testing.T) {
	gpus(t, 1)
	devs := make([]device.Device, 2)
	for i := range devs {
		d, err := Open(0, Options{})
		must(t, err)
		devs[i] = d
		t.Cleanup(func() { must(t, d.Close()) })
	}
	w := newWorld(t, devs, []int{0, 1}, 2<<20)
	const timeout = 5 * time.Second
	got := make([]byte, 4096)
	for r := range 2 {
		must(t, w.dev(r).Memset(w.stream(r), w.buf(r, r), byte(40+r), 4096))
		must(t, w.dev(r).Synchronize(w.stream(r)))
	}
	for r := range 2 {
		must(t, w.dev(r).Read(w.stream(r), got, w.buf(r, 1-r)))
		if !bytes.Equal(got, bytes.Repeat([]byte{byte(41 - r)}, 4096)) {
			t.Fatalf("rank %d reads %d.. from rank %d's buffer, want %d", r, got[0], 1-r, 41-r)
		}
	}
	w.launch(1, kernels.PutSignal, 1, 1, w.signal(1, 0, 0, timeout))
	w.launch(0, kernels.WaitSignal, 1, 1, w.signal(0, 1, 0, timeout))
	w.syncAll()
	w.launch(1, kernels.Barrier, 1, 2, w.signal(1, 0, 7, timeout))
	w.launch(0, kernels.Barrier, 1, 2, w.signal(0, 0, 7, timeout))
	w.syncAll()
	w.padsZero()
	rng := rand.New(rand.NewPCG(3, 4))
	for _, dt := range []device.DType{device.Float32, device.BFloat16} {
		for _, size := range []uint64{8192, 1<<20 + 16} {
			w.allReduceCase(rng, dt, device.Sum, 16, size/uint64(dt.Size()))
		}
	}
	w.padsZero()
}
