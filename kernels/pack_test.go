package kernels

import (
	"encoding/binary"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/symmem/symmem/device"
)

// headerLayout reads the offsets and sizes that cuda/args.cuh asserts:
// offsets["SignalArgs.rank"] = 16, sizes["SignalArgs"] = 56.
func headerLayout(t *testing.T) (offsets, sizes map[string]int) {
	t.Helper()
	src, err := os.ReadFile("cuda/args.cuh")
	if err != nil {
		t.Fatal(err)
	}
	offsets, sizes = map[string]int{}, map[string]int{}
	off := regexp.MustCompile(`static_assert\(offsetof\((\w+), (\w+)\) == (\d+)`)
	for _, m := range off.FindAllStringSubmatch(string(src), -1) {
		n, _ := strconv.Atoi(m[3])
		offsets[m[1]+"."+m[2]] = n
	}
	size := regexp.MustCompile(`static_assert\(sizeof\((\w+)\) == (\d+)`)
	for _, m := range size.FindAllStringSubmatch(string(src), -1) {
		n, _ := strconv.Atoi(m[2])
		sizes[m[1]] = n
	}
	if len(offsets) == 0 || len(sizes) == 0 {
		t.Fatal("no static_asserts found in cuda/args.cuh")
	}
	return offsets, sizes
}

func TestLayoutsMatchHeader(t *testing.T) {
	offsets, sizes := headerLayout(t)
	for _, c := range []struct {
		cname  string
		fields []field
		size   int
	}{
		{"SignalArgs", signalFields, SignalArgsSize},
		{"AllReduceArgs", allReduceFields, AllReduceArgsSize},
	} {
		if sizes[c.cname] != c.size {
			t.Errorf("sizeof(%s): header asserts %d, Go packs %d", c.cname, sizes[c.cname], c.size)
		}
		asserted := 0
		for k := range offsets {
			if strings.HasPrefix(k, c.cname+".") {
				asserted++
			}
		}
		for _, f := range c.fields {
			if f.goName == "" {
				// Header members: nested in the C struct as h.<name>.
				if want, ok := offsets["LaunchHeader."+f.name]; !ok || want != f.offset {
					t.Errorf("LaunchHeader.%s: header asserts %d (present %v), Go packs at %d", f.name, want, ok, f.offset)
				}
				continue
			}
			want, ok := offsets[c.cname+"."+f.name]
			if !ok {
				t.Errorf("%s.%s: no offset asserted in cuda/args.cuh", c.cname, f.name)
			} else if want != f.offset {
				t.Errorf("%s.%s: header asserts offset %d, Go packs at %d", c.cname, f.name, want, f.offset)
			}
			asserted--
		}
		if asserted != 0 {
			t.Errorf("%s: the header asserts %d members the Go layout does not pack", c.cname, asserted)
		}
		// Fields must not overlap and must fit.
		end := 0
		for _, f := range c.fields {
			if f.offset < end || f.offset+f.size > c.size || f.offset%f.size != 0 {
				t.Errorf("%s.%s at %d (+%d) overlaps, is misaligned or overruns %d bytes", c.cname, f.name, f.offset, f.size, c.size)
			}
			end = f.offset + f.size
		}
	}
	if sizes["LaunchHeader"] != 16 {
		t.Errorf("sizeof(LaunchHeader) = %d, want 16", sizes["LaunchHeader"])
	}
	if sizes["ErrorRecord"] != ErrorRecordSize {
		t.Errorf("sizeof(ErrorRecord) = %d, ErrorRecordSize = %d", sizes["ErrorRecord"], ErrorRecordSize)
	}
}

// TestLayoutsCoverGoStructs fails when a field is added to an argument
// struct without a place in the C layout.
func TestLayoutsCoverGoStructs(t *testing.T) {
	for _, c := range []struct {
		typ    reflect.Type
		fields []field
	}{
		{reflect.TypeOf(SignalArgs{}), signalFields},
		{reflect.TypeOf(AllReduceArgs{}), allReduceFields},
	} {
		packed := map[string]int{}
		for _, f := range c.fields {
			if f.goName != "" {
				packed[f.goName]++
			}
		}
		for i := 0; i < c.typ.NumField(); i++ {
			sf := c.typ.Field(i)
			if packed[sf.Name] != 1 {
				t.Errorf("%s.%s is packed %d times, want once (add it to cuda/args.cuh and pack.go)", c.typ.Name(), sf.Name, packed[sf.Name])
			}
			delete(packed, sf.Name)
		}
		for name := range packed {
			t.Errorf("layout of %s packs %s, which the Go struct lacks", c.typ.Name(), name)
		}
	}
}

func u32(b []byte, off int) uint32 { return binary.LittleEndian.Uint32(b[off:]) }
func u64(b []byte, off int) uint64 { return binary.LittleEndian.Uint64(b[off:]) }

func TestPackAllReduce(t *testing.T) {
	offsets, _ := headerLayout(t)
	o := func(m string) int { return offsets["AllReduceArgs."+m] }
	a := AllReduceArgs{
		Rank: 3, World: 4, DType: device.BFloat16, Op: device.Max,
		BufferPtrs: 0x7f0000001000, PadPtrs: 0x7f0000002000, PadBytes: 4096,
		Offset: 16, Numel: 8192, Output: 0x7f0000400000, TimeoutNs: int64(3 * time.Second),
	}
	h := LaunchHeader{ErrorRecord: 0x7e0000000040, Launch: 77}
	for _, kernel := range []string{OneShotAllReduce, TwoShotAllReduce} {
		args := any(a)
		if kernel == TwoShotAllReduce {
			args = &a // pointers are accepted too
		}
		b, err := Pack(h, kernel, args)
		if err != nil {
			t.Fatalf("%s: %v", kernel, err)
		}
		if len(b) != AllReduceArgsSize {
			t.Fatalf("%s: packed %d bytes, want %d", kernel, len(b), AllReduceArgsSize)
		}
		checks := []struct {
			name      string
			got, want uint64
		}{
			{"h.err", u64(b, offsets["LaunchHeader.err"]), h.ErrorRecord},
			{"h.launch", uint64(u32(b, offsets["LaunchHeader.launch"])), 77},
			{"h.reserved", uint64(u32(b, offsets["LaunchHeader.reserved"])), 0},
			{"rank", uint64(u32(b, o("rank"))), 3},
			{"world", uint64(u32(b, o("world"))), 4},
			{"dtype", uint64(u32(b, o("dtype"))), 1},
			{"op", uint64(u32(b, o("op"))), 2},
			{"buffer_ptrs", u64(b, o("buffer_ptrs")), 0x7f0000001000},
			{"pad_ptrs", u64(b, o("pad_ptrs")), 0x7f0000002000},
			{"pad_bytes", u64(b, o("pad_bytes")), 4096},
			{"offset", u64(b, o("offset")), 16},
			{"numel", u64(b, o("numel")), 8192},
			{"input", u64(b, o("input")), 0},
			{"output", u64(b, o("output")), 0x7f0000400000},
			{"timeout_ns", u64(b, o("timeout_ns")), 3e9},
		}
		for _, c := range checks {
			if c.got != c.want {
				t.Errorf("%s: %s = %#x, want %#x", kernel, c.name, c.got, c.want)
			}
		}
	}
}

func TestPackSignal(t *testing.T) {
	offsets, _ := headerLayout(t)
	o := func(m string) int { return offsets["SignalArgs."+m] }
	a := SignalArgs{Rank: 1, World: 2, Peer: 0, Channel: 5, PadPtrs: 0x7f00000a0000, PadBytes: 1 << 20}
	for _, kernel := range []string{PutSignal, WaitSignal, Barrier} {
		b, err := Pack(LaunchHeader{Launch: 0xfffffffe}, kernel, a)
		if err != nil {
			t.Fatalf("%s: %v", kernel, err)
		}
		if len(b) != SignalArgsSize {
			t.Fatalf("%s: packed %d bytes, want %d", kernel, len(b), SignalArgsSize)
		}
		if u64(b, 0) != 0 || u32(b, 8) != 0xfffffffe || u32(b, o("rank")) != 1 || u32(b, o("world")) != 2 ||
			u32(b, o("peer")) != 0 || u32(b, o("channel")) != 5 || u64(b, o("pad_ptrs")) != 0x7f00000a0000 ||
			u64(b, o("pad_bytes")) != 1<<20 || u64(b, o("timeout_ns")) != 0 {
			t.Errorf("%s: packed % x", kernel, b)
		}
	}
}

func TestSetHeader(t *testing.T) {
	offsets, _ := headerLayout(t)
	b, err := Pack(LaunchHeader{}, Barrier, SignalArgs{World: 2, PadPtrs: 0x1000, PadBytes: 64, Channel: 3})
	if err != nil {
		t.Fatal(err)
	}
	before := append([]byte(nil), b...)
	if err := SetHeader(b, LaunchHeader{ErrorRecord: 0xdead0000, Launch: 42}); err != nil {
		t.Fatal(err)
	}
	if u64(b, offsets["LaunchHeader.err"]) != 0xdead0000 || u32(b, offsets["LaunchHeader.launch"]) != 42 {
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
	good := SignalArgs{Rank: 0, World: 2, Peer: 1, PadPtrs: 0x1000, PadBytes: 64}
	for _, c := range []struct {
		kernel string
		args   any
		want   string
	}{
		{"nope", good, "unknown kernel"},
		{PutSignal, AllReduceArgs{}, "want kernels.SignalArgs"},
		{PutSignal, (*SignalArgs)(nil), "want kernels.SignalArgs"},
		{OneShotAllReduce, good, "want kernels.AllReduceArgs"},
		{PutSignal, SignalArgs{Rank: 2, World: 2, PadPtrs: 0x1000, PadBytes: 64}, "rank 2 out of range"},
		{PutSignal, SignalArgs{World: 2, Peer: 1, Channel: 8, PadPtrs: 0x1000, PadBytes: 64}, "channel 8 out of range"},
		{OneShotAllReduce, AllReduceArgs{World: 2, BufferPtrs: 8, PadPtrs: 8, PadBytes: 64, Offset: 2, Numel: 4, Output: 0x100}, "offset"},
	} {
		_, err := Pack(LaunchHeader{}, c.kernel, c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Pack(%s, %T): error %v, want it to contain %q", c.kernel, c.args, err, c.want)
		}
	}
}

func TestCheckLaunch(t *testing.T) {
	ar := AllReduceArgs{World: 4, PadBytes: 4 * 4 * 24}
	sig := SignalArgs{World: 8}
	for _, c := range []struct {
		kernel          string
		blocks, threads int
		args            any
		want            string // "" for success
	}{
		{OneShotAllReduce, 24, 512, ar, ""},
		{OneShotAllReduce, 25, 512, ar, "has 24 channels"},
		{OneShotAllReduce, 1, 1024, ar, "at most 512"},
		{TwoShotAllReduce, 24, 1024, ar, ""},
		{TwoShotAllReduce, 1, 2, ar, "one per rank"},
		{TwoShotAllReduce, 0, 32, ar, "launch of 0 blocks"},
		{TwoShotAllReduce, 1, 2048, ar, "1 to 1024 threads"},
		{Barrier, 1, 8, sig, ""},
		{Barrier, 1, 4, sig, "one per rank"},
		{PutSignal, 1, 1, sig, ""},
		{PutSignal, 1, 1, ar, "want kernels.SignalArgs"},
		{"nope", 1, 1, sig, "no C argument layout"},
	} {
		err := CheckLaunch(c.kernel, c.blocks, c.threads, c.args)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("CheckLaunch(%s, %d, %d): %v", c.kernel, c.blocks, c.threads, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("CheckLaunch(%s, %d, %d): error %v, want it to contain %q", c.kernel, c.blocks, c.threads, err, c.want)
		}
	}
}

func TestErrorRecord(t *testing.T) {
	offsets, _ := headerLayout(t)
	r := ErrorRecord{Launch: 9, Reason: ReasonPutTimeout, Rank: 1, Block: 3, Peer: 2, Channel: 3, Slot: 13, Pad: 2,
		Value: 1, TimeoutNs: int64(time.Second), ElapsedNs: 1000000123}
	b := EncodeErrorRecord(r)
	o := func(m string) int { return offsets["ErrorRecord."+m] }
	if u32(b, o("state")) != recordStateWritten || u32(b, o("launch")) != 9 || u32(b, o("reason")) != ReasonPutTimeout ||
		u32(b, o("rank")) != 1 || u32(b, o("block")) != 3 || u32(b, o("peer")) != 2 || u32(b, o("channel")) != 3 ||
		u32(b, o("slot")) != 13 || u32(b, o("pad")) != 2 || u32(b, o("value")) != 1 ||
		u64(b, o("timeout_ns")) != uint64(time.Second) || u64(b, o("elapsed_ns")) != 1000000123 {
		t.Fatalf("encoded record does not follow cuda/args.cuh: % x", b)
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
	ke := got.KernelError(Barrier)
	want := &device.KernelError{Kernel: Barrier, Rank: 1, Block: 3, Peer: 2, Channel: 3, Slot: 13, Timeout: time.Second,
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

func TestReasonsMatchHeader(t *testing.T) {
	src, err := os.ReadFile("cuda/args.cuh")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{
		"kWaitTimeout": ReasonWaitTimeout, "kPutTimeout": ReasonPutTimeout, "kPutCorrupt": ReasonPutCorrupt,
		"kWaitCorrupt": ReasonWaitCorrupt, "kNullPointer": ReasonNullPointer, "kMisaligned": ReasonMisaligned,
		"kOutputAlias": ReasonOutputAlias, "kDataTimeout": ReasonDataTimeout, "kWrongEntry": ReasonWrongEntry,
	}
	re := regexp.MustCompile(`(k[A-Z]\w+) = (\d+),`)
	found := 0
	for _, m := range re.FindAllStringSubmatch(string(src), -1) {
		w, ok := want[m[1]]
		if !ok {
			t.Errorf("cuda/args.cuh: reason %s has no Go constant", m[1])
			continue
		}
		if n, _ := strconv.Atoi(m[2]); n != w {
			t.Errorf("cuda/args.cuh: %s = %d, Go says %d", m[1], n, w)
		}
		found++
	}
	if found != len(want) {
		t.Errorf("found %d reasons in cuda/args.cuh, want %d", found, len(want))
	}
}
