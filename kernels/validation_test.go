package kernels

import (
	"math"
	"strings"
	"testing"

	"github.com/symmem/symmem/device"
)

// TestCheckLowLatency: the low-latency kernel's own rules on top of the
// all-reduce checks, each named in its error.
func TestCheckLowLatency(t *testing.T) {
	ll, _ := Lookup(LowLatencyAllReduce)
	slot, _ := LowLatencyWorkspace(64, 4)
	good := AllReduceArgs{Rank: 1, World: 4, DType: device.Float32, Op: device.Sum, BufferPtrs: 0x1000, PadPtrs: 0x2000,
		PadBytes: 4096, Offset: 256, Numel: 16, Input: 0x3000, Output: 0x4000, SlotBytes: slot}
	if err := ll.Check(good); err != nil {
		t.Fatalf("valid arguments: %v", err)
	}
	same := good
	same.Output = same.Input
	if err := ll.Check(same); err != nil {
		t.Errorf("Output equal to Input: %v", err)
	}
	for _, c := range []struct {
		name   string
		change func(a *AllReduceArgs)
		want   string
	}{
		{"no input", func(a *AllReduceArgs) { a.Input = 0 }, "kernel ll_all_reduce: Input and Output are required (Input 0x0, Output 0x4000)"},
		{"no output", func(a *AllReduceArgs) { a.Output = 0 }, "Input and Output are required"},
		{"misaligned input", func(a *AllReduceArgs) { a.Input = 0x3002 }, "kernel ll_all_reduce: Input 0x3002 or Output 0x4000 is not 4-byte aligned"},
		{"offset not a multiple of 8", func(a *AllReduceArgs) { a.Offset = 4 }, "kernel ll_all_reduce: workspace offset 4 or slot stride 128 is not a multiple of 8"},
		{"odd stride", func(a *AllReduceArgs) { a.SlotBytes = 132 }, "slot stride 132 is not a multiple of 8"},
		{"stride too small", func(a *AllReduceArgs) { a.SlotBytes = 64 }, "kernel ll_all_reduce: slot stride 64 bytes cannot hold the packets of 64 bytes (128 needed)"},
		{"workspace overflows", func(a *AllReduceArgs) { a.Numel = 2; a.SlotBytes = math.MaxUint64 / 4 &^ 7 },
			"kernel ll_all_reduce: workspace of 2 x 4 slots of"},
		{"bad dtype first", func(a *AllReduceArgs) { a.DType = 9; a.Input = 0 }, "kernel ll_all_reduce: unsupported dtype"},
	} {
		a := good
		c.change(&a)
		if err := ll.Check(a); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

func TestLowLatencyWorkspace(t *testing.T) {
	for _, c := range []struct {
		maxBytes    uint64
		world       int
		slot, total uint64
	}{
		{64, 4, 128, 2*4*128 + LowLatencyControlBytes},
		{3, 2, 8, 2*2*8 + LowLatencyControlBytes}, // 2*3 rounded up to 8
		{256 << 10, 8, 512 << 10, 2*8*(512<<10) + LowLatencyControlBytes},
		{0, 2, 0, LowLatencyControlBytes},
	} {
		slot, total := LowLatencyWorkspace(c.maxBytes, c.world)
		if slot != c.slot || total != c.total {
			t.Errorf("LowLatencyWorkspace(%d, %d) = %d, %d; want %d, %d", c.maxBytes, c.world, slot, total, c.slot, c.total)
		}
	}
}

// TestLowLatencyShape: a 4-byte word per thread, up to 512 threads, then
// blocks up to the kernel's limit, the one given and the multiprocessors.
func TestLowLatencyShape(t *testing.T) {
	for _, c := range []struct {
		numel           uint64
		dt              device.DType
		sm, maxBlocks   int
		blocks, threads int
	}{
		{1, device.BFloat16, 132, 0, 1, 32},
		{64, device.BFloat16, 132, 0, 1, 32},        // 32 words
		{1000, device.Float32, 132, 0, 2, 512},      // 1000 words
		{1 << 20, device.Float32, 132, 0, 128, 512}, // the kernel's limit
		{1 << 20, device.Float32, 100, 0, 100, 512}, // the multiprocessors
		{1 << 20, device.Float32, 132, 16, 16, 512}, // a limit given
		{1 << 20, device.Float32, 0, 0, 128, 512},   // no multiprocessor cap
		{0, device.Float32, 132, 0, 1, 32},          // nothing still launches one warp
		{math.MaxUint64, device.Float32, 132, 0, 1, 32},
	} {
		b, th := ShapeMax(LowLatencyAllReduce, c.numel, c.dt, 4, c.sm, c.maxBlocks)
		if b != c.blocks || th != c.threads {
			t.Errorf("ll shape of %d %v (sm %d, max %d) = %d x %d, want %d x %d", c.numel, c.dt, c.sm, c.maxBlocks, b, th, c.blocks, c.threads)
		}
	}
	if b, th := Shape("all_to_all", 1024, device.Float32, 4, 132); b != 0 || th != 0 {
		t.Errorf("shape of an unknown kernel = %d x %d, want 0 x 0", b, th)
	}
	// A block limit replaces the one-shot and two-shot limits too.
	if b, _ := ShapeMax(TwoShotAllReduce, 1<<24, device.Float32, 4, 132, 5); b != 5 {
		t.Errorf("two-shot with at most 5 blocks: %d blocks", b)
	}
	if b, _ := ShapeMax(OneShotAllReduce, 1<<24, device.Float32, 4, 132, 0); b != OneShotMaxBlocks {
		t.Errorf("one-shot of a large tensor: %d blocks, want %d", b, OneShotMaxBlocks)
	}
}

// TestSpecialisedEntries: the one-shot and two-shot kernels have entries
// for every dtype at worlds 2, 4 and 8, chosen only for tensors of whole
// 16-byte vectors at a 16-byte offset.
func TestSpecialisedEntries(t *testing.T) {
	ll, _ := Lookup(LowLatencyAllReduce)
	if ll.Specialised() != nil {
		t.Error("ll_all_reduce lists specialised entries")
	}
	good := AllReduceArgs{World: 4, DType: device.BFloat16, Numel: 64, Offset: 32}
	for _, name := range []string{OneShotAllReduce, TwoShotAllReduce} {
		k, _ := Lookup(name)
		sp := k.Specialised()
		if sp == nil || len(sp.DTypes) != 3 || len(sp.Worlds) != 3 || sp.Bounds == 0 || sp.Body == "" {
			t.Fatalf("%s: specialisation %+v", name, sp)
		}
		if dt, w, ok := sp.Match(good); !ok || dt != device.BFloat16 || w != 4 {
			t.Errorf("%s: Match(aligned bf16 world 4) = %v, %d, %v", name, dt, w, ok)
		}
		if _, _, ok := sp.Match(&good); !ok {
			t.Errorf("%s: Match of a pointer to the arguments failed", name)
		}
		for what, a := range map[string]any{
			"no elements":      withAR(good, func(a *AllReduceArgs) { a.Numel = 0 }),
			"offset 8":         withAR(good, func(a *AllReduceArgs) { a.Offset = 8 }),
			"12 bytes":         withAR(good, func(a *AllReduceArgs) { a.Numel = 6 }),
			"bad dtype":        withAR(good, func(a *AllReduceArgs) { a.DType = 7 }),
			"overflowing size": withAR(good, func(a *AllReduceArgs) { a.Numel = math.MaxUint64 / 2 }),
			"signal arguments": SignalArgs{World: 4},
		} {
			if _, _, ok := sp.Match(a); ok {
				t.Errorf("%s: Match(%s) chose a specialised entry", name, what)
			}
		}
	}
}

// TestArgsChecksName: the checks every all-reduce kernel shares, and the
// signal kernels', say what is wrong.
func TestArgsChecksName(t *testing.T) {
	two, _ := Lookup(TwoShotAllReduce)
	ar := AllReduceArgs{Rank: 0, World: 2, DType: device.Float32, Op: device.Sum, BufferPtrs: 0x1000, PadPtrs: 0x2000,
		PadBytes: 4096, Numel: 16}
	for _, c := range []struct {
		name string
		a    AllReduceArgs
		want string
	}{
		{"rank beyond the world", withAR(ar, func(a *AllReduceArgs) { a.Rank = 2 }), "kernel two_shot_all_reduce: rank 2"},
		{"null buffers", withAR(ar, func(a *AllReduceArgs) { a.BufferPtrs = 0 }), "kernel two_shot_all_reduce: BufferPtrs or PadPtrs is null"},
		{"no pad", withAR(ar, func(a *AllReduceArgs) { a.PadBytes = 0 }), "kernel two_shot_all_reduce: PadBytes is 0 (set it to the signal pad size)"},
		{"negative timeout", withAR(ar, func(a *AllReduceArgs) { a.TimeoutNs = -5 }), "kernel two_shot_all_reduce: negative timeout -5ns"},
		{"misaligned output", withAR(ar, func(a *AllReduceArgs) { a.Output = 0x3008 }), "kernel two_shot_all_reduce: Output 0x3008 is not aligned to the 16-byte vector"},
		{"offset overflows", withAR(ar, func(a *AllReduceArgs) { a.Offset = math.MaxUint64 - 8 }), "16 elements at offset 18446744073709551607 overflow the address space"},
	} {
		if err := two.Check(c.a); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	one, _ := Lookup(OneShotAllReduce)
	in := withAR(ar, func(a *AllReduceArgs) { a.Output = 0x3000; a.Input = 0x4004 })
	if err := one.Check(in); err == nil || !strings.Contains(err.Error(), "Input 0x4004 is not aligned to the 16-byte vector") {
		t.Errorf("misaligned one-shot input: %v", err)
	}
	if _, err := CheckAlignment(0, 4, device.DType(9)); err == nil || !strings.Contains(err.Error(), "unsupported dtype") {
		t.Errorf("alignment of a bad dtype: %v", err)
	}
	// Launch shapes against the arguments.
	if err := two.CheckLaunch(1, 1, ar); err == nil || !strings.Contains(err.Error(), "1 threads for world size 2 (one per rank needed)") {
		t.Errorf("two-shot with a thread for a world of 2: %v", err)
	}
	ll, _ := Lookup(LowLatencyAllReduce)
	if err := ll.CheckLaunch(1, 1024, ar); err == nil || !strings.Contains(err.Error(), "1024 threads per block (at most 512)") {
		t.Errorf("ll with 1024 threads: %v", err)
	}
	barrier, _ := Lookup(Barrier)
	if err := barrier.CheckLaunch(1, 2, SignalArgs{World: 4}); err == nil || !strings.Contains(err.Error(), "2 threads for world size 4") {
		t.Errorf("barrier of 4 with 2 threads: %v", err)
	}
	if err := barrier.CheckLaunch(1, 4, ar); err == nil || !strings.Contains(err.Error(), "want kernels.SignalArgs") {
		t.Errorf("barrier launch with all-reduce arguments: %v", err)
	}
	// The bodies convert their arguments too.
	if err := barrier.Run(nil, ar); err == nil || !strings.Contains(err.Error(), "want kernels.SignalArgs") {
		t.Errorf("barrier run with all-reduce arguments: %v", err)
	}
	if _, err := barrier.Pads(ar); err == nil {
		t.Error("pads of the wrong arguments")
	}
}

// TestDecodeErrors: Decode names what is wrong with its input.
func TestDecodeErrors(t *testing.T) {
	if _, err := Decode(device.DType(9), nil); err == nil || !strings.Contains(err.Error(), "unsupported dtype") {
		t.Errorf("Decode of a bad dtype: %v", err)
	}
	if _, err := Decode(device.Float16, []byte{1, 2, 3}); err == nil || !strings.Contains(err.Error(), "3 bytes is not a whole number") {
		t.Errorf("Decode of 3 bytes of fp16: %v", err)
	}
}

// TestPTXIsEmbedded: the embedded PTX is the kernels' PTX: it defines
// every kernel's generic entry point, for the compute capability the
// fatbin's PTX targets.
func TestPTXIsEmbedded(t *testing.T) {
	ptx, err := PTX()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ptx, ".target sm_80") || !strings.Contains(ptx, ".address_size 64") {
		t.Errorf("the PTX does not target sm_80 with 64-bit addresses:\n%.300s", ptx)
	}
	for _, name := range Names() {
		if !strings.Contains(ptx, ".entry "+name+"(") {
			t.Errorf("the PTX has no entry %s", name)
		}
	}
	again, _ := PTX()
	if again != ptx {
		t.Error("PTX() changed between calls")
	}
}
