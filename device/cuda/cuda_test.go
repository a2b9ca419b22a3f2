package cuda

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
)

func TestNoDriver(t *testing.T) {
	_, err := open("libcuda-missing-for-test.so.1")
	if err == nil || !errors.Is(err, ErrNoDriver) || !strings.Contains(err.Error(), "no CUDA driver found (libcuda.so.1)") {
		t.Fatalf("open of a missing library: error %v, want ErrNoDriver", err)
	}
	if _, err := load(); err == nil {
		t.Skip("a CUDA driver is installed here")
	}
	_, err = Open(0, Options{})
	if err == nil || !strings.Contains(err.Error(), "no CUDA driver found (libcuda.so.1)") {
		t.Fatalf("Open without a driver: error %v", err)
	}
	if _, err := DeviceCount(); !errors.Is(err, ErrNoDriver) {
		t.Fatalf("DeviceCount without a driver: error %v", err)
	}
}

func TestAllocationPropLayout(t *testing.T) {
	w := allocationProp(3)
	b := wordBytes(w[:])
	if len(b) != allocationPropSize {
		t.Fatalf("CUmemAllocationProp image is %d bytes, want %d", len(b), allocationPropSize)
	}
	le := binary.LittleEndian
	for _, c := range []struct {
		name      string
		off, size int
		want      uint64
	}{
		{"type (PINNED)", 0, 4, 1},
		{"requestedHandleTypes (POSIX_FILE_DESCRIPTOR)", 4, 4, 1},
		{"location.type (DEVICE)", 8, 4, 1},
		{"location.id", 12, 4, 3},
		{"win32HandleMetaData", 16, 8, 0},
		{"allocFlags", 24, 8, 0},
	} {
		got := le.Uint64(append(b[c.off:c.off+c.size:c.off+c.size], make([]byte, 8-c.size)...))
		if got != c.want {
			t.Errorf("CUmemAllocationProp.%s at %d = %d, want %d", c.name, c.off, got, c.want)
		}
	}
}

func TestAccessDescLayout(t *testing.T) {
	w := accessDesc(7)
	b := wordBytes(w[:])
	le := binary.LittleEndian
	if le.Uint32(b[0:]) != 1 || le.Uint32(b[4:]) != 7 || le.Uint32(b[8:]) != 3 || le.Uint32(b[12:]) != 0 {
		t.Fatalf("CUmemAccessDesc image % x: want location {DEVICE, 7}, flags PROT_READWRITE (3)", b[:accessDescSize])
	}
}

func TestMulticastDisabled(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{nil, false},
		{map[string]string{"SYMMEM_DISABLE_MULTICAST": "1"}, true},
		{map[string]string{"TORCH_SYMM_MEM_DISABLE_MULTICAST": "true"}, true},
		{map[string]string{"TORCH_SYMM_MEM_DISABLE_MULTICAST": "0"}, false},
		{map[string]string{"SYMMEM_DISABLE_MULTICAST": "off", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "yes"}, true},
		{map[string]string{"SYMMEM_DISABLE_MULTICAST": ""}, false},
	} {
		if got := multicastDisabled(func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("multicastDisabled(%v) = %v, want %v", c.env, got, c.want)
		}
	}
}

// fakeErrorNames gives a driver whose error-name entry points answer like
// the real driver for one code.
func fakeErrorNames() *driver {
	name := []byte("CUDA_ERROR_OUT_OF_MEMORY\x00")
	text := []byte("out of memory\x00")
	return &driver{
		cuGetErrorName: func(r cuResult, s **byte) cuResult {
			if r != 2 {
				return 1
			}
			*s = &name[0]
			return cuSuccess
		},
		cuGetErrorString: func(r cuResult, s **byte) cuResult {
			if r != 2 {
				return 1
			}
			*s = &text[0]
			return cuSuccess
		},
	}
}

func TestDriverError(t *testing.T) {
	d := fakeErrorNames()
	if err := d.check("cuMemCreate", cuSuccess); err != nil {
		t.Fatalf("success: %v", err)
	}
	err := d.check("cuMemCreate", 2)
	if err == nil || err.Error() != "cuMemCreate: CUDA_ERROR_OUT_OF_MEMORY (out of memory)" {
		t.Fatalf("error = %v", err)
	}
	var de *DriverError
	if !errors.As(err, &de) || de.Code != 2 {
		t.Fatalf("error %v is not a *DriverError with code 2", err)
	}
	if err := d.check("cuInit", 999); err == nil || err.Error() != "cuInit: CUDA_ERROR_999 (unknown error)" {
		t.Fatalf("unnamed code: %v", err)
	}
}

func TestTakeError(t *testing.T) {
	rec := make([]uint64, recordBytes/8)
	st := &stream{rec: unsafe.Pointer(&rec[0]), launches: 5}
	back := &device.Group{Name: "back", Ranks: []int{2, 3}}
	st.names[3] = launchLabel{kernel: kernels.WaitSignal, group: back}
	buf := unsafe.Slice((*byte)(st.rec), kernels.ErrorRecordSize)
	if st.takeError() != nil {
		t.Fatal("clear record reported an error")
	}
	copy(buf, kernels.EncodeErrorRecord(kernels.ErrorRecord{Launch: 3, Reason: kernels.ReasonWaitTimeout,
		Rank: 0, Peer: 1, Channel: 2, Slot: 5, Pad: 0, TimeoutNs: int64(time.Millisecond)}))
	err := st.takeError()
	want := &device.KernelError{Kernel: kernels.WaitSignal, Peer: 1, Channel: 2, Slot: 5, Timeout: time.Millisecond,
		Reason: "wait timed out (no signal arrived)", Group: back}
	if err == nil || *err != *want {
		t.Fatalf("takeError = %+v, want %+v", err, want)
	}
	const text = `kernel wait_signal: group "back": rank 2 (position 0) block 0: wait timed out (no signal arrived) waiting for rank 3 (position 1) on channel 2 (pad slot 5) after 1ms`
	if err.Error() != text {
		t.Fatalf("takeError's text:\n%s\nwant\n%s", err, text)
	}
	if st.takeError() != nil {
		t.Fatal("record not cleared after it was taken")
	}
	// A launch the ring no longer remembers is reported without a name.
	copy(buf, kernels.EncodeErrorRecord(kernels.ErrorRecord{Launch: 5, Reason: kernels.ReasonWaitTimeout}))
	if err := st.takeError(); err == nil || err.Kernel != "unknown kernel" {
		t.Fatalf("future launch: %+v", err)
	}
}

func TestLaunchChecksArgumentsFirst(t *testing.T) {
	// A device without a driver: a call that reached the driver would
	// panic.
	g := &gpu{}
	args := kernels.AllReduceArgs{World: 2, BufferPtrs: 8, PadPtrs: 8, PadBytes: 64, Numel: 4, Output: 0x100}
	for _, c := range []struct {
		l    device.Launch
		want string
	}{
		{device.Launch{Kernel: "nope", Blocks: 1, Threads: 1}, "no C argument layout"},
		{device.Launch{Kernel: kernels.OneShotAllReduce, Blocks: 9, Threads: 32, Args: args}, "has 8 channels"},
		{device.Launch{Kernel: kernels.OneShotAllReduce, Blocks: 1, Threads: 0, Args: args}, "1 to 1024 threads"},
		{device.Launch{Kernel: kernels.OneShotAllReduce, Blocks: 1, Threads: 32, Args: kernels.AllReduceArgs{World: 2, PadBytes: 64}}, "null"},
		{device.Launch{Kernel: kernels.OneShotAllReduce, Blocks: 1, Threads: 32, Args: args}, "unknown stream 1"},
	} {
		err := g.Launch(1, c.l)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Launch(%+v): error %v, want it to contain %q", c.l, err, c.want)
		}
	}
}
