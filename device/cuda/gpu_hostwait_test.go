package cuda

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
)

// hostCall is a host call of the CUDA device made by one rank while a
// peer's kernel on the same GPU spins waiting for that rank.
type hostCall struct {
	name string // the device call and the driver entry points it makes
	call func(w *world, scratch device.Ptr) error
}

// driverCall reports whether c calls the driver directly rather than
// through the device: what such a call does is the driver's, logged for
// the record; the device's own calls must not wait.
func (c hostCall) driverCall() bool { return strings.HasPrefix(c.name, "cu") }

// hostCalls are the calls a rank makes between two collectives, each the
// first of its kind on its device object where that matters to the driver.
func hostCalls(t *testing.T) []hostCall {
	buf := make([]byte, 4096)
	var pinned unsafe.Pointer
	var rawStream, rawModule uintptr
	var spare device.Stream
	var graphStream device.Stream
	return []hostCall{
		{"Read (cuMemcpyDtoHAsync)", func(w *world, p device.Ptr) error { return w.dev(1).Read(w.stream(1), buf, p) }},
		{"Write (cuMemcpyHtoDAsync)", func(w *world, p device.Ptr) error { return w.dev(1).Write(w.stream(1), p, buf) }},
		{"Memset (cuMemsetD8Async)", func(w *world, p device.Ptr) error {
			if err := w.dev(1).Memset(w.stream(1), p, 1, 4096); err != nil {
				return err
			}
			return w.dev(1).Synchronize(w.stream(1))
		}},
		{"Copy (cuMemcpyAsync)", func(w *world, p device.Ptr) error {
			if err := w.dev(1).Copy(w.stream(1), p.Add(4096), p, 4096); err != nil {
				return err
			}
			return w.dev(1).Synchronize(w.stream(1))
		}},
		{"NewStream (cuStreamCreate, cuMemHostAlloc)", func(w *world, _ device.Ptr) error {
			var err error
			spare, err = w.dev(1).NewStream()
			return err
		}},
		{"DestroyStream (cuStreamDestroy, cuMemFreeHost)", func(w *world, _ device.Ptr) error { return w.dev(1).DestroyStream(spare) }},
		{"Launch of a kernel not launched before (cuLaunchKernel)", func(w *world, _ device.Ptr) error {
			w.launch(1, kernels.PutSignal, 1, 1, w.signal(1, 1, 5, 2*time.Second))
			w.launch(1, kernels.WaitSignal, 1, 1, w.signal(1, 1, 5, 2*time.Second))
			return w.dev(1).Synchronize(w.stream(1))
		}},
		{"events (cuEventCreate, cuEventRecord, cuEventDestroy)", func(w *world, _ device.Ptr) error {
			e, err := w.dev(1).NewEvent()
			if err != nil {
				return err
			}
			if err := w.dev(1).RecordEvent(e, w.stream(1)); err != nil {
				return err
			}
			if err := w.dev(1).Synchronize(w.stream(1)); err != nil {
				return err
			}
			return w.dev(1).DestroyEvent(e)
		}},
		{"graph capture and launch (cuStreamBeginCapture, cuGraphInstantiate, cuGraphLaunch)", func(w *world, p device.Ptr) error {
			var err error
			if graphStream, err = w.dev(1).NewStream(); err != nil {
				return err
			}
			if err := w.dev(1).BeginCapture(graphStream); err != nil {
				return err
			}
			if err := w.dev(1).Memset(graphStream, p, 2, 4096); err != nil {
				return err
			}
			g, err := w.dev(1).EndCapture(graphStream)
			if err != nil {
				return err
			}
			if err := w.dev(1).LaunchGraph(g, graphStream); err != nil {
				return err
			}
			if err := w.dev(1).Synchronize(graphStream); err != nil {
				return err
			}
			if err := w.dev(1).DestroyGraph(g); err != nil {
				return err
			}
			return w.dev(1).DestroyStream(graphStream)
		}},
		{"allocate and map (cuMemCreate, cuMemAddressReserve, cuMemMap, cuMemSetAccess)", func(w *world, _ device.Ptr) error {
			_, _, err := mapFresh(w.dev(1))
			return err
		}},
		{"unmap and free (cuMemUnmap, cuMemAddressFree, cuMemRelease)", func(w *world, _ device.Ptr) error {
			h, p, err := mapFresh(w.dev(1))
			if err != nil {
				return err
			}
			size := w.dev(1).Attributes().Granularity
			if err := w.dev(1).Unmap(p, size); err != nil {
				return err
			}
			if err := w.dev(1).FreeRange(p, size); err != nil {
				return err
			}
			return w.dev(1).ReleasePhysical(h)
		}},
		{"cuMemHostAlloc", func(w *world, _ device.Ptr) error {
			return raw(w, func(g *gpu) error {
				return g.drv.check("cuMemHostAlloc", g.drv.cuMemHostAlloc(&pinned, 4096, memHostAllocPortable|memHostAllocDeviceMap))
			})
		}},
		{"cuMemFreeHost", func(w *world, _ device.Ptr) error {
			return raw(w, func(g *gpu) error { return g.drv.check("cuMemFreeHost", g.drv.cuMemFreeHost(pinned)) })
		}},
		{"cuStreamCreate", func(w *world, _ device.Ptr) error {
			return raw(w, func(g *gpu) error {
				return g.drv.check("cuStreamCreate", g.drv.cuStreamCreate(&rawStream, streamNonBlocking))
			})
		}},
		{"cuStreamDestroy", func(w *world, _ device.Ptr) error {
			return raw(w, func(g *gpu) error { return g.drv.check("cuStreamDestroy", g.drv.cuStreamDestroy(rawStream)) })
		}},
		{"cuModuleLoadData", func(w *world, _ device.Ptr) error {
			return raw(w, func(g *gpu) error {
				img := make([]uint64, (len(g.module)+7)/8)
				copy(unsafe.Slice((*byte)(unsafe.Pointer(&img[0])), len(img)*8), g.module)
				return g.drv.check("cuModuleLoadData", g.drv.cuModuleLoadData(&rawModule, unsafe.Pointer(&img[0])))
			})
		}},
		{"cuModuleUnload", func(w *world, _ device.Ptr) error {
			return raw(w, func(g *gpu) error { return g.drv.check("cuModuleUnload", g.drv.cuModuleUnload(rawModule)) })
		}},
		{"Open of the device (cuModuleLoadData, cuModuleGetFunction)", func(w *world, _ device.Ptr) error {
			d, err := Open(0, Options{})
			if err != nil {
				return err
			}
			t.Cleanup(func() { must(t, d.Close()) })
			return nil
		}},
	}
}

// raw runs f on rank 1's device with its context current.
func raw(w *world, f func(g *gpu) error) error {
	g := w.dev(1).(*gpu)
	return g.call(func() error { return f(g) })
}

// mapFresh maps a new granule on d.
func mapFresh(d device.Device) (device.Handle, device.Ptr, error) {
	size := d.Attributes().Granularity
	h, err := d.CreatePhysical(size)
	if err != nil {
		return 0, 0, err
	}
	p, err := d.Reserve(size)
	if err != nil {
		return 0, 0, err
	}
	if err := d.Map(p, size, h); err != nil {
		return 0, 0, err
	}
	return h, p, d.SetAccess(p, size)
}

// TestGPUHostCallsDoNotWaitForPeerKernels: two ranks of one process each
// open GPU 0 (one primary context). For every host call of hostCalls,
// rank 0 launches a kernel that waits for rank 1's signal, rank 1 makes the
// call and only then signals. A call that waits for rank 0's kernel returns
// only when that kernel timed out, so the kernel's timeout error names the
// call. None of the device's calls may wait; the calls named after a driver
// entry point go to the driver directly and are only logged (on an H100 with
// driver 580, cuMemFreeHost waited, which is why the device pools its
// pinned memory). With CUDA_MODULE_LOADING=LAZY the second open is
// refused; with SYMMEM_LAZY_PROBE=1 as well the test opens it anyway and
// logs which calls wait under lazy loading.
func TestGPUHostCallsDoNotWaitForPeerKernels(t *testing.T) {
	if os.Getenv("SYMMEM_GPU_TESTS") != "1" {
		t.Skip("set SYMMEM_GPU_TESTS=1 to run on GPUs")
	}
	if n, err := DeviceCount(); err != nil || n < 1 {
		t.Skipf("no GPU (%d devices, %v)", n, err)
	}
	mode, err := Loading()
	must(t, err)
	probe := os.Getenv("SYMMEM_LAZY_PROBE") == "1"
	if probe && mode != LoadingLazy {
		t.Fatalf("SYMMEM_LAZY_PROBE=1 needs %s=LAZY; the driver loads %v", LoadingEnv, mode)
	}
	devs := make([]device.Device, 2)
	for i := range devs {
		d, err := Open(0, Options{})
		if probe && i == 1 {
			if err == nil || !strings.Contains(err.Error(), LoadingEnv) {
				t.Fatalf("second open under lazy loading: got %v, want a refusal naming %s", err, LoadingEnv)
			}
			// Make the second object anyway, to show what the refusal
			// prevents.
			devs[0].(*gpu).drv.opens.remove(0)
			d, err = Open(0, Options{})
		}
		must(t, err)
		devs[i] = d
		t.Cleanup(func() { must(t, d.Close()) })
	}
	g := devs[0].Attributes().Granularity
	w := newWorld(t, devs, []int{0, 1}, g)
	scratch := w.local(1, g)
	const spin = 3 * time.Second
	var waited []string
	for _, c := range hostCalls(t) {
		if probe && strings.HasPrefix(c.name, "Open") {
			continue // refused under lazy loading
		}
		w.launch(0, kernels.WaitSignal, 1, 1, w.signal(0, 1, 3, spin))
		time.Sleep(100 * time.Millisecond) // let the kernel start spinning
		t0 := time.Now()
		callErr := c.call(w, scratch)
		took := time.Since(t0)
		w.launch(1, kernels.PutSignal, 1, 1, w.signal(1, 0, 3, spin))
		kernelErr := w.dev(0).Synchronize(w.stream(0))
		must(t, w.dev(1).Synchronize(w.stream(1)))
		if callErr != nil {
			t.Fatalf("%s: %v", c.name, callErr)
		}
		blocked := kernelErr != nil || took > spin/2
		t.Logf("%-90s %8.1f ms  waited for the peer's kernel: %v", c.name, float64(took.Microseconds())/1000, blocked)
		if blocked && !c.driverCall() {
			waited = append(waited, fmt.Sprintf("%s (%v; kernel: %v)", c.name, took.Round(time.Millisecond), kernelErr))
		}
	}
	switch {
	case probe:
		t.Logf("loading mode %v: %d calls waited for a peer's kernel:\n%s", mode, len(waited), strings.Join(waited, "\n"))
	case len(waited) > 0:
		t.Fatalf("loading mode %v: %d host calls waited for a peer's kernel on the same GPU:\n%s", mode, len(waited), strings.Join(waited, "\n"))
	}
}

// TestGPULoadingIsEager: unless the process set CUDA_MODULE_LOADING
// itself, the driver runs with eager module loading.
func TestGPULoadingIsEager(t *testing.T) {
	gpus(t, 1)
	if v := os.Getenv(LoadingEnv); v != "" && v != "EAGER" {
		t.Skipf("%s=%s set by the caller", LoadingEnv, v)
	}
	mode, err := Loading()
	must(t, err)
	if mode != LoadingEager {
		t.Fatalf("module loading is %v, want eager", mode)
	}
}
