package cuda

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/device/cuda/nvml"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/kernels/cabi"
)

// Options configure Open.
type Options struct {
	// Module is the kernel image (fatbin or cubin) to load at the first
	// launch; nil means the embedded kernels.Fatbin.
	Module []byte
}

// recordBytes is the size of each stream's host-mapped error record.
const recordBytes = 4096

// launchRing is how many recent launches of a stream keep their kernel
// name for error reports.
const launchRing = 1024

// gpu is one CUDA device seen through its primary context. Driver calls run
// on the calling goroutine, locked to its OS thread for the call, after
// making the context current there: no hand-off to another thread, so a
// launch costs what the driver charges for it. mu serialises the calls of
// one device and guards everything below it.
type gpu struct {
	drv   *driver
	dev   int32   // CUdevice
	ctx   uintptr // primary context
	attrs device.Attributes
	busID string

	module    []byte
	mod       uintptr // loaded module (shared by the ordinal's objects), 0 until loaded
	functions map[string]uintptr

	handles    map[device.Handle]uint64 // id -> CUmemGenericAllocationHandle
	nextHandle device.Handle
	ranges     map[device.Ptr]uint64 // reserved ranges: start -> size
	maps       map[device.Ptr]uint64 // mappings: start -> size
	streams    map[device.Stream]*stream
	nextStream device.Stream
	events     map[device.Event]uintptr
	nextEvent  device.Event
	graphs     map[device.Graph]*graph
	nextGraph  device.Graph
	closed     bool

	mu sync.Mutex
}

// stream is a CUstream with the error record its kernels write to.
type stream struct {
	cu       uintptr
	rec      unsafe.Pointer // host address of the record (pinned, mapped)
	recDev   uint64         // its device address
	launches uint32         // launches so far
	names    [launchRing]launchLabel
	// captured maps the launch numbers recorded since BeginCapture to
	// their kernels; nil when not capturing. graphNames holds those of
	// the stream's live graphs, whose launches report under the numbers
	// they had when captured.
	captured   map[uint32]launchLabel
	graphNames map[uint32]launchLabel
}

// launchLabel is what an error report of a launch names: its kernel and
// its group.
type launchLabel struct {
	kernel string
	group  *device.Group
}

// DeviceCount returns the number of CUDA devices the driver sees.
func DeviceCount() (int, error) {
	drv, err := load()
	if err != nil {
		return 0, err
	}
	return drv.deviceCount()
}

// deviceCount is DeviceCount through d.
func (d *driver) deviceCount() (int, error) {
	var n int32
	if err := d.check("cuDeviceGetCount", d.cuDeviceGetCount(&n)); err != nil {
		return 0, fmt.Errorf("cuda: %w", err)
	}
	return int(n), nil
}

// Open opens CUDA device ordinal index through its primary context. The
// device must support virtual memory management with POSIX file descriptor
// handles. Without a driver the error wraps ErrNoDriver.
func Open(index int, opts Options) (device.Device, error) {
	drv, err := load()
	if err != nil {
		return nil, err
	}
	return openDevice(drv, index, opts)
}

// openDevice is Open through drv.
func openDevice(drv *driver, index int, opts Options) (device.Device, error) {
	n, err := drv.deviceCount()
	if err != nil {
		return nil, err
	}
	if index < 0 || index >= n {
		return nil, fmt.Errorf("cuda: device index %d out of range (the driver sees %d devices)", index, n)
	}
	if err := drv.opens.add(index, drv.loading); err != nil {
		return nil, err
	}
	g := &gpu{
		drv:        drv,
		module:     opts.Module,
		functions:  map[string]uintptr{},
		handles:    map[device.Handle]uint64{},
		nextHandle: 1,
		ranges:     map[device.Ptr]uint64{},
		maps:       map[device.Ptr]uint64{},
		streams:    map[device.Stream]*stream{},
		nextStream: 1,
		events:     map[device.Event]uintptr{},
		nextEvent:  1,
		graphs:     map[device.Graph]*graph{},
		nextGraph:  1,
	}
	if g.module == nil {
		g.module = kernels.Fatbin
	}
	err = func() error {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		g.mu.Lock()
		defer g.mu.Unlock()
		if err := drv.check("cuDeviceGet", drv.cuDeviceGet(&g.dev, int32(index))); err != nil {
			drv.opens.remove(index)
			return err
		}
		if err := drv.check("cuDevicePrimaryCtxRetain", drv.cuDevicePrimaryCtxRetain(&g.ctx, g.dev)); err != nil {
			drv.opens.remove(index)
			return err
		}
		// fail undoes what the open did, with the context current.
		fail := func(err error) error {
			if st := g.streams[0]; st != nil {
				g.pool(st)
			}
			_ = g.release(drv.opens.remove(index))
			drv.cuDevicePrimaryCtxRelease(g.dev)
			return err
		}
		if err := drv.check("cuCtxSetCurrent", drv.ctxSetCurrent(g.ctx)); err != nil {
			drv.opens.remove(index)
			drv.cuDevicePrimaryCtxRelease(g.dev)
			return err
		}
		if err := g.describe(index); err != nil {
			return fail(err)
		}
		if err := g.createStream(0); err != nil {
			return fail(err)
		}
		if err := g.loadFunctions(); err != nil {
			return fail(err)
		}
		return nil
	}()
	if err != nil {
		return nil, fmt.Errorf("cuda: open device %d: %w", index, err)
	}
	return g, nil
}

// describe reads the attributes of the device and checks that it has what
// symmetric memory needs. It runs with the context current.
func (g *gpu) describe(index int) error {
	attr := func(a int32) (int, error) {
		var v int32
		err := g.drv.check("cuDeviceGetAttribute", g.drv.cuDeviceGetAttribute(&v, a, g.dev))
		return int(v), err
	}
	var name [256]byte
	if err := g.drv.check("cuDeviceGetName", g.drv.cuDeviceGetName(&name[0], int32(len(name)), g.dev)); err != nil {
		return err
	}
	var bus [64]byte
	if err := g.drv.check("cuDeviceGetPCIBusId", g.drv.cuDeviceGetPCIBusId(&bus[0], int32(len(bus)), g.dev)); err != nil {
		return err
	}
	g.busID = cString(bus[:])
	sms, err := attr(attrMultiprocessorCount)
	if err != nil {
		return err
	}
	for _, need := range []struct {
		attr int32
		what string
	}{
		{attrVirtualMemoryManagement, "virtual memory management"},
		{attrHandleTypePosixFD, "POSIX file descriptor handles"},
		{attrUnifiedAddressing, "unified addressing"},
		{attrCanMapHostMemory, "mapped host memory"},
	} {
		v, err := attr(need.attr)
		if err != nil {
			return err
		}
		if v == 0 {
			return fmt.Errorf("device %s does not support %s", cString(name[:]), need.what)
		}
	}
	mc, err := attr(attrMulticastSupported)
	if err != nil {
		return err
	}
	var gran uint64
	if err := g.drv.check("cuMemGetAllocationGranularity",
		g.drv.cuMemGetAllocationGranularity(&gran, allocationProp(int(g.dev)), granularityRecommended)); err != nil {
		return err
	}
	g.attrs = device.Attributes{
		Name:               cString(name[:]),
		Index:              index,
		SMCount:            sms,
		Granularity:        gran,
		MulticastSupported: mc != 0 && !multicastDisabled(os.Getenv),
	}
	return nil
}

// multicastDisabled reports whether the environment turns multicast off:
// SYMMEM_DISABLE_MULTICAST or TORCH_SYMM_MEM_DISABLE_MULTICAST set to
// anything but "", "0", "false", "no" or "off".
func multicastDisabled(getenv func(string) string) bool {
	for _, k := range []string{"SYMMEM_DISABLE_MULTICAST", "TORCH_SYMM_MEM_DISABLE_MULTICAST"} {
		switch strings.ToLower(strings.TrimSpace(getenv(k))) {
		case "", "0", "false", "no", "off":
		default:
			return true
		}
	}
	return false
}

// desc describes an operation for error messages; it is formatted only
// when an error is reported.
type desc struct {
	format string
	args   []any
}

func opf(format string, args ...any) desc { return desc{format, args} }

func (o desc) String() string { return fmt.Sprintf(o.format, o.args...) }

// do runs f with the device's lock held and its context current on the
// calling thread, naming o in its error.
func (g *gpu) do(o desc, f func() error) error {
	if err := g.call(f); err != nil {
		return fmt.Errorf("cuda device %d: %v: %w", g.attrs.Index, o, err)
	}
	return nil
}

// call runs f with the device's lock held and its context current on the
// calling goroutine's thread, which stays locked to it for the call.
func (g *gpu) call(f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return errClosed
	}
	if err := g.drv.check("cuCtxSetCurrent", g.drv.ctxSetCurrent(g.ctx)); err != nil {
		return err
	}
	return f()
}

func (g *gpu) Attributes() device.Attributes { return g.attrs }

func (g *gpu) CreatePhysical(size uint64) (device.Handle, error) {
	var id device.Handle
	err := g.do(opf("create physical allocation of %d bytes", size), func() error {
		if err := g.checkSize(size); err != nil {
			return err
		}
		var h uint64
		if err := g.drv.check("cuMemCreate", g.drv.cuMemCreate(&h, size, allocationProp(int(g.dev)), 0)); err != nil {
			return err
		}
		id = g.addHandle(h)
		return nil
	})
	return id, err
}

// addHandle registers a driver allocation handle under a new id. It runs
// with the device's lock held.
func (g *gpu) addHandle(h uint64) device.Handle {
	id := g.nextHandle
	g.nextHandle++
	g.handles[id] = h
	return id
}

// checkSize rejects sizes that are zero or not a multiple of the granularity.
func (g *gpu) checkSize(size uint64) error {
	if size == 0 || size%g.attrs.Granularity != 0 {
		return fmt.Errorf("size %d is not a positive multiple of the granularity %d", size, g.attrs.Granularity)
	}
	return nil
}

// handle returns the driver handle for id.
func (g *gpu) handle(id device.Handle) (uint64, error) {
	h, ok := g.handles[id]
	if !ok {
		return 0, fmt.Errorf("unknown handle %d", id)
	}
	return h, nil
}

func (g *gpu) ReleasePhysical(id device.Handle) error {
	return g.do(opf("release handle %d", id), func() error {
		h, err := g.handle(id)
		if err != nil {
			return err
		}
		if err := g.drv.check("cuMemRelease", g.drv.cuMemRelease(h)); err != nil {
			return err
		}
		delete(g.handles, id)
		return nil
	})
}

func (g *gpu) ExportHandle(id device.Handle) (int, error) {
	var fd int32 = -1
	err := g.do(opf("export handle %d", id), func() error {
		h, err := g.handle(id)
		if err != nil {
			return err
		}
		return g.drv.check("cuMemExportToShareableHandle",
			g.drv.cuMemExportToShareableHandle(&fd, h, memHandleTypePosixFD, 0))
	})
	return int(fd), err
}

func (g *gpu) ImportHandle(fd int) (device.Handle, error) {
	var id device.Handle
	err := g.do(opf("import fd %d", fd), func() error {
		if fd < 0 {
			return fmt.Errorf("invalid file descriptor %d", fd)
		}
		var h uint64
		if err := g.drv.check("cuMemImportFromShareableHandle",
			g.drv.cuMemImportFromShareableHandle(&h, uintptr(fd), memHandleTypePosixFD)); err != nil {
			return err
		}
		id = g.addHandle(h)
		return nil
	})
	return id, err
}

func (g *gpu) CloseFD(fd int) error {
	if fd < 0 {
		return fmt.Errorf("cuda device %d: close fd: invalid file descriptor %d", g.attrs.Index, fd)
	}
	if err := syscall.Close(fd); err != nil {
		return fmt.Errorf("cuda device %d: close fd %d: %w", g.attrs.Index, fd, err)
	}
	return nil
}

func (g *gpu) Reserve(size uint64) (device.Ptr, error) {
	var p uint64
	err := g.do(opf("reserve %d bytes", size), func() error {
		if err := g.checkSize(size); err != nil {
			return err
		}
		if err := g.drv.check("cuMemAddressReserve", g.drv.cuMemAddressReserve(&p, size, g.attrs.Granularity, 0, 0)); err != nil {
			return err
		}
		g.ranges[device.Ptr(p)] = size
		return nil
	})
	return device.Ptr(p), err
}

func (g *gpu) FreeRange(p device.Ptr, size uint64) error {
	return g.do(opf("free range %v (%d bytes)", p, size), func() error {
		if got, ok := g.ranges[p]; !ok || got != size {
			return fmt.Errorf("no reserved range of %d bytes starts at %v", size, p)
		}
		if err := g.drv.check("cuMemAddressFree", g.drv.cuMemAddressFree(uint64(p), size)); err != nil {
			return err
		}
		delete(g.ranges, p)
		return nil
	})
}

// inRange reports whether [p, p+size) lies inside one reserved range.
func (g *gpu) inRange(p device.Ptr, size uint64) bool {
	for start, n := range g.ranges {
		if p >= start && uint64(p-start)+size <= n {
			return true
		}
	}
	return false
}

func (g *gpu) Map(p device.Ptr, size uint64, id device.Handle) error {
	return g.do(opf("map handle %d at %v (%d bytes)", id, p, size), func() error {
		h, err := g.handle(id)
		if err != nil {
			return err
		}
		if err := g.checkSize(size); err != nil {
			return err
		}
		if !g.inRange(p, size) {
			return fmt.Errorf("[%v, +%d) is not inside a reserved range", p, size)
		}
		if err := g.drv.check("cuMemMap", g.drv.cuMemMap(uint64(p), size, 0, h, 0)); err != nil {
			return err
		}
		g.maps[p] = size
		return nil
	})
}

func (g *gpu) SetAccess(p device.Ptr, size uint64) error {
	return g.do(opf("set access at %v (%d bytes)", p, size), func() error {
		return g.drv.check("cuMemSetAccess", g.drv.cuMemSetAccess(uint64(p), size, accessDesc(int(g.dev)), 1))
	})
}

func (g *gpu) Unmap(p device.Ptr, size uint64) error {
	return g.do(opf("unmap %v (%d bytes)", p, size), func() error {
		if got, ok := g.maps[p]; !ok || got != size {
			return fmt.Errorf("no mapping of %d bytes starts at %v", size, p)
		}
		if err := g.drv.check("cuMemUnmap", g.drv.cuMemUnmap(uint64(p), size)); err != nil {
			return err
		}
		delete(g.maps, p)
		return nil
	})
}

// stream returns the stream with id s.
func (g *gpu) stream(s device.Stream) (*stream, error) {
	st, ok := g.streams[s]
	if !ok {
		return nil, fmt.Errorf("unknown stream %d", s)
	}
	return st, nil
}

func (g *gpu) Memset(s device.Stream, dst device.Ptr, value byte, n uint64) error {
	return g.do(opf("memset %d bytes at %v", n, dst), func() error {
		st, err := g.stream(s)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		return g.drv.check("cuMemsetD8Async", g.drv.cuMemsetD8Async(uint64(dst), value, n, st.cu))
	})
}

func (g *gpu) Copy(s device.Stream, dst, src device.Ptr, n uint64) error {
	return g.do(opf("copy %d bytes from %v to %v", n, src, dst), func() error {
		st, err := g.stream(s)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		return g.drv.check("cuMemcpyAsync", g.drv.cuMemcpyAsync(uint64(dst), uint64(src), n, st.cu))
	})
}

func (g *gpu) Write(s device.Stream, dst device.Ptr, src []byte) error {
	return g.hostCopy(s, opf("write %d bytes to %v", len(src), dst), len(src), "cuMemcpyHtoDAsync_v2",
		func(st *stream) cuResult {
			return g.drv.cuMemcpyHtoDAsync(uint64(dst), unsafe.Pointer(&src[0]), uint64(len(src)), st.cu)
		})
}

func (g *gpu) Read(s device.Stream, dst []byte, src device.Ptr) error {
	return g.hostCopy(s, opf("read %d bytes from %v", len(dst), src), len(dst), "cuMemcpyDtoHAsync_v2",
		func(st *stream) cuResult {
			return g.drv.cuMemcpyDtoHAsync(unsafe.Pointer(&dst[0]), uint64(src), uint64(len(dst)), st.cu)
		})
}

// hostCopy runs a copy of n bytes between host and device memory on stream
// s (call names the driver entry point copy makes) and waits for it. It
// first waits for the stream's earlier work without holding the device's
// lock, so a kernel that waits for a peer does not block the device's other
// calls.
func (g *gpu) hostCopy(s device.Stream, op desc, n int, call string, copy func(st *stream) cuResult) error {
	if err := g.wait(s, op, false); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	if err := g.do(op, func() error {
		st, err := g.stream(s)
		if err != nil {
			return err
		}
		return g.drv.check(call, copy(st))
	}); err != nil {
		return err
	}
	return g.wait(s, op, false)
}

// NewStream creates a stream. Stream 0, the default stream, always exists.
func (g *gpu) NewStream() (device.Stream, error) {
	var id device.Stream
	err := g.do(opf("create stream"), func() error {
		if err := g.createStream(g.nextStream); err != nil {
			return err
		}
		id = g.nextStream
		g.nextStream++
		return nil
	})
	return id, err
}

// createStream creates the driver stream and error record of stream id.
// It runs with the context current.
func (g *gpu) createStream(id device.Stream) error {
	st := &stream{graphNames: map[uint32]launchLabel{}}
	if p, ok := g.drv.opens.take(g.attrs.Index); ok {
		st.cu, st.rec, st.recDev = p.cu, p.rec, p.recDev
		g.streams[id] = st
		return nil
	}
	if err := g.drv.check("cuStreamCreate", g.drv.cuStreamCreate(&st.cu, streamNonBlocking)); err != nil {
		return err
	}
	if err := g.drv.check("cuMemHostAlloc",
		g.drv.cuMemHostAlloc(&st.rec, recordBytes, memHostAllocPortable|memHostAllocDeviceMap)); err != nil {
		g.drv.cuStreamDestroy(st.cu)
		return err
	}
	clear(unsafe.Slice((*byte)(st.rec), recordBytes))
	if err := g.drv.check("cuMemHostGetDevicePointer",
		g.drv.cuMemHostGetDevicePointer(&st.recDev, st.rec, 0)); err != nil {
		g.drv.cuMemFreeHost(st.rec)
		g.drv.cuStreamDestroy(st.cu)
		return err
	}
	g.streams[id] = st
	return nil
}

// pool gives a stream whose work has completed back to the process's pool
// of the device (see [sharing]), with its error record cleared.
func (g *gpu) pool(st *stream) {
	clear(unsafe.Slice((*byte)(st.rec), recordBytes))
	g.drv.opens.give(g.attrs.Index, pooledStream{cu: st.cu, rec: st.rec, recDev: st.recDev})
}

// release destroys the streams, frees their records and unloads the
// modules that the last close of the ordinal returns. It runs with the
// context current, when no other device object of the process uses it.
func (g *gpu) release(r released) error {
	var errs []error
	for _, p := range r.streams {
		errs = append(errs, g.drv.check("cuStreamDestroy_v2", g.drv.cuStreamDestroy(p.cu)),
			g.drv.check("cuMemFreeHost", g.drv.cuMemFreeHost(p.rec)))
	}
	for _, m := range r.modules {
		errs = append(errs, g.drv.check("cuModuleUnload", g.drv.cuModuleUnload(m)))
	}
	return errors.Join(errs...)
}

// DestroyStream destroys s after its work completes. Stream 0 cannot be
// destroyed. The driver's stream and its error record go back to the
// process's pool of the device, not to the driver (see [sharing]).
func (g *gpu) DestroyStream(s device.Stream) error {
	op := opf("destroy stream %d", s)
	if s == 0 {
		return fmt.Errorf("cuda device %d: destroy stream: stream 0 is the default stream", g.attrs.Index)
	}
	if err := g.wait(s, op, false); err != nil {
		return err
	}
	return g.do(op, func() error {
		st, err := g.stream(s)
		if err != nil {
			return err
		}
		delete(g.streams, s)
		g.pool(st)
		return nil
	})
}

// wait polls until the work on s has completed, releasing the device's
// thread between polls. With report set it then returns (and clears) the
// error a kernel recorded; otherwise the record stays for Synchronize.
func (g *gpu) wait(s device.Stream, op desc, report bool) error {
	for i := 0; ; i++ {
		var done bool
		var kerr *device.KernelError
		err := g.do(op, func() error {
			st, err := g.stream(s)
			if err != nil {
				return err
			}
			if err := st.capturing("wait for the stream"); err != nil {
				return err
			}
			r := g.drv.cuStreamQuery(st.cu)
			if r == errorNotReady {
				return nil
			}
			if err := g.drv.check("cuStreamQuery", r); err != nil {
				return err
			}
			done = true
			if report {
				kerr = st.takeError()
			}
			return nil
		})
		if err != nil {
			return err
		}
		if done {
			if kerr != nil {
				return kerr
			}
			return nil
		}
		backoff(i)
	}
}

// backoff pauses the i-th poll of a wait for backoffDelay(i).
func backoff(i int) {
	if d := backoffDelay(i); d > 0 {
		time.Sleep(d)
	}
}

// backoffDelay is the pause after the i-th poll of a wait: none at first
// (spin), then longer and longer, up to a millisecond.
func backoffDelay(i int) time.Duration {
	switch {
	case i < 64:
		return 0
	case i < 1024:
		return time.Duration(i-63) * time.Microsecond
	}
	return time.Millisecond
}

// takeError decodes and clears the stream's error record.
func (st *stream) takeError() *device.KernelError {
	b := unsafe.Slice((*byte)(st.rec), cabi.ErrorRecordSize)
	rec, ok := cabi.DecodeErrorRecord(b)
	if !ok {
		return nil
	}
	clear(b)
	label, ok := st.graphNames[rec.Launch]
	if d := st.launches - rec.Launch; !ok && d >= 1 && d <= launchRing {
		label, ok = st.names[rec.Launch%launchRing], true
	}
	if !ok {
		label.kernel = "unknown kernel"
	}
	e := rec.KernelError(label.kernel)
	e.Group = label.group
	return e
}

func (g *gpu) Synchronize(s device.Stream) error {
	return g.wait(s, opf("synchronize stream %d", s), true)
}

func (g *gpu) NewEvent() (device.Event, error) {
	var id device.Event
	err := g.do(opf("create event"), func() error {
		var e uintptr
		if err := g.drv.check("cuEventCreate", g.drv.cuEventCreate(&e, eventDefault)); err != nil {
			return err
		}
		id = g.nextEvent
		g.nextEvent++
		g.events[id] = e
		return nil
	})
	return id, err
}

// event returns the driver event with id e.
func (g *gpu) event(e device.Event) (uintptr, error) {
	ev, ok := g.events[e]
	if !ok {
		return 0, fmt.Errorf("unknown event %d", e)
	}
	return ev, nil
}

func (g *gpu) RecordEvent(e device.Event, s device.Stream) error {
	return g.do(opf("record event %d on stream %d", e, s), func() error {
		ev, err := g.event(e)
		if err != nil {
			return err
		}
		st, err := g.stream(s)
		if err != nil {
			return err
		}
		if err := st.capturing("record event"); err != nil {
			return err
		}
		return g.drv.check("cuEventRecord", g.drv.cuEventRecord(ev, st.cu))
	})
}

func (g *gpu) Elapsed(start, end device.Event) (time.Duration, error) {
	op := opf("elapsed time from event %d to %d", start, end)
	for i := 0; ; i++ {
		var done bool
		var ms float32
		err := g.do(op, func() error {
			a, err := g.event(start)
			if err != nil {
				return err
			}
			b, err := g.event(end)
			if err != nil {
				return err
			}
			r := g.drv.cuEventQuery(b)
			if r == errorNotReady {
				return nil
			}
			if err := g.drv.check("cuEventQuery", r); err != nil {
				return err
			}
			done = true
			return g.drv.check("cuEventElapsedTime", g.drv.cuEventElapsedTime(&ms, a, b))
		})
		if err != nil {
			return 0, err
		}
		if done {
			return time.Duration(float64(ms) * float64(time.Millisecond)), nil
		}
		backoff(i)
	}
}

func (g *gpu) DestroyEvent(e device.Event) error {
	return g.do(opf("destroy event %d", e), func() error {
		ev, err := g.event(e)
		if err != nil {
			return err
		}
		if err := g.drv.check("cuEventDestroy_v2", g.drv.cuEventDestroy(ev)); err != nil {
			return err
		}
		delete(g.events, e)
		return nil
	})
}

// Launch checks and packs the arguments, then launches on the calling
// thread; it returns once the driver has queued the kernel. The kernel's own
// failures (timeouts, bad pointers) are reported by the stream's next
// Synchronize.
func (g *gpu) Launch(s device.Stream, l device.Launch) error {
	fail := func(err error) error {
		return fmt.Errorf("cuda device %d: launch %s on stream %d: %w", g.attrs.Index, l.Kernel, s, err)
	}
	prep, err := cabi.Prepare(l.Kernel, l.Blocks, l.Threads, l.Args)
	if err != nil {
		return fail(err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return fail(errClosed)
	}
	st, ok := g.streams[s]
	if !ok {
		return fail(fmt.Errorf("unknown stream %d", s))
	}
	if err := g.drv.check("cuCtxSetCurrent", g.drv.ctxSetCurrent(g.ctx)); err != nil {
		return fail(err)
	}
	if err := g.launch(st, launchLabel{l.Kernel, l.Group}, prep.Entry, uint32(l.Blocks), uint32(l.Threads), prep.Args); err != nil {
		return fail(err)
	}
	return nil
}

// launch launches kernel, through its entry point entry (cabi.Entry), on
// st with the packed arguments, after filling in the header. It runs with
// the context current.
func (g *gpu) launch(st *stream, label launchLabel, entry string, blocks, threads uint32, packed []byte) error {
	fn, err := g.function(entry)
	if err != nil {
		return err
	}
	seq := st.launches
	if err := cabi.SetHeader(packed, cabi.LaunchHeader{ErrorRecord: st.recDev, Launch: seq}); err != nil {
		return err
	}
	// The driver copies the argument struct during the call; keep it in
	// 8-byte words so that it has the struct's alignment.
	words := make([]uint64, (len(packed)+7)/8)
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8), packed)
	params := []unsafe.Pointer{unsafe.Pointer(&words[0])}
	if err := g.drv.check("cuLaunchKernel", g.drv.launchKernel(fn, blocks, threads, st.cu, &params[0])); err != nil {
		return err
	}
	st.names[seq%launchRing] = label
	if st.captured != nil {
		st.captured[seq] = label
	}
	st.launches++
	return nil
}

// loadFunctions loads the kernel image and resolves every entry point
// (cabi.Entries) at once. Under the driver's lazy loading (the default
// since CUDA 12.2) a kernel is loaded when its function is first looked up,
// and loading waits for the kernels running in the context: had a rank
// looked up its first kernel while a peer's kernel on the same GPU spun
// waiting for it, both would wait for each other until the timeout (ranks
// of one process that each open the GPU share its primary context). It
// runs with the context current.
func (g *gpu) loadFunctions() error {
	for _, name := range cabi.Entries() {
		if _, err := g.function(name); err != nil {
			return err
		}
	}
	return nil
}

// function returns the kernel called name, loading the module first if
// needed. It runs with the context current.
func (g *gpu) function(name string) (uintptr, error) {
	if fn, ok := g.functions[name]; ok {
		return fn, nil
	}
	if g.mod == 0 {
		if len(g.module) == 0 {
			return 0, errors.New("the kernel image is empty: build it with scripts/build-fatbin.sh")
		}
		mod, err := g.drv.opens.module(g.attrs.Index, g.module, func() (uintptr, error) {
			// Keep the image in 8-byte words: fatbin headers are read in place.
			img := make([]uint64, (len(g.module)+7)/8)
			copy(unsafe.Slice((*byte)(unsafe.Pointer(&img[0])), len(img)*8), g.module)
			var m uintptr
			if err := g.drv.check("cuModuleLoadData", g.drv.cuModuleLoadData(&m, unsafe.Pointer(&img[0]))); err != nil {
				return 0, fmt.Errorf("load kernel image: %w", err)
			}
			return m, nil
		})
		if err != nil {
			return 0, err
		}
		g.mod = mod
	}
	var fn uintptr
	if err := g.drv.check("cuModuleGetFunction", g.drv.cuModuleGetFunction(&fn, g.mod, name)); err != nil {
		return 0, fmt.Errorf("kernel %q: %w", name, err)
	}
	g.functions[name] = fn
	return fn, nil
}

func (g *gpu) NVLinkMatrix() ([][]int, error) {
	var ids []string
	err := g.do(opf("read PCI bus ids"), func() error {
		var n int32
		if err := g.drv.check("cuDeviceGetCount", g.drv.cuDeviceGetCount(&n)); err != nil {
			return err
		}
		for i := int32(0); i < n; i++ {
			var dev int32
			if err := g.drv.check("cuDeviceGet", g.drv.cuDeviceGet(&dev, i)); err != nil {
				return err
			}
			var bus [64]byte
			if err := g.drv.check("cuDeviceGetPCIBusId", g.drv.cuDeviceGetPCIBusId(&bus[0], int32(len(bus)), dev)); err != nil {
				return err
			}
			ids = append(ids, cString(bus[:]))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	m, err := nvml.NVLinkMatrix(ids)
	if err != nil {
		return nil, fmt.Errorf("cuda device %d: NVLink matrix: %w", g.attrs.Index, err)
	}
	return m, nil
}

// Close releases what the device still holds (mappings, ranges, handles,
// streams, events, the module) and its primary context.
func (g *gpu) Close() error {
	var errs []error
	err := g.call(func() error {
		g.closed = true
		for p, n := range g.maps {
			errs = append(errs, g.drv.check("cuMemUnmap", g.drv.cuMemUnmap(uint64(p), n)))
		}
		for p, n := range g.ranges {
			errs = append(errs, g.drv.check("cuMemAddressFree", g.drv.cuMemAddressFree(uint64(p), n)))
		}
		for _, h := range g.handles {
			errs = append(errs, g.drv.check("cuMemRelease", g.drv.cuMemRelease(h)))
		}
		for _, gr := range g.graphs {
			errs = append(errs, g.destroyGraph(gr))
		}
		for _, st := range g.streams {
			errs = append(errs, g.drv.check("cuStreamSynchronize", g.drv.cuStreamSynchronize(st.cu)))
			g.pool(st)
		}
		for _, e := range g.events {
			errs = append(errs, g.drv.check("cuEventDestroy_v2", g.drv.cuEventDestroy(e)))
		}
		errs = append(errs, g.release(g.drv.opens.remove(g.attrs.Index)))
		errs = append(errs, g.drv.check("cuDevicePrimaryCtxRelease_v2", g.drv.cuDevicePrimaryCtxRelease(g.dev)))
		clear(g.maps)
		clear(g.ranges)
		clear(g.handles)
		clear(g.streams)
		clear(g.events)
		clear(g.graphs)
		return nil
	})
	if err != nil {
		return fmt.Errorf("cuda device %d: close: %w", g.attrs.Index, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cuda device %d: close: %w", g.attrs.Index, err)
	}
	return nil
}
