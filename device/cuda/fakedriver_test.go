package cuda

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"testing"
	"unsafe"

	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/kernels/cabi"
)

// Result codes the fake driver answers with (values and texts of cuda.h).
const (
	errInvalidValue   cuResult = 1   // CUDA_ERROR_INVALID_VALUE
	errOutOfMemory    cuResult = 2   // CUDA_ERROR_OUT_OF_MEMORY
	errInvalidDevice  cuResult = 101 // CUDA_ERROR_INVALID_DEVICE
	errInvalidImage   cuResult = 200 // CUDA_ERROR_INVALID_IMAGE
	errInvalidContext cuResult = 201 // CUDA_ERROR_INVALID_CONTEXT
	errInvalidHandle  cuResult = 400 // CUDA_ERROR_INVALID_HANDLE
	errNotFound       cuResult = 500 // CUDA_ERROR_NOT_FOUND
	errIllegalAddress cuResult = 700 // CUDA_ERROR_ILLEGAL_ADDRESS
)

// fakeErrors are the names and descriptions the fake driver gives its
// result codes, NUL-terminated as the driver's are.
var fakeErrors = map[cuResult][2]string{
	errInvalidValue:   {"CUDA_ERROR_INVALID_VALUE", "invalid argument"},
	errOutOfMemory:    {"CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
	errInvalidDevice:  {"CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
	errInvalidImage:   {"CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
	errInvalidContext: {"CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
	errInvalidHandle:  {"CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
	errNotFound:       {"CUDA_ERROR_NOT_FOUND", "named symbol not found"},
	errorNotReady:     {"CUDA_ERROR_NOT_READY", "device not ready"},
	errIllegalAddress: {"CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
}

// fakeDevice is one device the fake driver shows.
type fakeDevice struct {
	name, busID string
	attrs       map[int32]int32
	retains     int // primary context retains
}

// fakeMemory is the memory of a physical allocation, shared by the handles
// that import it.
type fakeMemory struct{ b []byte }

// fakeMapping is a mapped range of device addresses.
type fakeMapping struct {
	mem    *fakeMemory
	size   uint64
	access bool
}

// fakeHost is a pinned, mapped host allocation.
type fakeHost struct {
	words []uint64 // the memory, in words for the alignment of a record
	dev   uint64   // its device address
}

// fakeStream is a stream: its work completes when enqueued, and the
// next notReady queries still answer CUDA_ERROR_NOT_READY.
type fakeStream struct {
	notReady  int
	capturing *fakeGraph
}

// fakeEvent is an event; it is complete once recorded and after notReady
// more queries.
type fakeEvent struct {
	recorded bool
	at       float32 // the fake clock when recorded, in ms
	notReady int
}

// fakeGraph is a captured graph: the operations its launches replay.
type fakeGraph struct{ ops []func() cuResult }

// fakeLaunch is a kernel launch as the fake driver saw it.
type fakeLaunch struct {
	entry           string
	blocks, threads uint32
	stream          uintptr
	header          cabi.LaunchHeader
	args            []byte // the whole argument struct, header included
}

// fakeDriver is an in-memory model of the CUDA driver behind a *driver
// whose entry points are its methods: devices with attributes, primary
// contexts, physical allocations with exportable file descriptors,
// reserved and mapped address ranges, memset and copies over Go byte
// slices, pinned host memory, streams, events, graph capture, modules and
// functions, and the driver's error names. Every entry point counts its
// calls and answers with an injected result code where one is set
// (fail). A kernel launch runs the fake's kernel hook (nil: nothing),
// which sees the launch's header and arguments and can write the stream's
// error record. The counters of live objects let a test check that a
// device released everything.
type fakeDriver struct {
	mu sync.Mutex

	devices []*fakeDevice
	gran    uint64
	free    uint64 // cuMemGetInfo's free bytes
	clock   float32
	next    uintptr // last handle given out; handles of every kind share it
	current uintptr // the current context (0: none)

	allocs   map[uint64]*fakeMemory // physical allocation handles
	fds      map[int32]*fakeMemory  // exported file descriptors
	ranges   map[uint64]uint64      // reserved ranges: start -> size
	mappings map[uint64]*fakeMapping
	nextVA   uint64
	host     map[unsafe.Pointer]*fakeHost
	streams  map[uintptr]*fakeStream
	events   map[uintptr]*fakeEvent
	graphs   map[uintptr]*fakeGraph
	execs    map[uintptr]*fakeGraph
	modules  map[uintptr][]byte // the first bytes of each loaded image
	funcs    map[uintptr]string
	errText  map[cuResult][2][]byte

	// fail maps an entry point to the result it answers every call with
	// until the entry is deleted; missing lists functions no image has.
	fail    map[string]cuResult
	missing map[string]bool
	calls   map[string]int
	// kernel runs every kernel launch, with the fake's lock held: it may
	// use the fake's memory methods that do not lock (record).
	kernel   func(f *fakeDriver, l fakeLaunch)
	launches []fakeLaunch
}

// newFakeDriver returns a driver of n fake devices in eager loading mode,
// and the fake behind it.
func newFakeDriver(n int) (*driver, *fakeDriver) {
	f := &fakeDriver{
		gran:     2 << 20,
		free:     80 << 30,
		allocs:   map[uint64]*fakeMemory{},
		fds:      map[int32]*fakeMemory{},
		ranges:   map[uint64]uint64{},
		mappings: map[uint64]*fakeMapping{},
		nextVA:   0x7000_0000_0000,
		host:     map[unsafe.Pointer]*fakeHost{},
		streams:  map[uintptr]*fakeStream{},
		events:   map[uintptr]*fakeEvent{},
		graphs:   map[uintptr]*fakeGraph{},
		execs:    map[uintptr]*fakeGraph{},
		modules:  map[uintptr][]byte{},
		funcs:    map[uintptr]string{},
		errText:  map[cuResult][2][]byte{},
		fail:     map[string]cuResult{},
		missing:  map[string]bool{},
		calls:    map[string]int{},
		next:     0x1000,
	}
	for r, t := range fakeErrors {
		f.errText[r] = [2][]byte{append([]byte(t[0]), 0), append([]byte(t[1]), 0)}
	}
	for i := range n {
		f.devices = append(f.devices, &fakeDevice{
			name:  fmt.Sprintf("Fake GPU %d", i),
			busID: fmt.Sprintf("00000000:%02X:00.0", 0x18+i),
			attrs: map[int32]int32{
				attrMultiprocessorCount: 132, attrCanMapHostMemory: 1, attrUnifiedAddressing: 1,
				attrVirtualMemoryManagement: 1, attrHandleTypePosixFD: 1, attrMulticastSupported: 1,
			},
		})
	}
	d := &driver{loading: LoadingEager}
	f.bind(d)
	return d, f
}

// enter counts a call of the entry point name and returns the result
// injected for it (cuSuccess when none). It runs with f.mu held.
func (f *fakeDriver) enter(name string) cuResult {
	f.calls[name]++
	return f.fail[name]
}

// handle gives out a new handle.
func (f *fakeDriver) handle() uintptr {
	f.next += 0x10
	return f.next
}

// inContext reports whether a context is current and retained.
func (f *fakeDriver) inContext() bool {
	if f.current == 0 {
		return false
	}
	return f.devices[f.current>>56-1].retains > 0
}

// ctxOf is the primary context of device dev.
func ctxOf(dev int32) uintptr { return uintptr(dev+1) << 56 }

// device returns the fake device of ordinal dev, or nil.
func (f *fakeDriver) device(dev int32) *fakeDevice {
	if dev < 0 || int(dev) >= len(f.devices) {
		return nil
	}
	return f.devices[dev]
}

// mem returns the n bytes at device address p, in a mapping with access
// or in mapped host memory, or nil. It runs with f.mu held.
func (f *fakeDriver) mem(p, n uint64) []byte {
	for start, m := range f.mappings {
		if m.access && p >= start && p-start+n <= m.size {
			return m.mem.b[p-start : p-start+n]
		}
	}
	for _, h := range f.host {
		size := uint64(len(h.words)) * 8
		if p >= h.dev && p-h.dev+n <= size {
			b := unsafe.Slice((*byte)(unsafe.Pointer(&h.words[0])), size)
			return b[p-h.dev : p-h.dev+n]
		}
	}
	return nil
}

// record writes an error record, as a kernel of launch l gives up with
// the members given (see errorRecordBytes; launch defaults to l's), into
// the record l's header names. It runs with f.mu held (from the kernel hook).
func (f *fakeDriver) record(t *testing.T, l fakeLaunch, members map[string]uint64) {
	t.Helper()
	b := f.mem(l.header.ErrorRecord, cabi.ErrorRecordSize)
	if b == nil {
		t.Fatalf("launch %+v: its header's error record %#x is not mapped", l, l.header.ErrorRecord)
	}
	if _, ok := members["launch"]; !ok {
		members["launch"] = uint64(l.header.Launch)
	}
	copy(b, errorRecordBytes(t, members))
}

// live counts what the driver still holds for the device objects: every
// count must be 0 once they all closed.
func (f *fakeDriver) live() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	retains := 0
	for _, d := range f.devices {
		retains += d.retains
	}
	return map[string]int{
		"allocations": len(f.allocs), "ranges": len(f.ranges), "mappings": len(f.mappings),
		"host allocations": len(f.host), "streams": len(f.streams), "events": len(f.events),
		"graphs": len(f.graphs), "graph execs": len(f.execs), "modules": len(f.modules),
		"context retains": retains,
	}
}

// checkReleased fails t for everything the driver still holds.
func (f *fakeDriver) checkReleased(t *testing.T) {
	t.Helper()
	live := f.live()
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range live {
			if !yield(k) {
				return
			}
		}
	})
	for _, k := range names {
		if live[k] != 0 {
			t.Errorf("the driver still holds %d %s", live[k], k)
		}
	}
}

// count is how many times entry point name was called.
func (f *fakeDriver) count(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[name]
}

// inject makes entry point name answer r (cuSuccess: normally again).
func (f *fakeDriver) inject(name string, r cuResult) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r == cuSuccess {
		delete(f.fail, name)
		return
	}
	f.fail[name] = r
}

// argSize is the size of the argument struct of CUDA entry point entry.
func argSize(entry string) int {
	kernel := entry
	for _, e := range cabi.SpecialEntries() {
		if e.Name == entry {
			kernel = e.Kernel
		}
	}
	k, ok := kernels.Lookup(kernel)
	if !ok {
		return 0
	}
	for _, s := range cabi.Structs() {
		if s.Go == k.ArgType() {
			return s.Size
		}
	}
	return 0
}

// headerOffset is the offset of a member of the ABI's LaunchHeader.
func headerOffset(member string) int {
	for _, s := range cabi.Structs() {
		if s.Name == "LaunchHeader" {
			return s.Offset(member)
		}
	}
	panic("the ABI has no LaunchHeader")
}

// bind points every entry point of d at f.
func (f *fakeDriver) bind(d *driver) {
	lock := func() func() { f.mu.Lock(); return f.mu.Unlock }
	// ctx wraps an entry point that needs a current context.
	ctx := func(name string, fn func() cuResult) cuResult {
		defer lock()()
		if r := f.enter(name); r != cuSuccess {
			return r
		}
		if !f.inContext() {
			return errInvalidContext
		}
		return fn()
	}
	// stream runs op on stream s, or records it while s captures.
	stream := func(s uintptr, op func() cuResult) cuResult {
		st := f.streams[s]
		if st == nil {
			return errInvalidHandle
		}
		if st.capturing != nil {
			st.capturing.ops = append(st.capturing.ops, op)
			return cuSuccess
		}
		return op()
	}

	d.cuInit = func(uint32) cuResult { defer lock()(); return f.enter("cuInit") }
	d.cuDriverGetVersion = func(v *int32) cuResult {
		defer lock()()
		*v = 12040
		return f.enter("cuDriverGetVersion")
	}
	d.cuGetErrorName = func(r cuResult, s **byte) cuResult {
		t, ok := f.errText[r]
		if !ok {
			return errInvalidValue
		}
		*s = &t[0][0]
		return cuSuccess
	}
	d.cuGetErrorString = func(r cuResult, s **byte) cuResult {
		t, ok := f.errText[r]
		if !ok {
			return errInvalidValue
		}
		*s = &t[1][0]
		return cuSuccess
	}
	d.cuDeviceGetCount = func(n *int32) cuResult {
		defer lock()()
		if r := f.enter("cuDeviceGetCount"); r != cuSuccess {
			return r
		}
		*n = int32(len(f.devices))
		return cuSuccess
	}
	d.cuDeviceGet = func(dev *int32, ordinal int32) cuResult {
		defer lock()()
		if r := f.enter("cuDeviceGet"); r != cuSuccess {
			return r
		}
		if f.device(ordinal) == nil {
			return errInvalidDevice
		}
		*dev = ordinal
		return cuSuccess
	}
	d.cuDeviceGetAttribute = func(v *int32, attr int32, dev int32) cuResult {
		defer lock()()
		if r := f.enter("cuDeviceGetAttribute"); r != cuSuccess {
			return r
		}
		fd := f.device(dev)
		if fd == nil {
			return errInvalidDevice
		}
		a, ok := fd.attrs[attr]
		if !ok {
			return errInvalidValue
		}
		*v = a
		return cuSuccess
	}
	cstr := func(name string, s func(*fakeDevice) string) func(*byte, int32, int32) cuResult {
		return func(p *byte, n int32, dev int32) cuResult {
			defer lock()()
			if r := f.enter(name); r != cuSuccess {
				return r
			}
			fd := f.device(dev)
			if fd == nil {
				return errInvalidDevice
			}
			v := s(fd)
			if len(v)+1 > int(n) {
				return errInvalidValue
			}
			b := unsafe.Slice(p, n)
			copy(b, v)
			b[len(v)] = 0
			return cuSuccess
		}
	}
	d.cuDeviceGetName = cstr("cuDeviceGetName", func(d *fakeDevice) string { return d.name })
	d.cuDeviceGetPCIBusId = cstr("cuDeviceGetPCIBusId", func(d *fakeDevice) string { return d.busID })
	d.cuDevicePrimaryCtxRetain = func(c *uintptr, dev int32) cuResult {
		defer lock()()
		if r := f.enter("cuDevicePrimaryCtxRetain"); r != cuSuccess {
			return r
		}
		fd := f.device(dev)
		if fd == nil {
			return errInvalidDevice
		}
		fd.retains++
		*c = ctxOf(dev)
		return cuSuccess
	}
	d.cuDevicePrimaryCtxRelease = func(dev int32) cuResult {
		defer lock()()
		if r := f.enter("cuDevicePrimaryCtxRelease_v2"); r != cuSuccess {
			return r
		}
		fd := f.device(dev)
		if fd == nil || fd.retains == 0 {
			return errInvalidContext
		}
		fd.retains--
		return cuSuccess
	}
	d.ctxSetCurrent = func(c uintptr) cuResult {
		defer lock()()
		if r := f.enter("cuCtxSetCurrent"); r != cuSuccess {
			return r
		}
		dev := f.device(int32(c>>56) - 1)
		if c&(1<<56-1) != 0 || dev == nil || dev.retains == 0 {
			return errInvalidContext
		}
		f.current = c
		return cuSuccess
	}
	d.cuMemGetInfo = func(free, total *uint64) cuResult {
		return ctx("cuMemGetInfo_v2", func() cuResult {
			*free, *total = f.free, 80<<30
			return cuSuccess
		})
	}
	d.cuMemGetAllocationGranularity = func(g *uint64, prop *[4]uint64, option int32) cuResult {
		return ctx("cuMemGetAllocationGranularity", func() cuResult {
			b := wordBytes(prop[:])
			le := binary.LittleEndian
			if le.Uint32(b[0:]) != memAllocationTypePinned || le.Uint32(b[4:]) != memHandleTypePosixFD ||
				le.Uint32(b[8:]) != memLocationTypeDevice || f.device(int32(le.Uint32(b[12:]))) == nil ||
				option != granularityRecommended {
				return errInvalidValue
			}
			*g = f.gran
			return cuSuccess
		})
	}
	d.cuMemCreate = func(h *uint64, size uint64, prop *[4]uint64, flags uint64) cuResult {
		return ctx("cuMemCreate", func() cuResult {
			if size == 0 || size%f.gran != 0 || flags != 0 {
				return errInvalidValue
			}
			id := uint64(f.handle())
			f.allocs[id] = &fakeMemory{b: make([]byte, size)}
			*h = id
			return cuSuccess
		})
	}
	d.cuMemRelease = func(h uint64) cuResult {
		return ctx("cuMemRelease", func() cuResult {
			if f.allocs[h] == nil {
				return errInvalidValue
			}
			delete(f.allocs, h)
			return cuSuccess
		})
	}
	d.cuMemExportToShareableHandle = func(out *int32, h uint64, handleType int32, flags uint64) cuResult {
		return ctx("cuMemExportToShareableHandle", func() cuResult {
			m := f.allocs[h]
			if m == nil || handleType != memHandleTypePosixFD {
				return errInvalidValue
			}
			fd, err := syscall.Open("/dev/null", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
			if err != nil {
				return errOutOfMemory
			}
			f.fds[int32(fd)] = m
			*out = int32(fd)
			return cuSuccess
		})
	}
	d.cuMemImportFromShareableHandle = func(h *uint64, osHandle uintptr, handleType int32) cuResult {
		return ctx("cuMemImportFromShareableHandle", func() cuResult {
			m := f.fds[int32(osHandle)]
			if m == nil || handleType != memHandleTypePosixFD {
				return errInvalidValue
			}
			id := uint64(f.handle())
			f.allocs[id] = m
			*h = id
			return cuSuccess
		})
	}
	d.cuMemAddressReserve = func(p *uint64, size, align, addr, flags uint64) cuResult {
		return ctx("cuMemAddressReserve", func() cuResult {
			if size == 0 || align == 0 || size%f.gran != 0 || addr != 0 || flags != 0 {
				return errInvalidValue
			}
			start := (f.nextVA + align - 1) / align * align
			f.nextVA = start + size + f.gran // a gap between ranges
			f.ranges[start] = size
			*p = start
			return cuSuccess
		})
	}
	d.cuMemAddressFree = func(p, size uint64) cuResult {
		return ctx("cuMemAddressFree", func() cuResult {
			if f.ranges[p] != size || size == 0 {
				return errInvalidValue
			}
			for start := range f.mappings {
				if start >= p && start < p+size {
					return errInvalidValue // still mapped
				}
			}
			delete(f.ranges, p)
			return cuSuccess
		})
	}
	d.cuMemMap = func(p, size, offset, h, flags uint64) cuResult {
		return ctx("cuMemMap", func() cuResult {
			m := f.allocs[h]
			if m == nil || offset != 0 || flags != 0 || size > uint64(len(m.b)) {
				return errInvalidValue
			}
			f.mappings[p] = &fakeMapping{mem: m, size: size}
			return cuSuccess
		})
	}
	d.cuMemUnmap = func(p, size uint64) cuResult {
		return ctx("cuMemUnmap", func() cuResult {
			if m := f.mappings[p]; m == nil || m.size != size {
				return errInvalidValue
			}
			delete(f.mappings, p)
			return cuSuccess
		})
	}
	d.cuMemSetAccess = func(p, size uint64, desc *[2]uint64, count uint64) cuResult {
		return ctx("cuMemSetAccess", func() cuResult {
			b := wordBytes(desc[:])
			le := binary.LittleEndian
			if count != 1 || le.Uint32(b[0:]) != memLocationTypeDevice || f.device(int32(le.Uint32(b[4:]))) == nil ||
				le.Uint32(b[8:]) != memAccessFlagsProtReadWrite {
				return errInvalidValue
			}
			m := f.mappings[p]
			if m == nil || m.size != size {
				return errInvalidValue
			}
			m.access = true
			return cuSuccess
		})
	}
	d.cuMemsetD8Async = func(dst uint64, v uint8, n uint64, s uintptr) cuResult {
		return ctx("cuMemsetD8Async", func() cuResult {
			return stream(s, func() cuResult {
				b := f.mem(dst, n)
				if b == nil {
					return errIllegalAddress
				}
				for i := range b {
					b[i] = v
				}
				return cuSuccess
			})
		})
	}
	d.cuMemcpyAsync = func(dst, src, n uint64, s uintptr) cuResult {
		return ctx("cuMemcpyAsync", func() cuResult {
			return stream(s, func() cuResult {
				to, from := f.mem(dst, n), f.mem(src, n)
				if to == nil || from == nil {
					return errIllegalAddress
				}
				copy(to, from)
				return cuSuccess
			})
		})
	}
	d.cuMemcpyHtoDAsync = func(dst uint64, src unsafe.Pointer, n uint64, s uintptr) cuResult {
		return ctx("cuMemcpyHtoDAsync_v2", func() cuResult {
			return stream(s, func() cuResult {
				to := f.mem(dst, n)
				if to == nil {
					return errIllegalAddress
				}
				copy(to, unsafe.Slice((*byte)(src), n))
				return cuSuccess
			})
		})
	}
	d.cuMemcpyDtoHAsync = func(dst unsafe.Pointer, src, n uint64, s uintptr) cuResult {
		return ctx("cuMemcpyDtoHAsync_v2", func() cuResult {
			return stream(s, func() cuResult {
				from := f.mem(src, n)
				if from == nil {
					return errIllegalAddress
				}
				copy(unsafe.Slice((*byte)(dst), n), from)
				return cuSuccess
			})
		})
	}
	d.cuMemHostAlloc = func(p *unsafe.Pointer, size uint64, flags uint32) cuResult {
		return ctx("cuMemHostAlloc", func() cuResult {
			if size == 0 || flags != memHostAllocPortable|memHostAllocDeviceMap {
				return errInvalidValue
			}
			h := &fakeHost{words: make([]uint64, (size+7)/8), dev: f.nextVA}
			f.nextVA += (size + 4095) / 4096 * 4096
			for i := range h.words {
				h.words[i] = ^uint64(0) // what a new allocation held before
			}
			*p = unsafe.Pointer(&h.words[0])
			f.host[*p] = h
			return cuSuccess
		})
	}
	d.cuMemHostGetDevicePointer = func(dp *uint64, p unsafe.Pointer, flags uint32) cuResult {
		return ctx("cuMemHostGetDevicePointer_v2", func() cuResult {
			h := f.host[p]
			if h == nil || flags != 0 {
				return errInvalidValue
			}
			*dp = h.dev
			return cuSuccess
		})
	}
	d.cuMemFreeHost = func(p unsafe.Pointer) cuResult {
		return ctx("cuMemFreeHost", func() cuResult {
			if f.host[p] == nil {
				return errInvalidValue
			}
			delete(f.host, p)
			return cuSuccess
		})
	}
	d.cuStreamCreate = func(s *uintptr, flags uint32) cuResult {
		return ctx("cuStreamCreate", func() cuResult {
			if flags != streamNonBlocking {
				return errInvalidValue
			}
			*s = f.handle()
			f.streams[*s] = &fakeStream{}
			return cuSuccess
		})
	}
	d.cuStreamDestroy = func(s uintptr) cuResult {
		return ctx("cuStreamDestroy_v2", func() cuResult {
			if f.streams[s] == nil {
				return errInvalidHandle
			}
			delete(f.streams, s)
			return cuSuccess
		})
	}
	d.cuStreamSynchronize = func(s uintptr) cuResult {
		return ctx("cuStreamSynchronize", func() cuResult {
			st := f.streams[s]
			if st == nil {
				return errInvalidHandle
			}
			st.notReady = 0
			return cuSuccess
		})
	}
	d.cuStreamQuery = func(s uintptr) cuResult {
		return ctx("cuStreamQuery", func() cuResult {
			st := f.streams[s]
			if st == nil {
				return errInvalidHandle
			}
			if st.notReady > 0 {
				st.notReady--
				return errorNotReady
			}
			return cuSuccess
		})
	}
	d.cuStreamBeginCapture = func(s uintptr, mode int32) cuResult {
		return ctx("cuStreamBeginCapture_v2", func() cuResult {
			st := f.streams[s]
			if st == nil || st.capturing != nil || mode != captureModeRelaxed {
				return errInvalidValue
			}
			st.capturing = &fakeGraph{}
			return cuSuccess
		})
	}
	d.cuStreamEndCapture = func(s uintptr, g *uintptr) cuResult {
		return ctx("cuStreamEndCapture", func() cuResult {
			st := f.streams[s]
			if st == nil || st.capturing == nil {
				return errInvalidValue
			}
			*g = f.handle()
			f.graphs[*g] = st.capturing
			st.capturing = nil
			return cuSuccess
		})
	}
	d.cuGraphInstantiateWithFlags = func(exec *uintptr, g uintptr, flags uint64) cuResult {
		return ctx("cuGraphInstantiateWithFlags", func() cuResult {
			gr := f.graphs[g]
			if gr == nil || flags != 0 {
				return errInvalidValue
			}
			*exec = f.handle()
			f.execs[*exec] = gr
			return cuSuccess
		})
	}
	d.cuGraphLaunch = func(exec uintptr, s uintptr) cuResult {
		return ctx("cuGraphLaunch", func() cuResult {
			gr := f.execs[exec]
			if gr == nil {
				return errInvalidHandle
			}
			return stream(s, func() cuResult {
				for _, op := range gr.ops {
					if r := op(); r != cuSuccess {
						return r
					}
				}
				return cuSuccess
			})
		})
	}
	d.cuGraphExecDestroy = func(exec uintptr) cuResult {
		return ctx("cuGraphExecDestroy", func() cuResult {
			if f.execs[exec] == nil {
				return errInvalidHandle
			}
			delete(f.execs, exec)
			return cuSuccess
		})
	}
	d.cuGraphDestroy = func(g uintptr) cuResult {
		return ctx("cuGraphDestroy", func() cuResult {
			if f.graphs[g] == nil {
				return errInvalidHandle
			}
			delete(f.graphs, g)
			return cuSuccess
		})
	}
	d.cuEventCreate = func(e *uintptr, flags uint32) cuResult {
		return ctx("cuEventCreate", func() cuResult {
			if flags != eventDefault {
				return errInvalidValue
			}
			*e = f.handle()
			f.events[*e] = &fakeEvent{}
			return cuSuccess
		})
	}
	d.cuEventRecord = func(e uintptr, s uintptr) cuResult {
		return ctx("cuEventRecord", func() cuResult {
			ev := f.events[e]
			if ev == nil || f.streams[s] == nil {
				return errInvalidHandle
			}
			ev.recorded, ev.at = true, f.clock
			f.clock += 1.25
			return cuSuccess
		})
	}
	d.cuEventSynchronize = func(e uintptr) cuResult {
		return ctx("cuEventSynchronize", func() cuResult {
			if f.events[e] == nil {
				return errInvalidHandle
			}
			return cuSuccess
		})
	}
	d.cuEventQuery = func(e uintptr) cuResult {
		return ctx("cuEventQuery", func() cuResult {
			ev := f.events[e]
			if ev == nil {
				return errInvalidHandle
			}
			if ev.notReady > 0 {
				ev.notReady--
				return errorNotReady
			}
			return cuSuccess
		})
	}
	d.cuEventElapsedTime = func(ms *float32, start, end uintptr) cuResult {
		return ctx("cuEventElapsedTime", func() cuResult {
			a, b := f.events[start], f.events[end]
			if a == nil || b == nil || !a.recorded || !b.recorded {
				return errInvalidHandle
			}
			*ms = b.at - a.at
			return cuSuccess
		})
	}
	d.cuEventDestroy = func(e uintptr) cuResult {
		return ctx("cuEventDestroy_v2", func() cuResult {
			if f.events[e] == nil {
				return errInvalidHandle
			}
			delete(f.events, e)
			return cuSuccess
		})
	}
	d.cuModuleLoadData = func(m *uintptr, image unsafe.Pointer) cuResult {
		return ctx("cuModuleLoadData", func() cuResult {
			prefix := slices.Clone(unsafe.Slice((*byte)(image), 8))
			if string(prefix[:3]) == "bad" {
				return errInvalidImage
			}
			*m = f.handle()
			f.modules[*m] = prefix
			return cuSuccess
		})
	}
	d.cuModuleUnload = func(m uintptr) cuResult {
		return ctx("cuModuleUnload", func() cuResult {
			if f.modules[m] == nil {
				return errInvalidHandle
			}
			delete(f.modules, m)
			return cuSuccess
		})
	}
	d.cuModuleGetFunction = func(fn *uintptr, m uintptr, name string) cuResult {
		return ctx("cuModuleGetFunction", func() cuResult {
			if f.modules[m] == nil {
				return errInvalidHandle
			}
			if f.missing[name] || argSize(name) == 0 {
				return errNotFound
			}
			*fn = f.handle()
			f.funcs[*fn] = name
			return cuSuccess
		})
	}
	d.launchKernel = func(fn uintptr, blocks, threads uint32, s uintptr, params *unsafe.Pointer) cuResult {
		return ctx("cuLaunchKernel", func() cuResult {
			entry, ok := f.funcs[fn]
			if !ok {
				return errInvalidHandle
			}
			// The driver copies the arguments during the call.
			args := slices.Clone(unsafe.Slice((*byte)(*params), argSize(entry)))
			l := fakeLaunch{entry: entry, blocks: blocks, threads: threads, stream: s, args: args,
				header: cabi.LaunchHeader{
					ErrorRecord: binary.LittleEndian.Uint64(args[headerOffset("err"):]),
					Launch:      binary.LittleEndian.Uint32(args[headerOffset("launch"):]),
				}}
			return stream(s, func() cuResult {
				f.launches = append(f.launches, l)
				if f.kernel != nil {
					f.kernel(f, l)
				}
				return cuSuccess
			})
		})
	}
}
