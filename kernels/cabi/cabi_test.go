package cabi

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
)

// TestHeaderIsFresh fails when kernels/cuda/abi.cuh is not what `go
// generate` writes from the Go declarations.
func TestHeaderIsFresh(t *testing.T) {
	got, err := os.ReadFile(HeaderFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, Header()) {
		t.Fatalf("%s is stale: run go generate ./kernels/cabi (and rebuild the fatbin with scripts/build-fatbin.sh)", HeaderFile)
	}
}

// TestHeaderCompiles checks the generated header as C++17, which checks
// its static_asserts: the offsets Go computes by C's alignment rules are
// the ones a C compiler gives.
func TestHeaderCompiles(t *testing.T) {
	cxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("no g++ to compile the header with (TestLayoutRules checks the offsets without one)")
	}
	path, _ := filepath.Abs(HeaderFile)
	out, err := exec.Command(cxx, "-std=c++17", "-fsyntax-only", "-x", "c++", path).CombinedOutput()
	if err != nil {
		t.Fatalf("g++ -fsyntax-only %s: %v\n%s", HeaderFile, err, out)
	}
}

// TestLayoutRules checks every struct against C's rules independently of
// a compiler: members in order, each aligned, none overlapping, the size
// a multiple of the alignment; the argument structs start with the header.
func TestLayoutRules(t *testing.T) {
	for _, s := range Structs() {
		end := 0
		for _, m := range s.Members {
			if m.Offset < end || m.Offset%m.Align != 0 || m.Offset-end >= m.Align {
				t.Errorf("%s.%s at %d after %d (align %d): not where C puts it", s.Name, m.Name, m.Offset, end, m.Align)
			}
			end = m.Offset + m.Size
		}
		if s.Size < end || s.Size%s.Align != 0 || s.Size-end >= s.Align {
			t.Errorf("%s: size %d for %d bytes of members at alignment %d", s.Name, s.Size, end, s.Align)
		}
	}
	for _, s := range argStructs {
		if s.Members[0].Name != "h" || s.Members[0].Type != "LaunchHeader" || s.Members[0].Offset != 0 {
			t.Errorf("%s does not start with its LaunchHeader", s.Name)
		}
	}
	if errorRecord.Size != ErrorRecordSize {
		t.Errorf("sizeof(ErrorRecord) = %d, ErrorRecordSize = %d", errorRecord.Size, ErrorRecordSize)
	}
	want := map[string]int{"LaunchHeader": 16, "SignalArgs": 56, "AllReduceArgs": 112, "ErrorRecord": 64}
	for _, s := range Structs() {
		if s.Size != want[s.Name] {
			t.Errorf("sizeof(%s) = %d, want %d (the fatbin's kernels were built for it)", s.Name, s.Size, want[s.Name])
		}
	}
}

// TestLayoutsCoverGoStructs fails when a field of an argument struct does
// not reach the packed image, or two fields land on the same bytes: each
// field alone is set to a distinct value and packed.
func TestLayoutsCoverGoStructs(t *testing.T) {
	for _, s := range argStructs {
		seen := map[int]string{}
		for i := 0; i < s.Go.NumField(); i++ {
			f := s.Go.Field(i)
			v := reflect.New(s.Go).Elem()
			switch v.Field(i).Kind() {
			case reflect.Int, reflect.Int32, reflect.Int64:
				v.Field(i).SetInt(int64(0x11 + i))
			case reflect.Uint, reflect.Uint32, reflect.Uint64:
				v.Field(i).SetUint(uint64(0x11 + i))
			default:
				t.Fatalf("%s.%s: kind %v has no C member type", s.Go.Name(), f.Name, v.Field(i).Kind())
			}
			b := s.pack(LaunchHeader{}, v.Interface())
			at := -1
			for off, x := range b {
				if x != 0 {
					if at >= 0 || x != byte(0x11+i) {
						t.Errorf("%s.%s: packed as % x", s.Go.Name(), f.Name, b)
					}
					at = off
				}
			}
			if at < 0 {
				t.Errorf("%s.%s is not packed (declare its C member in kernels/cabi)", s.Go.Name(), f.Name)
			} else if other, dup := seen[at]; dup {
				t.Errorf("%s.%s and %s both land at byte %d", s.Go.Name(), f.Name, other, at)
			}
			seen[at] = f.Name
		}
	}
	for _, n := range kernels.Names() {
		k, _ := kernels.Lookup(n)
		if _, err := argStruct(k); err != nil {
			t.Error(err)
		}
	}
}

// TestEnumsCoverGo: every valid dtype and reduce op crosses the ABI under
// its Go value, and nothing else does.
func TestEnumsCoverGo(t *testing.T) {
	enums := Enums()
	values := func(e Enum) map[int64]bool {
		m := map[int64]bool{}
		for _, v := range e.Values {
			m[v.Value] = true
		}
		return m
	}
	dt, op := values(enums[0]), values(enums[1])
	for i := range int64(64) {
		if device.DType(i).Valid() != dt[i] {
			t.Errorf("dtype %d: valid %v, in the C enum %v", i, device.DType(i).Valid(), dt[i])
		}
		if device.ReduceOp(i).Valid() != op[i] {
			t.Errorf("reduce op %d: valid %v, in the C enum %v", i, device.ReduceOp(i).Valid(), op[i])
		}
	}
	if len(enums[2].Values) != ReasonWrongEntry {
		t.Errorf("%d error reasons in the C enum, want %d", len(enums[2].Values), ReasonWrongEntry)
	}
	for i, v := range enums[2].Values {
		if v.Value != int64(i+1) {
			t.Errorf("reason %s = %d, want %d", v.Name, v.Value, i+1)
		}
	}
}

func u32At(b []byte, off int) uint32 { return binary.LittleEndian.Uint32(b[off:]) }
func u64At(b []byte, off int) uint64 { return binary.LittleEndian.Uint64(b[off:]) }

func TestPackAllReduce(t *testing.T) {
	o := allReduceArgs.Offset
	a := kernels.AllReduceArgs{
		Rank: 3, World: 4, DType: device.BFloat16, Op: device.Max,
		BufferPtrs: 0x7f0000001000, PadPtrs: 0x7f0000002000, PadBytes: 4096,
		Offset: 16, Numel: 8192, Output: 0x7f0000400000, TimeoutNs: int64(3 * time.Second),
	}
	h := LaunchHeader{ErrorRecord: 0x7e0000000040, Launch: 77}
	for _, kernel := range []string{kernels.OneShotAllReduce, kernels.TwoShotAllReduce} {
		args := any(a)
		if kernel == kernels.TwoShotAllReduce {
			args = &a // pointers are accepted too
		}
		b, err := Pack(h, kernel, args)
		if err != nil {
			t.Fatalf("%s: %v", kernel, err)
		}
		if len(b) != 112 {
			t.Fatalf("%s: packed %d bytes, want 112", kernel, len(b))
		}
		for _, c := range []struct {
			name      string
			got, want uint64
		}{
			{"h.err", u64At(b, 0), h.ErrorRecord},
			{"h.launch", uint64(u32At(b, 8)), 77},
			{"h.reserved", uint64(u32At(b, 12)), 0},
			{"rank", uint64(u32At(b, o("rank"))), 3},
			{"world", uint64(u32At(b, o("world"))), 4},
			{"dtype", uint64(u32At(b, o("dtype"))), 1},
			{"op", uint64(u32At(b, o("op"))), 2},
			{"buffer_ptrs", u64At(b, o("buffer_ptrs")), 0x7f0000001000},
			{"pad_ptrs", u64At(b, o("pad_ptrs")), 0x7f0000002000},
			{"pad_bytes", u64At(b, o("pad_bytes")), 4096},
			{"offset", u64At(b, o("offset")), 16},
			{"numel", u64At(b, o("numel")), 8192},
			{"input", u64At(b, o("input")), 0},
			{"output", u64At(b, o("output")), 0x7f0000400000},
			{"timeout_ns", u64At(b, o("timeout_ns")), 3e9},
		} {
			if c.got != c.want {
				t.Errorf("%s: %s = %#x, want %#x", kernel, c.name, c.got, c.want)
			}
		}
	}
}

func TestPackSignal(t *testing.T) {
	o := signalArgs.Offset
	a := kernels.SignalArgs{Rank: 1, World: 2, Peer: 0, Channel: 5, PadPtrs: 0x7f00000a0000, PadBytes: 1 << 20}
	for _, kernel := range []string{kernels.PutSignal, kernels.WaitSignal, kernels.Barrier} {
		b, err := Pack(LaunchHeader{Launch: 0xfffffffe}, kernel, a)
		if err != nil {
			t.Fatalf("%s: %v", kernel, err)
		}
		if len(b) != 56 {
			t.Fatalf("%s: packed %d bytes, want 56", kernel, len(b))
		}
		if u64At(b, 0) != 0 || u32At(b, 8) != 0xfffffffe || u32At(b, o("rank")) != 1 || u32At(b, o("world")) != 2 ||
			u32At(b, o("peer")) != 0 || u32At(b, o("channel")) != 5 || u64At(b, o("pad_ptrs")) != 0x7f00000a0000 ||
			u64At(b, o("pad_bytes")) != 1<<20 || u64At(b, o("timeout_ns")) != 0 {
			t.Errorf("%s: packed % x", kernel, b)
		}
	}
}

func TestSetHeader(t *testing.T) {
	b, err := Pack(LaunchHeader{}, kernels.Barrier, kernels.SignalArgs{World: 2, PadPtrs: 0x1000, PadBytes: 64, Channel: 3})
	if err != nil {
		t.Fatal(err)
	}
	before := append([]byte(nil), b...)
	if err := SetHeader(b, LaunchHeader{ErrorRecord: 0xdead0000, Launch: 42}); err != nil {
		t.Fatal(err)
	}
	if u64At(b, launchHeader.Offset("err")) != 0xdead0000 || u32At(b, launchHeader.Offset("launch")) != 42 {
		t.Fatalf("header not written: % x", b[:16])
	}
	if string(b[16:]) != string(before[16:]) {
		t.Fatal("SetHeader changed the arguments after the header")
	}
	if err := SetHeader(make([]byte, 8), LaunchHeader{}); err == nil {
		t.Fatal("SetHeader on 8 bytes: no error")
	}
}

func TestPackRejects(t *testing.T) {
	good := kernels.SignalArgs{Rank: 0, World: 2, Peer: 1, PadPtrs: 0x1000, PadBytes: 64}
	for _, c := range []struct {
		kernel string
		args   any
		want   string
	}{
		{"nope", good, "unknown kernel"},
		{kernels.PutSignal, kernels.AllReduceArgs{}, "want kernels.SignalArgs"},
		{kernels.PutSignal, (*kernels.SignalArgs)(nil), "want kernels.SignalArgs"},
		{kernels.OneShotAllReduce, good, "want kernels.AllReduceArgs"},
		{kernels.PutSignal, kernels.SignalArgs{Rank: 2, World: 2, PadPtrs: 0x1000, PadBytes: 64}, "rank 2 out of range"},
		{kernels.PutSignal, kernels.SignalArgs{World: 2, Peer: 1, Channel: 8, PadPtrs: 0x1000, PadBytes: 64}, "channel 8 out of range"},
		{kernels.OneShotAllReduce, kernels.AllReduceArgs{World: 2, BufferPtrs: 8, PadPtrs: 8, PadBytes: 64, Offset: 2, Numel: 4, Output: 0x100}, "offset"},
	} {
		_, err := Pack(LaunchHeader{}, c.kernel, c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Pack(%s, %T): error %v, want it to contain %q", c.kernel, c.args, err, c.want)
		}
	}
}

// TestPrepare: one call checks the arguments and the shape, packs and
// picks the entry.
func TestPrepare(t *testing.T) {
	a := kernels.AllReduceArgs{World: 4, DType: device.BFloat16, BufferPtrs: 8, PadPtrs: 8, PadBytes: 4 * 4 * 24,
		Offset: 64, Numel: 1024, Output: 0x1000}
	l, err := Prepare(kernels.OneShotAllReduce, 2, 512, &a)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := Pack(LaunchHeader{}, kernels.OneShotAllReduce, a)
	if l.Entry != "one_shot_all_reduce_bf16_w4" || !bytes.Equal(l.Args, want) {
		t.Errorf("Prepare = %q, % x; want the bf16 w4 entry and % x", l.Entry, l.Args, want)
	}
	for _, c := range []struct {
		kernel          string
		blocks, threads int
		args            any
		want            string
	}{
		{kernels.OneShotAllReduce, 25, 512, a, "has 24 channels"},
		{kernels.OneShotAllReduce, 1, 512, kernels.SignalArgs{}, "want kernels.AllReduceArgs"},
		{kernels.OneShotAllReduce, 1, 512, kernels.AllReduceArgs{World: 4, DType: 9}, "dtype"},
		{"nope", 1, 1, a, "unknown kernel"},
	} {
		if _, err := Prepare(c.kernel, c.blocks, c.threads, c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Prepare(%s, %d, %d, %T): %v, want an error containing %q", c.kernel, c.blocks, c.threads, c.args, err, c.want)
		}
	}
}

func TestErrorRecord(t *testing.T) {
	o := errorRecord.Offset
	r := ErrorRecord{Launch: 9, Reason: ReasonPutTimeout, Rank: 1, Block: 3, Peer: 2, Channel: 3, Slot: 13, Pad: 2,
		Value: 1, TimeoutNs: int64(time.Second), ElapsedNs: 1000000123}
	b := errorRecord.pack(LaunchHeader{}, r) // as a kernel writes it
	if len(b) != ErrorRecordSize || u32At(b, o("state")) != recordStateWritten || u32At(b, o("launch")) != 9 ||
		u32At(b, o("reason")) != ReasonPutTimeout || u32At(b, o("rank")) != 1 || u32At(b, o("block")) != 3 ||
		u32At(b, o("peer")) != 2 || u32At(b, o("channel")) != 3 || u32At(b, o("slot")) != 13 || u32At(b, o("pad")) != 2 ||
		u32At(b, o("value")) != 1 || u64At(b, o("timeout_ns")) != uint64(time.Second) || u64At(b, o("elapsed_ns")) != 1000000123 {
		t.Fatalf("encoded record does not follow the C layout: % x", b)
	}
	got, ok := DecodeErrorRecord(b)
	if !ok || got != r {
		t.Fatalf("DecodeErrorRecord = %+v, %v; want %+v", got, ok, r)
	}
	if _, ok := DecodeErrorRecord(make([]byte, ErrorRecordSize)); ok {
		t.Fatal("a zero record decodes as set")
	}
	if _, ok := DecodeErrorRecord(b[:8]); ok {
		t.Fatal("a short record decodes as set")
	}
	ke := got.KernelError(kernels.Barrier)
	want := &device.KernelError{Kernel: kernels.Barrier, Rank: 1, Block: 3, Peer: 2, Channel: 3, Slot: 13, Timeout: time.Second,
		Reason: "put timed out (previous signal still pending in pad of rank 2)"}
	if *ke != *want {
		t.Fatalf("KernelError = %+v, want %+v", ke, want)
	}
	for reason, text := range map[uint32]string{
		ReasonWaitTimeout: "wait timed out (no signal arrived)",
		ReasonPutCorrupt:  "put found pad of rank 2 slot holding 0x00000001",
		ReasonWaitCorrupt: "wait found pad of rank 2 slot holding 0x00000001",
		ReasonNullPointer: "pointer array entry of rank 2 is null",
		ReasonMisaligned:  "not aligned to the 1-byte vector",
		ReasonOutputAlias: "Output overlaps",
		ReasonDataTimeout: "data of call 1 did not arrive",
		ReasonWrongEntry:  "not the one its entry point was built for",
		99:                "unknown error reason 99",
	} {
		r.Reason = reason
		if got := r.KernelError("k").Reason; !strings.Contains(got, text) {
			t.Errorf("reason %d: %q, want it to contain %q", reason, got, text)
		}
	}
}

func TestEntry(t *testing.T) {
	base := kernels.AllReduceArgs{World: 4, DType: device.BFloat16, Offset: 64, Numel: 1024}
	one, two := kernels.OneShotAllReduce, kernels.TwoShotAllReduce
	for _, c := range []struct {
		name   string
		kernel string
		edit   func(*kernels.AllReduceArgs)
		want   string
	}{
		{"two-shot bf16 w4", two, nil, "two_shot_all_reduce_bf16_w4"},
		{"one-shot f32 w2", one, func(a *kernels.AllReduceArgs) { a.DType, a.World = device.Float32, 2 }, "one_shot_all_reduce_f32_w2"},
		{"f16 w8", two, func(a *kernels.AllReduceArgs) { a.DType, a.World = device.Float16, 8 }, "two_shot_all_reduce_f16_w8"},
		{"world 3", two, func(a *kernels.AllReduceArgs) { a.World = 3 }, two},
		{"world 16", one, func(a *kernels.AllReduceArgs) { a.World = 16 }, one},
		{"8-byte offset", two, func(a *kernels.AllReduceArgs) { a.Offset = 8 }, two},
		{"8-byte size", two, func(a *kernels.AllReduceArgs) { a.Numel = 1020 }, two},
		{"empty", two, func(a *kernels.AllReduceArgs) { a.Numel = 0 }, two},
		{"bad dtype", two, func(a *kernels.AllReduceArgs) { a.DType = 9 }, two},
		{"overflowing size", two, func(a *kernels.AllReduceArgs) { a.Numel = 1 << 63 }, two},
		{"low latency", kernels.LowLatencyAllReduce, nil, kernels.LowLatencyAllReduce},
		{"barrier", kernels.Barrier, nil, kernels.Barrier},
		{"unknown", "nope", nil, "nope"},
	} {
		a := base
		if c.edit != nil {
			c.edit(&a)
		}
		if got := Entry(c.kernel, a); got != c.want {
			t.Errorf("%s: Entry = %q, want %q", c.name, got, c.want)
		}
		if got := Entry(c.kernel, &a); got != c.want {
			t.Errorf("%s (pointer args): Entry = %q, want %q", c.name, got, c.want)
		}
	}
	if got := Entry(two, kernels.SignalArgs{}); got != two {
		t.Errorf("signal args: Entry = %q, want the generic entry", got)
	}
}

// TestEntriesMatchSource: every entry Entries lists is defined by the CUDA
// source: the generic ones by name, the specialised ones by the generated
// X-macro, which kernels.cu expands.
func TestEntriesMatchSource(t *testing.T) {
	src, err := os.ReadFile("../cuda/kernels.cu")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^SYMMEM_SPECIALISED_ENTRIES\(SYMMEM_ENTRY\)$`).Match(src) {
		t.Error("kernels.cu does not expand SYMMEM_SPECIALISED_ENTRIES")
	}
	var generic []string
	for _, m := range regexp.MustCompile(`extern "C" __global__ void __launch_bounds__\(\d+\) (\w+)\(`).FindAllSubmatch(src, -1) {
		generic = append(generic, string(m[1]))
	}
	slices.Sort(generic)
	if !slices.Equal(generic, kernels.Names()) {
		t.Errorf("kernels.cu defines the generic entries %v, the registry has %v", generic, kernels.Names())
	}
	special := map[string]bool{}
	for _, e := range SpecialEntries() {
		special[e.Name] = true
		if !bytes.Contains(Header(), []byte("X("+e.Name+", ")) {
			t.Errorf("the header lacks %s", e.Name)
		}
	}
	if len(special) != 18 {
		t.Errorf("%d specialised entries, want 18 (two kernels x 3 dtypes x 3 worlds)", len(special))
	}
	for _, e := range Entries() {
		if !special[e] && !slices.Contains(generic, e) {
			t.Errorf("Entries lists %s, which no source defines", e)
		}
	}
}
