package cuda

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// driverLibrary is the soname of the CUDA driver library.
const driverLibrary = "libcuda.so.1"

// cuResult is the driver's CUresult.
type cuResult int32

// CUDA_SUCCESS.
const cuSuccess cuResult = 0

// Enumerations of the driver API used here (values from cuda.h).
const (
	attrMultiprocessorCount              = 16  // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
	attrCanMapHostMemory                 = 19  // CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY
	attrUnifiedAddressing                = 41  // CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING
	attrComputeCapabilityMajor           = 75  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
	attrComputeCapabilityMinor           = 76  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
	attrVirtualMemoryManagement          = 102 // CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED
	attrHandleTypePosixFD                = 103 // CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED
	attrMulticastSupported               = 132 // CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED
	granularityRecommended               = 1   // CU_MEM_ALLOC_GRANULARITY_RECOMMENDED
	streamNonBlocking                    = 1   // CU_STREAM_NON_BLOCKING
	eventDefault                         = 0   // CU_EVENT_DEFAULT
	memHostAllocPortable                 = 1   // CU_MEMHOSTALLOC_PORTABLE
	memHostAllocDeviceMap                = 2   // CU_MEMHOSTALLOC_DEVICEMAP
	errorNotReady               cuResult = 600 // CUDA_ERROR_NOT_READY
)

// driver holds the entry points of the CUDA driver library. Every function
// returns a CUresult. Pointer outputs are Go pointers to plain values; the
// driver never keeps them.
type driver struct {
	// launchKernel is cuLaunchKernel for a 1-D grid with no dynamic shared
	// memory, taking the argument struct through params (one pointer);
	// ctxSetCurrent is cuCtxSetCurrent. Every collective makes these calls,
	// so open binds them to syscallLaunchKernel and syscallCtxSetCurrent,
	// which call the raw entry points below through purego.SyscallN
	// without RegisterFunc's reflection. Like the other entry points they
	// are fields, so that tests can stand Go functions in for the driver.
	launchKernel  func(f uintptr, blocks, threads uint32, stream uintptr, params *unsafe.Pointer) cuResult
	ctxSetCurrent func(ctx uintptr) cuResult

	// Raw entry points of launchKernel and ctxSetCurrent.
	launchKernelSym, ctxSetCurrentSym uintptr

	cuInit                         func(flags uint32) cuResult
	cuDriverGetVersion             func(version *int32) cuResult
	cuGetErrorName                 func(res cuResult, str **byte) cuResult
	cuGetErrorString               func(res cuResult, str **byte) cuResult
	cuDeviceGetCount               func(count *int32) cuResult
	cuDeviceGet                    func(dev *int32, ordinal int32) cuResult
	cuDeviceGetAttribute           func(v *int32, attr int32, dev int32) cuResult
	cuDeviceGetName                func(name *byte, n int32, dev int32) cuResult
	cuDeviceGetPCIBusId            func(id *byte, n int32, dev int32) cuResult
	cuDevicePrimaryCtxRetain       func(ctx *uintptr, dev int32) cuResult
	cuDevicePrimaryCtxRelease      func(dev int32) cuResult
	cuMemGetInfo                   func(free, total *uint64) cuResult
	cuMemGetAllocationGranularity  func(gran *uint64, prop *[4]uint64, option int32) cuResult
	cuMemCreate                    func(h *uint64, size uint64, prop *[4]uint64, flags uint64) cuResult
	cuMemRelease                   func(h uint64) cuResult
	cuMemExportToShareableHandle   func(out *int32, h uint64, handleType int32, flags uint64) cuResult
	cuMemImportFromShareableHandle func(h *uint64, osHandle uintptr, handleType int32) cuResult
	cuMemAddressReserve            func(p *uint64, size, align, addr uint64, flags uint64) cuResult
	cuMemAddressFree               func(p uint64, size uint64) cuResult
	cuMemMap                       func(p uint64, size, offset uint64, h uint64, flags uint64) cuResult
	cuMemUnmap                     func(p uint64, size uint64) cuResult
	cuMemSetAccess                 func(p uint64, size uint64, desc *[2]uint64, count uint64) cuResult
	cuMemsetD8Async                func(dst uint64, value uint8, n uint64, stream uintptr) cuResult
	cuMemcpyAsync                  func(dst, src uint64, n uint64, stream uintptr) cuResult
	cuMemcpyHtoDAsync              func(dst uint64, src unsafe.Pointer, n uint64, stream uintptr) cuResult
	cuMemcpyDtoHAsync              func(dst unsafe.Pointer, src uint64, n uint64, stream uintptr) cuResult
	cuMemHostAlloc                 func(p *unsafe.Pointer, size uint64, flags uint32) cuResult
	cuMemHostGetDevicePointer      func(d *uint64, p unsafe.Pointer, flags uint32) cuResult
	cuMemFreeHost                  func(p unsafe.Pointer) cuResult
	cuStreamCreate                 func(s *uintptr, flags uint32) cuResult
	cuStreamDestroy                func(s uintptr) cuResult
	cuStreamSynchronize            func(s uintptr) cuResult
	cuStreamQuery                  func(s uintptr) cuResult
	cuStreamBeginCapture           func(s uintptr, mode int32) cuResult
	cuStreamEndCapture             func(s uintptr, g *uintptr) cuResult
	cuGraphInstantiateWithFlags    func(exec *uintptr, g uintptr, flags uint64) cuResult
	cuGraphLaunch                  func(exec uintptr, s uintptr) cuResult
	cuGraphExecDestroy             func(exec uintptr) cuResult
	cuGraphDestroy                 func(g uintptr) cuResult
	cuEventCreate                  func(e *uintptr, flags uint32) cuResult
	cuEventRecord                  func(e uintptr, s uintptr) cuResult
	cuEventSynchronize             func(e uintptr) cuResult
	cuEventQuery                   func(e uintptr) cuResult
	cuEventElapsedTime             func(ms *float32, start, end uintptr) cuResult
	cuEventDestroy                 func(e uintptr) cuResult
	cuModuleLoadData               func(m *uintptr, image unsafe.Pointer) cuResult
	cuModuleUnload                 func(m uintptr) cuResult
	cuModuleGetFunction            func(f *uintptr, m uintptr, name string) cuResult
	// cuModuleGetLoadingMode is nil when the driver lacks it (before
	// CUDA 11.7, which loads every module eagerly).
	cuModuleGetLoadingMode func(mode *int32) cuResult

	// loading is the module loading mode the driver runs in.
	loading LoadingMode
	// opens is the registry of the devices opened through the driver (one
	// driver serves the whole process).
	opens sharing
}

// symbol is an entry point and the exported symbols it may bind to, the
// preferred first.
type symbol struct {
	fn    any      // *func bound with purego.RegisterFunc, or
	raw   *uintptr // the bare address, for calls made with purego.SyscallN
	names []string
}

// symbols lists each entry point with the exported symbol it binds to. The
// header maps several names to versioned symbols; the versioned names are
// bound directly.
func (d *driver) symbols() []symbol {
	return []symbol{
		{fn: &d.cuInit, names: []string{"cuInit"}},
		{fn: &d.cuDriverGetVersion, names: []string{"cuDriverGetVersion"}},
		{fn: &d.cuGetErrorName, names: []string{"cuGetErrorName"}},
		{fn: &d.cuGetErrorString, names: []string{"cuGetErrorString"}},
		{fn: &d.cuDeviceGetCount, names: []string{"cuDeviceGetCount"}},
		{fn: &d.cuDeviceGet, names: []string{"cuDeviceGet"}},
		{fn: &d.cuDeviceGetAttribute, names: []string{"cuDeviceGetAttribute"}},
		{fn: &d.cuDeviceGetName, names: []string{"cuDeviceGetName"}},
		{fn: &d.cuDeviceGetPCIBusId, names: []string{"cuDeviceGetPCIBusId"}},
		{fn: &d.cuDevicePrimaryCtxRetain, names: []string{"cuDevicePrimaryCtxRetain"}},
		{fn: &d.cuDevicePrimaryCtxRelease, names: []string{"cuDevicePrimaryCtxRelease_v2"}},
		{raw: &d.ctxSetCurrentSym, names: []string{"cuCtxSetCurrent"}},
		{fn: &d.cuMemGetInfo, names: []string{"cuMemGetInfo_v2"}},
		{fn: &d.cuMemGetAllocationGranularity, names: []string{"cuMemGetAllocationGranularity"}},
		{fn: &d.cuMemCreate, names: []string{"cuMemCreate"}},
		{fn: &d.cuMemRelease, names: []string{"cuMemRelease"}},
		{fn: &d.cuMemExportToShareableHandle, names: []string{"cuMemExportToShareableHandle"}},
		{fn: &d.cuMemImportFromShareableHandle, names: []string{"cuMemImportFromShareableHandle"}},
		{fn: &d.cuMemAddressReserve, names: []string{"cuMemAddressReserve"}},
		{fn: &d.cuMemAddressFree, names: []string{"cuMemAddressFree"}},
		{fn: &d.cuMemMap, names: []string{"cuMemMap"}},
		{fn: &d.cuMemUnmap, names: []string{"cuMemUnmap"}},
		{fn: &d.cuMemSetAccess, names: []string{"cuMemSetAccess"}},
		{fn: &d.cuMemsetD8Async, names: []string{"cuMemsetD8Async"}},
		{fn: &d.cuMemcpyAsync, names: []string{"cuMemcpyAsync"}},
		{fn: &d.cuMemcpyHtoDAsync, names: []string{"cuMemcpyHtoDAsync_v2"}},
		{fn: &d.cuMemcpyDtoHAsync, names: []string{"cuMemcpyDtoHAsync_v2"}},
		{fn: &d.cuMemHostAlloc, names: []string{"cuMemHostAlloc"}},
		{fn: &d.cuMemHostGetDevicePointer, names: []string{"cuMemHostGetDevicePointer_v2"}},
		{fn: &d.cuMemFreeHost, names: []string{"cuMemFreeHost"}},
		{fn: &d.cuStreamCreate, names: []string{"cuStreamCreate"}},
		{fn: &d.cuStreamDestroy, names: []string{"cuStreamDestroy_v2"}},
		{fn: &d.cuStreamSynchronize, names: []string{"cuStreamSynchronize"}},
		{fn: &d.cuStreamQuery, names: []string{"cuStreamQuery"}},
		{fn: &d.cuStreamBeginCapture, names: []string{"cuStreamBeginCapture_v2"}},
		{fn: &d.cuStreamEndCapture, names: []string{"cuStreamEndCapture"}},
		{fn: &d.cuGraphInstantiateWithFlags, names: []string{"cuGraphInstantiateWithFlags"}},
		{fn: &d.cuGraphLaunch, names: []string{"cuGraphLaunch"}},
		{fn: &d.cuGraphExecDestroy, names: []string{"cuGraphExecDestroy"}},
		{fn: &d.cuGraphDestroy, names: []string{"cuGraphDestroy"}},
		{fn: &d.cuEventCreate, names: []string{"cuEventCreate"}},
		{fn: &d.cuEventRecord, names: []string{"cuEventRecord"}},
		{fn: &d.cuEventSynchronize, names: []string{"cuEventSynchronize"}},
		{fn: &d.cuEventQuery, names: []string{"cuEventQuery"}},
		{fn: &d.cuEventElapsedTime, names: []string{"cuEventElapsedTime_v2", "cuEventElapsedTime"}},
		{fn: &d.cuEventDestroy, names: []string{"cuEventDestroy_v2"}},
		{fn: &d.cuModuleLoadData, names: []string{"cuModuleLoadData"}},
		{fn: &d.cuModuleUnload, names: []string{"cuModuleUnload"}},
		{fn: &d.cuModuleGetFunction, names: []string{"cuModuleGetFunction"}},
		{raw: &d.launchKernelSym, names: []string{"cuLaunchKernel"}},
	}
}

// ErrNoDriver is returned (wrapped) when the CUDA driver library cannot be
// loaded, for example on a machine without an NVIDIA GPU.
var ErrNoDriver = errors.New("no CUDA driver found (" + driverLibrary + ")")

var (
	loadOnce  sync.Once
	loaded    *driver
	loadError error
)

// load opens the driver library and initialises it once per process.
func load() (*driver, error) {
	loadOnce.Do(func() {
		loaded, loadError = open(driverLibrary)
	})
	return loaded, loadError
}

// open binds every entry point of the library at path, asks for eager
// module loading (see [LoadingMode]) and calls cuInit.
func open(path string) (*driver, error) {
	lib, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, fmt.Errorf("cuda: %w: %v", ErrNoDriver, err)
	}
	if err := preferEagerLoading(); err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	d := &driver{}
	for _, s := range d.symbols() {
		var sym uintptr
		for _, name := range s.names {
			if sym, err = purego.Dlsym(lib, name); err == nil {
				break
			}
		}
		if err != nil {
			return nil, fmt.Errorf("cuda: driver library %s lacks %s (driver too old?): %v", path, s.names[0], err)
		}
		if s.raw != nil {
			*s.raw = sym
		} else {
			purego.RegisterFunc(s.fn, sym)
		}
	}
	d.launchKernel, d.ctxSetCurrent = d.syscallLaunchKernel, d.syscallCtxSetCurrent
	if sym, err := purego.Dlsym(lib, "cuModuleGetLoadingMode"); err == nil {
		purego.RegisterFunc(&d.cuModuleGetLoadingMode, sym)
	}
	if err := d.check("cuInit", d.cuInit(0)); err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	d.loading = LoadingEager
	if d.cuModuleGetLoadingMode != nil {
		var mode int32
		if err := d.check("cuModuleGetLoadingMode", d.cuModuleGetLoadingMode(&mode)); err != nil {
			return nil, fmt.Errorf("cuda: %w", err)
		}
		d.loading = LoadingMode(mode)
	}
	return d, nil
}

// syscallLaunchKernel calls cuLaunchKernel (see launchKernel).
func (d *driver) syscallLaunchKernel(f uintptr, blocks, threads uint32, stream uintptr, params *unsafe.Pointer) cuResult {
	r, _, _ := purego.SyscallN(d.launchKernelSym, f, uintptr(blocks), 1, 1, uintptr(threads), 1, 1, 0, stream,
		uintptr(unsafe.Pointer(params)), 0)
	runtime.KeepAlive(params)
	return cuResult(r)
}

// syscallCtxSetCurrent calls cuCtxSetCurrent.
func (d *driver) syscallCtxSetCurrent(ctx uintptr) cuResult {
	r, _, _ := purego.SyscallN(d.ctxSetCurrentSym, ctx)
	return cuResult(r)
}

// DriverError is a failed driver call: the entry point and the driver's
// name and description of the result code.
type DriverError struct {
	Call   string // entry point, such as "cuMemCreate"
	Code   int    // CUresult
	Name   string // such as "CUDA_ERROR_OUT_OF_MEMORY"
	String string // such as "out of memory"
}

func (e *DriverError) Error() string {
	return fmt.Sprintf("%s: %s (%s)", e.Call, e.Name, e.String)
}

// check turns a CUresult into nil or a *DriverError for call.
func (d *driver) check(call string, r cuResult) error {
	if r == cuSuccess {
		return nil
	}
	e := &DriverError{Call: call, Code: int(r), Name: fmt.Sprintf("CUDA_ERROR_%d", int(r)), String: "unknown error"}
	var p *byte
	if d.cuGetErrorName(r, &p) == cuSuccess && p != nil {
		e.Name = goString(p)
	}
	p = nil
	if d.cuGetErrorString(r, &p) == cuSuccess && p != nil {
		e.String = goString(p)
	}
	return e
}

// goString copies a NUL-terminated C string owned by the driver.
func goString(p *byte) string {
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

// cString returns the bytes of buf before its first NUL.
func cString(buf []byte) string {
	for i, b := range buf {
		if b == 0 {
			return string(buf[:i])
		}
	}
	return string(buf)
}
