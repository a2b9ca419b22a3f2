package cuda

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/kernels/cabi"
)

// The tests below run the device against the fake driver of
// fakedriver_test.go: everything but the driver itself.

// fakeImage is the kernel image the tests load (the fake reads its first
// bytes only).
var fakeImage = []byte("fake kernel image")

// openFake opens device index through drv and closes it at the end of the
// test unless the test did.
func openFake(t *testing.T, drv *driver, index int) *gpu {
	t.Helper()
	d, err := openDevice(drv, index, Options{Module: fakeImage})
	if err != nil {
		t.Fatalf("open fake device %d: %v", index, err)
	}
	g := d.(*gpu)
	t.Cleanup(func() {
		if err := g.Close(); err != nil && !errors.Is(err, errClosed) {
			t.Errorf("close device %d: %v", index, err)
		}
	})
	return g
}

// wantErr fails t unless err's text is want.
func wantErr(t *testing.T, what string, err error, want string) {
	t.Helper()
	if err == nil || err.Error() != want {
		t.Errorf("%s: error %v\nwant %s", what, err, want)
	}
}

// wantErrContains fails t unless err's text contains every part.
func wantErrContains(t *testing.T, what string, err error, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %v, want it to contain %q", what, err, p)
			return
		}
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// signalArgs are valid arguments of the signal kernels on a fake device.
func signalArgs() kernels.SignalArgs {
	return kernels.SignalArgs{Rank: 0, World: 2, Peer: 1, PadPtrs: 0x1000, PadBytes: 4096, TimeoutNs: 1e6}
}

func TestFakeOpenDescribesTheDevice(t *testing.T) {
	t.Setenv("SYMMEM_DISABLE_MULTICAST", "")
	t.Setenv("TORCH_SYMM_MEM_DISABLE_MULTICAST", "")
	drv, f := newFakeDriver(2)
	if n, err := drv.deviceCount(); err != nil || n != 2 {
		t.Fatalf("deviceCount = %d, %v; want 2", n, err)
	}
	g := openFake(t, drv, 1)
	want := device.Attributes{Name: "Fake GPU 1", Index: 1, SMCount: 132, Granularity: 2 << 20, MulticastSupported: true}
	if g.Attributes() != want || g.busID != "00000000:19:00.0" {
		t.Fatalf("attributes %+v, bus %q; want %+v, bus 00000000:19:00.0", g.Attributes(), g.busID, want)
	}
	free, total, err := g.MemInfo()
	if err != nil || free != 80<<30 || total != 80<<30 {
		t.Fatalf("MemInfo = %d, %d, %v", free, total, err)
	}
	// Every entry point is resolved at open; the image is loaded once.
	if got, want := f.count("cuModuleGetFunction"), len(cabi.Entries()); got != want {
		t.Errorf("%d functions resolved at open, want %d (cabi.Entries)", got, want)
	}
	if n := f.count("cuModuleLoadData"); n != 1 {
		t.Errorf("image loaded %d times, want once", n)
	}
	mustDo(t, g.Close())
	f.checkReleased(t)
	wantErr(t, "close twice", g.Close(), "cuda device 1: close: device is closed")

	_, err = openDevice(drv, 2, Options{})
	wantErr(t, "open of a device the driver lacks", err, "cuda: device index 2 out of range (the driver sees 2 devices)")
	_, err = openDevice(drv, -1, Options{})
	wantErr(t, "open of device -1", err, "cuda: device index -1 out of range (the driver sees 2 devices)")
}

func TestFakeOpenMulticast(t *testing.T) {
	for _, c := range []struct {
		attr int32
		env  string
		want bool
	}{
		{1, "", true},
		{1, "1", false},
		{0, "", false},
	} {
		t.Setenv("SYMMEM_DISABLE_MULTICAST", "")
		t.Setenv("TORCH_SYMM_MEM_DISABLE_MULTICAST", c.env)
		drv, f := newFakeDriver(1)
		f.devices[0].attrs[attrMulticastSupported] = c.attr
		g := openFake(t, drv, 0)
		if got := g.Attributes().MulticastSupported; got != c.want {
			t.Errorf("attribute %d, TORCH_SYMM_MEM_DISABLE_MULTICAST=%q: multicast %v, want %v", c.attr, c.env, got, c.want)
		}
	}
}

// TestFakeOpenRefusesMissingFeatures: a device without one of the
// features symmetric memory needs is refused, naming it, and the open
// leaves nothing behind.
func TestFakeOpenRefusesMissingFeatures(t *testing.T) {
	for attr, what := range map[int32]string{
		attrVirtualMemoryManagement: "virtual memory management",
		attrHandleTypePosixFD:       "POSIX file descriptor handles",
		attrUnifiedAddressing:       "unified addressing",
		attrCanMapHostMemory:        "mapped host memory",
	} {
		drv, f := newFakeDriver(1)
		drv.loading = LoadingLazy // a second open is refused if the first one still counts
		f.devices[0].attrs[attr] = 0
		_, err := openDevice(drv, 0, Options{Module: fakeImage})
		wantErr(t, what, err, "cuda: open device 0: device Fake GPU 0 does not support "+what)
		f.checkReleased(t)
		f.devices[0].attrs[attr] = 1
		openFake(t, drv, 0)
	}
}

// TestFakeOpenFailures: each driver call of an open that fails fails the
// open with the driver's error, wrapped, and undoes what the open did.
func TestFakeOpenFailures(t *testing.T) {
	for _, call := range []string{
		"cuDeviceGetCount", "cuDeviceGet", "cuDevicePrimaryCtxRetain", "cuCtxSetCurrent",
		"cuDeviceGetName", "cuDeviceGetPCIBusId", "cuDeviceGetAttribute", "cuMemGetAllocationGranularity",
		"cuStreamCreate", "cuMemHostAlloc", "cuMemHostGetDevicePointer_v2", "cuModuleLoadData",
		"cuModuleGetFunction",
	} {
		drv, f := newFakeDriver(1)
		drv.loading = LoadingLazy
		f.inject(call, errOutOfMemory)
		_, err := openDevice(drv, 0, Options{Module: fakeImage})
		prefix := "cuda: open device 0: "
		if call == "cuDeviceGetCount" {
			prefix = "cuda: "
		}
		name := strings.TrimSuffix(call, "_v2")
		wantErrContains(t, call, err, prefix, name+": CUDA_ERROR_OUT_OF_MEMORY (out of memory)")
		var de *DriverError
		if !errors.As(err, &de) || de.Code != int(errOutOfMemory) {
			t.Errorf("%s: error %v is not a *DriverError of code 2", call, err)
		}
		f.checkReleased(t)
		f.inject(call, cuSuccess)
		openFake(t, drv, 0)
	}
}

func TestFakeOpenKernelImage(t *testing.T) {
	drv, f := newFakeDriver(1)
	_, err := openDevice(drv, 0, Options{Module: []byte{}})
	wantErr(t, "empty image", err, "cuda: open device 0: the kernel image is empty: build it with scripts/build-fatbin.sh")
	_, err = openDevice(drv, 0, Options{Module: []byte("bad image")})
	wantErr(t, "invalid image", err,
		"cuda: open device 0: load kernel image: cuModuleLoadData: CUDA_ERROR_INVALID_IMAGE (device kernel image is invalid)")
	f.missing[kernels.LowLatencyAllReduce] = true
	_, err = openDevice(drv, 0, Options{Module: fakeImage})
	wantErr(t, "image without ll_all_reduce", err,
		`cuda: open device 0: kernel "ll_all_reduce": cuModuleGetFunction: CUDA_ERROR_NOT_FOUND (named symbol not found)`)
	f.checkReleased(t)
	delete(f.missing, kernels.LowLatencyAllReduce)

	// No image given: the embedded fatbin.
	d, err := openDevice(drv, 0, Options{})
	mustDo(t, err)
	for _, prefix := range f.modules {
		if !bytes.Equal(prefix, kernels.Fatbin[:len(prefix)]) {
			t.Errorf("loaded image starts % x, want the embedded fatbin's % x", prefix, kernels.Fatbin[:len(prefix)])
		}
	}
	mustDo(t, d.Close())
	f.checkReleased(t)
}

// TestFakeSharedOrdinal: device objects of one ordinal share the loaded
// image and the pool of streams, which are freed at the last close only;
// under lazy loading a second object is refused.
func TestFakeSharedOrdinal(t *testing.T) {
	drv, f := newFakeDriver(2)
	a := openFake(t, drv, 0)
	b := openFake(t, drv, 0)
	other := openFake(t, drv, 1)
	if n := f.count("cuModuleLoadData"); n != 2 {
		t.Errorf("image loaded %d times for two objects of device 0 and one of device 1, want 2", n)
	}
	s, err := a.NewStream()
	mustDo(t, err)
	cu := a.streams[s].cu
	mustDo(t, a.DestroyStream(s))
	if n := f.count("cuStreamDestroy_v2"); n != 0 {
		t.Fatalf("a destroyed stream went back to the driver (%d destroys), want it pooled", n)
	}
	creates := f.count("cuStreamCreate")
	s2, err := b.NewStream()
	mustDo(t, err)
	if b.streams[s2].cu != cu || f.count("cuStreamCreate") != creates {
		t.Errorf("the other object's new stream is %#x after %d creates, want the pooled %#x", b.streams[s2].cu, f.count("cuStreamCreate"), cu)
	}
	mustDo(t, a.Close())
	if live := f.live(); live["modules"] != 2 || live["streams"] != 4 {
		t.Errorf("after the first close of device 0 the driver holds %v, want both modules and all 4 streams", live)
	}
	mustDo(t, b.Close())
	if live := f.live(); live["modules"] != 1 || live["streams"] != 1 || live["host allocations"] != 1 {
		t.Errorf("after the last close of device 0 the driver holds %v, want device 1's module and stream only", live)
	}
	mustDo(t, other.Close())
	f.checkReleased(t)

	drv.loading = LoadingLazy
	openFake(t, drv, 0)
	_, err = openDevice(drv, 0, Options{Module: fakeImage})
	wantErrContains(t, "second open under lazy loading", err, "device 0 is already open in this process", LoadingEnv)
	openFake(t, drv, 1)
}

// TestFakeSharedOrdinalConcurrently: objects of one ordinal used from
// several goroutines (run it with -race).
func TestFakeSharedOrdinalConcurrently(t *testing.T) {
	drv, f := newFakeDriver(1)
	// One object stays open throughout, so that the image stays loaded.
	openFake(t, drv, 0)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := openDevice(drv, 0, Options{Module: fakeImage})
			if err != nil {
				errs <- err
				return
			}
			for range 10 {
				s, err := d.NewStream()
				if err == nil {
					err = d.Launch(s, device.Launch{Kernel: kernels.Barrier, Blocks: 1, Threads: 32, Args: signalArgs()})
				}
				if err == nil {
					err = d.DestroyStream(s)
				}
				if err != nil {
					errs <- err
					break
				}
			}
			errs <- d.Close()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := f.count("cuModuleLoadData"); n != 1 {
		t.Errorf("image loaded %d times, want once", n)
	}
	if live := f.live(); live["modules"] != 1 || live["context retains"] != 1 {
		t.Errorf("with one object left open the driver holds %v", live)
	}
}

// TestFakeMemory: physical allocations, their export to a peer device,
// reserved ranges, mappings and copies, with the device's own checks.
func TestFakeMemory(t *testing.T) {
	drv, f := newFakeDriver(2)
	g0, g1 := openFake(t, drv, 0), openFake(t, drv, 1)
	gran := g0.Attributes().Granularity

	_, err := g0.CreatePhysical(0)
	wantErr(t, "allocation of 0 bytes", err,
		"cuda device 0: create physical allocation of 0 bytes: size 0 is not a positive multiple of the granularity 2097152")
	_, err = g0.Reserve(gran + 1)
	wantErr(t, "reserve of a non-multiple", err,
		"cuda device 0: reserve 2097153 bytes: size 2097153 is not a positive multiple of the granularity 2097152")
	h, err := g0.CreatePhysical(gran)
	mustDo(t, err)
	p, err := g0.Reserve(2 * gran)
	mustDo(t, err)
	wantErrContains(t, "map of an unknown handle", g0.Map(p, gran, 99), "map handle 99 at", "unknown handle 99")
	wantErrContains(t, "map of a bad size", g0.Map(p, 100, h), "size 100 is not a positive multiple")
	wantErrContains(t, "map outside the range", g0.Map(p+device.Ptr(gran), 2*gran, h), "is not inside a reserved range")
	mustDo(t, g0.Map(p, gran, h))
	mustDo(t, g0.SetAccess(p, gran))

	data := []byte("symmetric memory, sixteen+ bytes")
	mustDo(t, g0.Write(0, p, data))
	mustDo(t, g0.Memset(0, p+4, 'X', 3))
	mustDo(t, g0.Copy(0, p+device.Ptr(gran/2), p, uint64(len(data))))
	got := make([]byte, len(data))
	mustDo(t, g0.Read(0, got, p+device.Ptr(gran/2)))
	if want := "symmXXXic memory, sixteen+ bytes"; string(got) != want {
		t.Errorf("read %q, want %q", got, want)
	}
	// Empty operations check the stream and make no driver call.
	calls := f.count("cuMemsetD8Async") + f.count("cuMemcpyAsync") + f.count("cuMemcpyHtoDAsync_v2") + f.count("cuMemcpyDtoHAsync_v2")
	mustDo(t, g0.Memset(0, 0, 0, 0))
	mustDo(t, g0.Copy(0, 0, 0, 0))
	mustDo(t, g0.Write(0, 0, nil))
	mustDo(t, g0.Read(0, nil, 0))
	if n := f.count("cuMemsetD8Async") + f.count("cuMemcpyAsync") + f.count("cuMemcpyHtoDAsync_v2") + f.count("cuMemcpyDtoHAsync_v2"); n != calls {
		t.Errorf("empty operations made %d driver calls", n-calls)
	}
	wantErr(t, "memset on an unknown stream", g0.Memset(5, p, 0, 0), fmt.Sprintf("cuda device 0: memset 0 bytes at %v: unknown stream 5", p))
	wantErrContains(t, "copy on an unknown stream", g0.Copy(5, p, p, 0), "unknown stream 5")
	wantErrContains(t, "write on an unknown stream", g0.Write(5, p, data), "unknown stream 5")
	wantErrContains(t, "read of unmapped memory", g0.Read(0, got, p+device.Ptr(gran)),
		"cuda device 0: read 32 bytes from", "cuMemcpyDtoHAsync_v2: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)")

	// The peer imports the allocation and sees what device 0 wrote.
	fd, err := g0.ExportHandle(h)
	mustDo(t, err)
	_, err = g0.ExportHandle(42)
	wantErr(t, "export of an unknown handle", err, "cuda device 0: export handle 42: unknown handle 42")
	_, err = g1.ImportHandle(-1)
	wantErr(t, "import of fd -1", err, "cuda device 1: import fd -1: invalid file descriptor -1")
	h1, err := g1.ImportHandle(fd)
	mustDo(t, err)
	mustDo(t, g0.CloseFD(fd))
	wantErrContains(t, "second close of an fd", g0.CloseFD(fd), fmt.Sprintf("cuda device 0: close fd %d: bad file descriptor", fd))
	wantErr(t, "close of fd -1", g0.CloseFD(-1), "cuda device 0: close fd: invalid file descriptor -1")
	p1, err := g1.Reserve(gran)
	mustDo(t, err)
	mustDo(t, g1.Map(p1, gran, h1))
	mustDo(t, g1.SetAccess(p1, gran))
	mustDo(t, g1.Read(0, got, p1))
	if string(got) != "symmXXXic memory, sixteen+ bytes" {
		t.Errorf("the peer read %q", got)
	}

	wantErrContains(t, "unmap of the wrong size", g0.Unmap(p, 2*gran), fmt.Sprintf("no mapping of %d bytes starts at %v", 2*gran, p))
	wantErrContains(t, "free of the wrong size", g0.FreeRange(p, gran), fmt.Sprintf("no reserved range of %d bytes starts at %v", gran, p))
	mustDo(t, g0.Unmap(p, gran))
	mustDo(t, g0.FreeRange(p, 2*gran))
	mustDo(t, g0.ReleasePhysical(h))
	wantErr(t, "second release", g0.ReleasePhysical(h), fmt.Sprintf("cuda device 0: release handle %d: unknown handle %d", h, h))
	// What device 1 still holds goes with its close.
	mustDo(t, g0.Close())
	mustDo(t, g1.Close())
	f.checkReleased(t)
}

// TestFakeDriverFailures: a failed driver call fails the device call,
// naming the operation, the entry point and the driver's error, and
// leaves the device's bookkeeping as it was.
func TestFakeDriverFailures(t *testing.T) {
	drv, f := newFakeDriver(1)
	g := openFake(t, drv, 0)
	gran := g.Attributes().Granularity
	h, err := g.CreatePhysical(gran)
	mustDo(t, err)
	p, err := g.Reserve(gran)
	mustDo(t, err)
	mustDo(t, g.Map(p, gran, h))
	e, err := g.NewEvent()
	mustDo(t, err)
	const oom = ": CUDA_ERROR_OUT_OF_MEMORY (out of memory)"
	for _, c := range []struct {
		call string
		op   func() error
		want string
	}{
		{"cuMemCreate", func() error { _, err := g.CreatePhysical(gran); return err },
			"cuda device 0: create physical allocation of 2097152 bytes: cuMemCreate" + oom},
		{"cuMemRelease", func() error { return g.ReleasePhysical(h) }, fmt.Sprintf("cuda device 0: release handle %d: cuMemRelease", h) + oom},
		{"cuMemExportToShareableHandle", func() error { _, err := g.ExportHandle(h); return err },
			fmt.Sprintf("cuda device 0: export handle %d: cuMemExportToShareableHandle", h) + oom},
		{"cuMemImportFromShareableHandle", func() error { _, err := g.ImportHandle(3); return err },
			"cuda device 0: import fd 3: cuMemImportFromShareableHandle" + oom},
		{"cuMemAddressReserve", func() error { _, err := g.Reserve(gran); return err }, "cuda device 0: reserve 2097152 bytes: cuMemAddressReserve" + oom},
		{"cuMemAddressFree", func() error { return g.FreeRange(p, gran) }, fmt.Sprintf("cuda device 0: free range %v (2097152 bytes): cuMemAddressFree", p) + oom},
		{"cuMemMap", func() error { return g.Map(p, gran, h) }, fmt.Sprintf("cuda device 0: map handle %d at %v (2097152 bytes): cuMemMap", h, p) + oom},
		{"cuMemSetAccess", func() error { return g.SetAccess(p, gran) }, fmt.Sprintf("cuda device 0: set access at %v (2097152 bytes): cuMemSetAccess", p) + oom},
		{"cuMemUnmap", func() error { return g.Unmap(p, gran) }, fmt.Sprintf("cuda device 0: unmap %v (2097152 bytes): cuMemUnmap", p) + oom},
		{"cuMemsetD8Async", func() error { return g.Memset(0, p, 0, 8) }, fmt.Sprintf("cuda device 0: memset 8 bytes at %v: cuMemsetD8Async", p) + oom},
		{"cuMemcpyAsync", func() error { return g.Copy(0, p, p, 8) }, fmt.Sprintf("cuda device 0: copy 8 bytes from %v to %v: cuMemcpyAsync", p, p) + oom},
		{"cuMemcpyHtoDAsync_v2", func() error { return g.Write(0, p, make([]byte, 8)) }, fmt.Sprintf("cuda device 0: write 8 bytes to %v: cuMemcpyHtoDAsync_v2", p) + oom},
		{"cuMemGetInfo_v2", func() error { _, _, err := g.MemInfo(); return err }, "cuda device 0: read memory info: cuMemGetInfo" + oom},
		{"cuStreamQuery", func() error { return g.Synchronize(0) }, "cuda device 0: synchronize stream 0: cuStreamQuery" + oom},
		{"cuStreamQuery", func() error { return g.Read(0, make([]byte, 8), p) }, fmt.Sprintf("cuda device 0: read 8 bytes from %v: cuStreamQuery", p) + oom},
		{"cuStreamCreate", func() error { _, err := g.NewStream(); return err }, "cuda device 0: create stream: cuStreamCreate" + oom},
		{"cuMemHostAlloc", func() error { _, err := g.NewStream(); return err }, "cuda device 0: create stream: cuMemHostAlloc" + oom},
		{"cuMemHostGetDevicePointer_v2", func() error { _, err := g.NewStream(); return err }, "cuda device 0: create stream: cuMemHostGetDevicePointer" + oom},
		{"cuEventCreate", func() error { _, err := g.NewEvent(); return err }, "cuda device 0: create event: cuEventCreate" + oom},
		{"cuEventRecord", func() error { return g.RecordEvent(e, 0) }, fmt.Sprintf("cuda device 0: record event %d on stream 0: cuEventRecord", e) + oom},
		{"cuEventQuery", func() error { _, err := g.Elapsed(e, e); return err }, fmt.Sprintf("cuda device 0: elapsed time from event %d to %d: cuEventQuery", e, e) + oom},
		{"cuEventDestroy_v2", func() error { return g.DestroyEvent(e) }, fmt.Sprintf("cuda device 0: destroy event %d: cuEventDestroy_v2", e) + oom},
		{"cuCtxSetCurrent", func() error { return g.Synchronize(0) }, "cuda device 0: synchronize stream 0: cuCtxSetCurrent" + oom},
		{"cuCtxSetCurrent", func() error {
			return g.Launch(0, device.Launch{Kernel: kernels.Barrier, Blocks: 1, Threads: 32, Args: signalArgs()})
		}, "cuda device 0: launch barrier on stream 0: cuCtxSetCurrent" + oom},
		{"cuLaunchKernel", func() error {
			return g.Launch(0, device.Launch{Kernel: kernels.Barrier, Blocks: 1, Threads: 32, Args: signalArgs()})
		}, "cuda device 0: launch barrier on stream 0: cuLaunchKernel" + oom},
		{"cuStreamBeginCapture_v2", func() error { return g.BeginCapture(0) }, "cuda device 0: begin capture on stream 0: cuStreamBeginCapture_v2" + oom},
	} {
		before := f.live()
		streams, handles, launches := len(g.streams), len(g.handles), g.streams[0].launches
		f.inject(c.call, errOutOfMemory)
		err := c.op()
		f.inject(c.call, cuSuccess)
		wantErr(t, c.call, err, c.want)
		var de *DriverError
		if !errors.As(err, &de) || de.Code != int(errOutOfMemory) {
			t.Errorf("%s: error %v is not a *DriverError of code 2", c.call, err)
		}
		if after := f.live(); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("%s: the driver held %v before the failed call, %v after", c.call, before, after)
		}
		if len(g.streams) != streams || len(g.handles) != handles || len(g.events) != 1 || g.streams[0].launches != launches {
			t.Errorf("%s: the device's bookkeeping changed: %d streams, %d handles, %d launches; was %d, %d, %d",
				c.call, len(g.streams), len(g.handles), g.streams[0].launches, streams, handles, launches)
		}
	}
	// Everything still works afterwards.
	mustDo(t, g.Unmap(p, gran))
	mustDo(t, g.FreeRange(p, gran))
	mustDo(t, g.ReleasePhysical(h))
	mustDo(t, g.DestroyEvent(e))
	mustDo(t, g.Close())
	f.checkReleased(t)
}

func TestFakeStreams(t *testing.T) {
	drv, f := newFakeDriver(1)
	g := openFake(t, drv, 0)
	s, err := g.NewStream()
	mustDo(t, err)
	if s != 1 {
		t.Errorf("first new stream is %d, want 1", s)
	}
	wantErr(t, "destroy of stream 0", g.DestroyStream(0), "cuda device 0: destroy stream: stream 0 is the default stream")
	wantErr(t, "destroy of an unknown stream", g.DestroyStream(7), "cuda device 0: destroy stream 7: unknown stream 7")
	wantErr(t, "synchronize of an unknown stream", g.Synchronize(7), "cuda device 0: synchronize stream 7: unknown stream 7")

	// A stream that is busy for a while: Synchronize polls until it is
	// done.
	f.streams[g.streams[s].cu].notReady = 100
	queries := f.count("cuStreamQuery")
	mustDo(t, g.Synchronize(s))
	if n := f.count("cuStreamQuery") - queries; n != 101 {
		t.Errorf("Synchronize made %d queries of a stream busy for 100, want 101", n)
	}
	// Its pauses between those polls: spinning first, then short sleeps.
	var paused time.Duration
	for i := range 100 {
		paused += backoffDelay(i)
	}
	if paused > time.Millisecond {
		t.Errorf("a wait of 100 polls pauses %v in all, want at most 1ms", paused)
	}
	if backoffDelay(0) != 0 || backoffDelay(5000) != time.Millisecond {
		t.Errorf("backoff: first pause %v, late pause %v; want 0 and 1ms", backoffDelay(0), backoffDelay(5000))
	}
	// Its error record is cleared when it goes back to the pool: a stream
	// taken from the pool reports nothing.
	copy(unsafe.Slice((*byte)(g.streams[s].rec), cabi.ErrorRecordSize), errorRecordBytes(t, map[string]uint64{"reason": cabi.ReasonWaitTimeout}))
	mustDo(t, g.DestroyStream(s))
	s2, err := g.NewStream()
	mustDo(t, err)
	if s2 != 2 {
		t.Errorf("second new stream is %d, want 2", s2)
	}
	mustDo(t, g.Synchronize(s2))
	// Stream 0's record starts clear too, although the fake's pinned
	// memory does not.
	if err := g.Synchronize(0); err != nil {
		t.Errorf("a new device's stream 0 reports %v", err)
	}
}

// TestFakeLaunch: a launch reaches the driver with the entry point cabi
// picks, the shape asked for and the packed arguments behind a header
// that names the stream's error record and the launch's number; a kernel
// that gives up is reported by the next Synchronize under its kernel's
// name and group.
func TestFakeLaunch(t *testing.T) {
	drv, f := newFakeDriver(1)
	g := openFake(t, drv, 0)
	group := &device.Group{Name: "pair", Ranks: []int{4, 6}}
	ar := kernels.AllReduceArgs{Rank: 1, World: 4, DType: device.BFloat16, Op: device.Sum, BufferPtrs: 0x1000,
		PadPtrs: 0x2000, PadBytes: 1 << 16, Numel: 4096, Output: 0x10000, TimeoutNs: 1e9}
	mustDo(t, g.Launch(0, device.Launch{Kernel: kernels.OneShotAllReduce, Blocks: 2, Threads: 256, Args: ar}))
	mustDo(t, g.Launch(0, device.Launch{Kernel: kernels.WaitSignal, Blocks: 1, Threads: 32, Args: signalArgs(), Group: group}))
	if len(f.launches) != 2 {
		t.Fatalf("%d launches reached the driver, want 2", len(f.launches))
	}
	for i, c := range []struct {
		kernel          string
		args            any
		blocks, threads uint32
	}{
		{kernels.OneShotAllReduce, ar, 2, 256},
		{kernels.WaitSignal, signalArgs(), 1, 32},
	} {
		l := f.launches[i]
		h := cabi.LaunchHeader{ErrorRecord: g.streams[0].recDev, Launch: uint32(i)}
		want, err := cabi.Pack(h, c.kernel, c.args)
		mustDo(t, err)
		if l.entry != cabi.Entry(c.kernel, c.args) || l.blocks != c.blocks || l.threads != c.threads ||
			l.stream != g.streams[0].cu || l.header != h || !bytes.Equal(l.args, want) {
			t.Errorf("launch %d reached the driver as %+v\nwant entry %s, %d x %d, stream %#x, header %+v, args % x",
				i, l, cabi.Entry(c.kernel, c.args), c.blocks, c.threads, g.streams[0].cu, h, want)
		}
	}
	if f.launches[0].entry == kernels.OneShotAllReduce {
		t.Errorf("an aligned bf16 world-4 one-shot ran the generic entry, want a specialised one")
	}

	// A wait_signal that times out.
	f.kernel = func(f *fakeDriver, l fakeLaunch) {
		if l.entry == kernels.WaitSignal {
			f.record(t, l, map[string]uint64{"reason": cabi.ReasonWaitTimeout, "rank": 0, "peer": 1,
				"channel": 3, "slot": 7, "timeout_ns": uint64(time.Millisecond)})
		}
	}
	mustDo(t, g.Launch(0, device.Launch{Kernel: kernels.Barrier, Blocks: 1, Threads: 32, Args: signalArgs()}))
	if err := g.Synchronize(0); err != nil {
		t.Fatalf("a barrier that succeeded: %v", err)
	}
	mustDo(t, g.Launch(0, device.Launch{Kernel: kernels.WaitSignal, Blocks: 1, Threads: 32, Args: signalArgs(), Group: group}))
	err := g.Synchronize(0)
	var ke *device.KernelError
	if !errors.As(err, &ke) {
		t.Fatalf("Synchronize after a timed-out wait: %v, want a *device.KernelError", err)
	}
	const text = `kernel wait_signal: group "pair": rank 4 (position 0) block 0: wait timed out (no signal arrived) waiting for rank 6 (position 1) on channel 3 (pad slot 7) after 1ms`
	if err.Error() != text {
		t.Errorf("Synchronize's error:\n%s\nwant\n%s", err, text)
	}
	if err := g.Synchronize(0); err != nil {
		t.Errorf("a second Synchronize reported %v again", err)
	}
	// Read and Write wait for the stream but leave its error to
	// Synchronize.
	mustDo(t, g.Launch(0, device.Launch{Kernel: kernels.WaitSignal, Blocks: 1, Threads: 32, Args: signalArgs()}))
	mustDo(t, g.Read(0, nil, 0))
	if err := g.Synchronize(0); !errors.As(err, &ke) || ke.Kernel != kernels.WaitSignal || ke.Group != nil {
		t.Errorf("Synchronize after a Read: %v, want wait_signal's error with no group", err)
	}

	// A launch older than the ring of names is reported without one.
	f.kernel = nil
	for range launchRing {
		mustDo(t, g.Launch(0, device.Launch{Kernel: kernels.Barrier, Blocks: 1, Threads: 32, Args: signalArgs()}))
	}
	f.kernel = func(f *fakeDriver, l fakeLaunch) {
		f.record(t, l, map[string]uint64{"launch": 1, "reason": cabi.ReasonNullPointer, "peer": 1})
	}
	mustDo(t, g.Launch(0, device.Launch{Kernel: kernels.Barrier, Blocks: 1, Threads: 32, Args: signalArgs()}))
	if err := g.Synchronize(0); !errors.As(err, &ke) || ke.Kernel != "unknown kernel" || ke.Reason != "pointer array entry of rank 1 is null" {
		t.Errorf("error of a launch the ring forgot: %+v", err)
	}

	wantErr(t, "launch on an unknown stream",
		g.Launch(3, device.Launch{Kernel: kernels.Barrier, Blocks: 1, Threads: 32, Args: signalArgs()}),
		"cuda device 0: launch barrier on stream 3: unknown stream 3")
	wantErr(t, "launch with bad arguments",
		g.Launch(0, device.Launch{Kernel: kernels.Barrier, Blocks: 1, Threads: 32, Args: kernels.SignalArgs{World: 2}}),
		"cuda device 0: launch barrier on stream 0: kernel barrier: PadBytes is 0 (set it to the signal pad size)")
}

// TestFakeGraphs: launches captured on a stream become a graph that
// replays them with their captured numbers, so their errors name the
// captured kernels; what waits for a capturing stream is refused.
func TestFakeGraphs(t *testing.T) {
	drv, f := newFakeDriver(1)
	g := openFake(t, drv, 0)
	s, err := g.NewStream()
	mustDo(t, err)
	e, err := g.NewEvent()
	mustDo(t, err)
	_, err = g.EndCapture(s)
	wantErr(t, "end of no capture", err, "cuda device 0: end capture on stream 1: the stream is not capturing")
	wantErrContains(t, "capture on an unknown stream", g.BeginCapture(5), "unknown stream 5")
	_, err = g.EndCapture(5)
	wantErrContains(t, "end capture on an unknown stream", err, "unknown stream 5")

	mustDo(t, g.BeginCapture(s))
	wantErr(t, "second capture", g.BeginCapture(s), "cuda device 0: begin capture on stream 1: the stream is already capturing")
	mustDo(t, g.Launch(s, device.Launch{Kernel: kernels.Barrier, Blocks: 1, Threads: 32, Args: signalArgs()}))
	mustDo(t, g.Launch(s, device.Launch{Kernel: kernels.PutSignal, Blocks: 1, Threads: 32, Args: signalArgs()}))
	mustDo(t, g.Memset(s, 0, 0, 0))
	if len(f.launches) != 0 {
		t.Fatalf("captured launches ran: %+v", f.launches)
	}
	wantErr(t, "synchronize while capturing", g.Synchronize(s),
		"cuda device 0: synchronize stream 1: wait for the stream: the stream is capturing a graph (end the capture first)")
	wantErrContains(t, "record while capturing", g.RecordEvent(e, s), "record event: the stream is capturing a graph")
	wantErrContains(t, "read while capturing", g.Read(s, make([]byte, 4), 0), "the stream is capturing a graph")
	wantErrContains(t, "destroy while capturing", g.DestroyStream(s), "the stream is capturing a graph")
	gr, err := g.EndCapture(s)
	mustDo(t, err)

	wantErr(t, "graph on another stream", g.LaunchGraph(gr, 0),
		fmt.Sprintf("cuda device 0: launch graph %d on stream 0: graph %d was captured on stream 1: its kernels report errors there", gr, gr))
	wantErr(t, "unknown graph", g.LaunchGraph(gr+1, s), fmt.Sprintf("cuda device 0: launch graph %d on stream 1: unknown graph %d", gr+1, gr+1))
	// The put (launch 1 of the stream) fails at every replay.
	f.kernel = func(f *fakeDriver, l fakeLaunch) {
		if l.entry == kernels.PutSignal {
			f.record(t, l, map[string]uint64{"reason": cabi.ReasonPutTimeout, "pad": 1})
		}
	}
	for range 2 {
		mustDo(t, g.LaunchGraph(gr, s))
		var ke *device.KernelError
		if err := g.Synchronize(s); !errors.As(err, &ke) || ke.Kernel != kernels.PutSignal ||
			ke.Reason != "put timed out (previous signal still pending in pad of rank 1)" {
			t.Errorf("Synchronize after the graph: %v, want put_signal's timeout", err)
		}
	}
	if n := len(f.launches); n != 4 || f.launches[2].header.Launch != 0 || f.launches[3].header.Launch != 1 {
		t.Errorf("replays reached the driver as %+v, want launches 0 and 1 twice", f.launches)
	}
	// Launches after the capture go on from its numbers.
	mustDo(t, g.Launch(s, device.Launch{Kernel: kernels.Barrier, Blocks: 1, Threads: 32, Args: signalArgs()}))
	if l := f.launches[len(f.launches)-1]; l.header.Launch != 2 {
		t.Errorf("the launch after the capture has number %d, want 2", l.header.Launch)
	}
	mustDo(t, g.DestroyGraph(gr))
	if len(g.streams[s].graphNames) != 0 {
		t.Errorf("the destroyed graph's names stay: %v", g.streams[s].graphNames)
	}
	wantErr(t, "second destroy", g.DestroyGraph(gr), fmt.Sprintf("cuda device 0: destroy graph %d: unknown graph %d", gr, gr))
	if live := f.live(); live["graphs"] != 0 || live["graph execs"] != 0 {
		t.Errorf("after DestroyGraph the driver holds %v", live)
	}

	// A graph that does not instantiate is destroyed, and the stream no
	// longer captures.
	mustDo(t, g.BeginCapture(s))
	f.inject("cuGraphInstantiateWithFlags", errOutOfMemory)
	_, err = g.EndCapture(s)
	f.inject("cuGraphInstantiateWithFlags", cuSuccess)
	wantErr(t, "failed instantiation", err,
		"cuda device 0: end capture on stream 1: cuGraphInstantiateWithFlags: CUDA_ERROR_OUT_OF_MEMORY (out of memory)")
	if live := f.live(); live["graphs"] != 0 {
		t.Errorf("after a failed instantiation the driver holds %v", live)
	}
	mustDo(t, g.Synchronize(s))
	mustDo(t, g.BeginCapture(s))
	f.inject("cuStreamEndCapture", errOutOfMemory)
	_, err = g.EndCapture(s)
	f.inject("cuStreamEndCapture", cuSuccess)
	wantErrContains(t, "failed end of capture", err, "cuStreamEndCapture: CUDA_ERROR_OUT_OF_MEMORY")

	// A graph left alive, captured while another one is live, goes with
	// Close.
	mustDo(t, g.BeginCapture(0))
	mustDo(t, g.Launch(0, device.Launch{Kernel: kernels.Barrier, Blocks: 1, Threads: 32, Args: signalArgs()}))
	_, err = g.EndCapture(0)
	mustDo(t, err)
	mustDo(t, g.Close())
	f.checkReleased(t)
}

func TestFakeEvents(t *testing.T) {
	drv, f := newFakeDriver(1)
	g := openFake(t, drv, 0)
	a, err := g.NewEvent()
	mustDo(t, err)
	b, err := g.NewEvent()
	mustDo(t, err)
	_, err = g.Elapsed(a, b)
	wantErr(t, "elapsed between events never recorded", err,
		fmt.Sprintf("cuda device 0: elapsed time from event %d to %d: cuEventElapsedTime: CUDA_ERROR_INVALID_HANDLE (invalid resource handle)", a, b))
	mustDo(t, g.RecordEvent(a, 0))
	mustDo(t, g.RecordEvent(b, 0))
	// The end event completes after a few queries.
	f.events[g.events[b]].notReady = 3
	queries := f.count("cuEventQuery")
	d, err := g.Elapsed(a, b)
	if err != nil || d != 1250*time.Microsecond {
		t.Errorf("Elapsed = %v, %v; want 1.25ms", d, err)
	}
	if n := f.count("cuEventQuery") - queries; n != 4 {
		t.Errorf("Elapsed made %d queries of an event busy for 3, want 4", n)
	}
	wantErr(t, "record of an unknown event", g.RecordEvent(9, 0), "cuda device 0: record event 9 on stream 0: unknown event 9")
	wantErr(t, "record on an unknown stream", g.RecordEvent(a, 4), fmt.Sprintf("cuda device 0: record event %d on stream 4: unknown stream 4", a))
	_, err = g.Elapsed(9, b)
	wantErrContains(t, "elapsed from an unknown event", err, "unknown event 9")
	_, err = g.Elapsed(a, 9)
	wantErrContains(t, "elapsed to an unknown event", err, "unknown event 9")
	mustDo(t, g.DestroyEvent(a))
	wantErr(t, "second destroy", g.DestroyEvent(a), fmt.Sprintf("cuda device 0: destroy event %d: unknown event %d", a, a))
	mustDo(t, g.Close()) // destroys b
	f.checkReleased(t)
}

// TestFakeClose: Close releases whatever the device still holds, goes on
// past driver calls that fail (reporting them all), and every call after
// it fails.
func TestFakeClose(t *testing.T) {
	drv, f := newFakeDriver(1)
	g := openFake(t, drv, 0)
	gran := g.Attributes().Granularity
	h, err := g.CreatePhysical(gran)
	mustDo(t, err)
	_, err = g.CreatePhysical(gran)
	mustDo(t, err)
	p, err := g.Reserve(gran)
	mustDo(t, err)
	mustDo(t, g.Map(p, gran, h))
	_, err = g.NewStream()
	mustDo(t, err)
	_, err = g.NewEvent()
	mustDo(t, err)
	f.inject("cuMemRelease", errInvalidValue)
	f.inject("cuEventDestroy_v2", errOutOfMemory)
	err = g.Close()
	wantErrContains(t, "close with failing releases", err, "cuda device 0: close: ",
		"cuMemRelease: CUDA_ERROR_INVALID_VALUE (invalid argument)", "cuEventDestroy_v2: CUDA_ERROR_OUT_OF_MEMORY")
	if n := strings.Count(err.Error(), "cuMemRelease"); n != 2 {
		t.Errorf("close reported %d failed releases, want both: %v", n, err)
	}
	if live := f.live(); live["mappings"] != 0 || live["ranges"] != 0 || live["streams"] != 0 ||
		live["host allocations"] != 0 || live["modules"] != 0 || live["context retains"] != 0 {
		t.Errorf("after a close with failures the driver holds %v: it should release all it could", live)
	}

	for name, call := range map[string]func() error{
		"create physical allocation of 2097152 bytes": func() error { _, err := g.CreatePhysical(gran); return err },
		"create stream":        func() error { _, err := g.NewStream(); return err },
		"synchronize stream 0": func() error { return g.Synchronize(0) },
		"launch barrier on stream 0": func() error {
			return g.Launch(0, device.Launch{Kernel: kernels.Barrier, Blocks: 1, Threads: 32, Args: signalArgs()})
		},
		"close": g.Close,
	} {
		err := call()
		wantErr(t, name+" after close", err, "cuda device 0: "+name+": device is closed")
		if !errors.Is(err, errClosed) {
			t.Errorf("%s after close: %v is not errClosed", name, err)
		}
	}
}

func TestFakeNVLinkMatrix(t *testing.T) {
	drv, f := newFakeDriver(2)
	g := openFake(t, drv, 0)
	for _, call := range []string{"cuDeviceGetCount", "cuDeviceGet", "cuDeviceGetPCIBusId"} {
		f.inject(call, errInvalidDevice)
		_, err := g.NVLinkMatrix()
		f.inject(call, cuSuccess)
		wantErr(t, call, err, "cuda device 0: read PCI bus ids: "+call+": CUDA_ERROR_INVALID_DEVICE (invalid device ordinal)")
	}
	// Without NVML (or a build without cgo) the matrix is unavailable,
	// and says so; with NVML and matching bus ids it is 2 x 2.
	m, err := g.NVLinkMatrix()
	switch {
	case err != nil:
		wantErrContains(t, "matrix", err, "cuda device 0: NVLink matrix: nvml")
	case len(m) != 2:
		t.Errorf("matrix %v, want 2 x 2", m)
	}
}

// TestFakeDestroyGraphFailure: a graph whose driver objects fail to go
// stays known with what is left of it, and destroying it again destroys
// only that.
func TestFakeDestroyGraphFailure(t *testing.T) {
	drv, f := newFakeDriver(1)
	g := openFake(t, drv, 0)
	mustDo(t, g.BeginCapture(0))
	mustDo(t, g.Launch(0, device.Launch{Kernel: kernels.Barrier, Blocks: 1, Threads: 32, Args: signalArgs()}))
	gr, err := g.EndCapture(0)
	mustDo(t, err)

	f.inject("cuGraphDestroy", errInvalidValue)
	wantErrContains(t, "failed destroy", g.DestroyGraph(gr), "cuGraphDestroy: CUDA_ERROR_INVALID_VALUE")
	f.inject("cuGraphDestroy", cuSuccess)
	if live := f.live(); live["graphs"] != 1 || live["graph execs"] != 0 {
		t.Errorf("after a failed cuGraphDestroy the driver holds %v, want the graph only", live)
	}
	if _, ok := g.graphs[gr]; !ok {
		t.Fatalf("graph %d forgotten although the driver still holds it", gr)
	}
	// The retry destroys the graph alone: a second cuGraphExecDestroy
	// of the same exec would fail.
	mustDo(t, g.DestroyGraph(gr))
	if live := f.live(); live["graphs"] != 0 {
		t.Errorf("after the retry the driver holds %v", live)
	}
	wantErrContains(t, "third destroy", g.DestroyGraph(gr), fmt.Sprintf("unknown graph %d", gr))
	mustDo(t, g.Close())
	f.checkReleased(t)
}
