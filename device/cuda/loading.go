package cuda

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// LoadingMode is the driver's module loading mode (CUmoduleLoadingMode).
//
// Under lazy loading (the driver's default since CUDA 12.2) the driver
// loads code when it is first needed, and such a load waits for every
// kernel running in the context. Ranks of one process that share a GPU
// share its primary context, and their kernels spin until their peers
// arrive: a host call of one rank that loads code (its first read of a
// result, a stream destroy, a first launch) waits for a peer's kernel,
// which waits for that rank, until the kernel's timeout. The device's GPU
// tests list the calls seen to wait (TestGPUHostCallsDoNotWaitForPeerKernels).
// So the driver is initialised with eager loading ([LoadingEnv]=EAGER)
// unless the process already set [LoadingEnv], and a device that is opened
// a second time in a lazily loading process is refused.
type LoadingMode int32

// The driver's module loading modes.
const (
	LoadingEager LoadingMode = 1 // CU_MODULE_EAGER_LOADING
	LoadingLazy  LoadingMode = 2 // CU_MODULE_LAZY_LOADING
)

// LoadingEnv is the driver's environment variable for the loading mode,
// read once, when the driver is initialised.
const LoadingEnv = "CUDA_MODULE_LOADING"

func (m LoadingMode) String() string {
	switch m {
	case LoadingEager:
		return "eager"
	case LoadingLazy:
		return "lazy"
	}
	return fmt.Sprintf("LoadingMode(%d)", int32(m))
}

// Loading returns the module loading mode of the process's driver.
func Loading() (LoadingMode, error) {
	drv, err := load()
	if err != nil {
		return 0, err
	}
	return drv.loading, nil
}

// libcSetenv is the C library's setenv, bound once: the driver reads its
// variables from the C environment, which os.Setenv does not reach in a
// program built without cgo.
var libcSetenv = sync.OnceValues(func() (func(name, value string, overwrite int32) int32, error) {
	lib, err := purego.Dlopen("libc.so.6", purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, fmt.Errorf("load the C library: %v", err)
	}
	sym, err := purego.Dlsym(lib, "setenv")
	if err != nil {
		return nil, fmt.Errorf("find setenv in the C library: %v", err)
	}
	var setenv func(name, value string, overwrite int32) int32
	purego.RegisterFunc(&setenv, sym)
	return setenv, nil
})

// preferEagerLoading sets LoadingEnv to EAGER, in Go's environment and in
// the C library's, unless the process already set it: a user's explicit
// choice stands.
func preferEagerLoading() error {
	if _, set := os.LookupEnv(LoadingEnv); set {
		return nil
	}
	setenv, err := libcSetenv()
	if err != nil {
		return fmt.Errorf("ask for eager module loading: %w", err)
	}
	if setenv(LoadingEnv, "EAGER", 0) != 0 {
		return fmt.Errorf("ask for eager module loading: setenv %s failed", LoadingEnv)
	}
	return os.Setenv(LoadingEnv, "EAGER")
}

// sharing is, for each device ordinal, how many device objects of the
// process have it open (ranks that share a GPU each open it, and share its
// primary context), and the streams and pinned error records they gave
// back. Freeing pinned host memory (cuMemFreeHost) can wait for every
// kernel of the context, and while it waits the driver holds the context:
// a rank that destroyed its stream while a peer's kernel spun waiting for
// another rank kept that rank from launching until the kernel timed out.
// So streams and records go back to the pool, and are freed only when the
// last device object of the ordinal closes. It is the registry behind that
// pool and behind the refusal of shared devices under lazy loading; the
// process's driver holds it. The zero value is empty and ready to use.
type sharing struct {
	mu sync.Mutex
	by map[int]*shared
}

// shared is what the device objects of one ordinal share.
type shared struct {
	opens   int
	streams []pooledStream
	// modules are the kernel images loaded, by the SHA-256 of the image:
	// unloading a module that ran kernels may wait for the context too.
	modules map[[sha256.Size]byte]uintptr
}

// released is what the last close of an ordinal frees.
type released struct {
	streams []pooledStream
	modules []uintptr
}

// pooledStream is a stream given back, with its (cleared) error record.
type pooledStream struct {
	cu     uintptr
	rec    unsafe.Pointer
	recDev uint64
}

// add records an open of device index, refusing a second open of one
// device while the driver loads modules lazily.
func (o *sharing) add(index int, mode LoadingMode) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.by == nil {
		o.by = map[int]*shared{}
	}
	sh := o.by[index]
	if sh == nil {
		sh = &shared{}
		o.by[index] = sh
	}
	if sh.opens > 0 && mode == LoadingLazy {
		return fmt.Errorf("cuda: device %d is already open in this process and the driver loads modules lazily (%s=%s): "+
			"ranks sharing a GPU would wait for each other's kernels inside driver calls until they time out; "+
			"unset %s or set it to EAGER before the process starts", index, LoadingEnv, os.Getenv(LoadingEnv), LoadingEnv)
	}
	sh.opens++
	return nil
}

// remove records a close of device index. It returns the pooled streams
// and the modules to free when that was the last open of the device.
func (o *sharing) remove(index int) released {
	o.mu.Lock()
	defer o.mu.Unlock()
	sh := o.by[index]
	if sh == nil || sh.opens == 0 {
		return released{}
	}
	sh.opens--
	if sh.opens > 0 {
		return released{}
	}
	r := released{streams: sh.streams}
	for _, k := range slices.SortedFunc(maps.Keys(sh.modules), func(a, b [sha256.Size]byte) int { return bytes.Compare(a[:], b[:]) }) {
		r.modules = append(r.modules, sh.modules[k])
	}
	sh.streams, sh.modules = nil, nil
	return r
}

// module returns the module of image on device index, loading it with load
// if no open device object of the ordinal has.
func (o *sharing) module(index int, image []byte, load func() (uintptr, error)) (uintptr, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	sh := o.by[index]
	key := sha256.Sum256(image)
	if m, ok := sh.modules[key]; ok {
		return m, nil
	}
	m, err := load()
	if err != nil {
		return 0, err
	}
	if sh.modules == nil {
		sh.modules = map[[sha256.Size]byte]uintptr{}
	}
	sh.modules[key] = m
	return m, nil
}

// take returns a pooled stream of device index, if any.
func (o *sharing) take(index int) (pooledStream, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	sh := o.by[index]
	if sh == nil || len(sh.streams) == 0 {
		return pooledStream{}, false
	}
	p := sh.streams[len(sh.streams)-1]
	sh.streams = sh.streams[:len(sh.streams)-1]
	return p, true
}

// give pools a stream of device index whose work has completed.
func (o *sharing) give(index int, p pooledStream) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.by[index].streams = append(o.by[index].streams, p)
}
