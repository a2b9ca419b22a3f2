package cabi

import (
	"encoding/binary"
	"fmt"
	"reflect"

	"github.com/symmem/symmem/kernels"
)

// Member is one member of a C struct of the ABI, placed by C's alignment
// rules (scalars and pointers aligned to their size, a nested struct to
// its largest member).
type Member struct {
	Name    string // C member name
	Type    string // C type
	Size    int    // bytes: 4, 8, or a nested struct's size
	Align   int
	Offset  int
	Comment string
	// get reads the member's value from the Go struct the C struct
	// mirrors (given as its value, not a pointer); nil for members that
	// carry no Go field (the header, reserved words).
	get func(v any) uint64
}

// Struct is the layout of one C struct of the ABI, declared once in Go:
// the generated header (cuda/abi.cuh) defines it from this and asserts
// every offset, and [Pack] writes its byte image from it.
type Struct struct {
	Name    string // C name
	Doc     string // comment above the C definition
	Members []Member
	Size    int
	Align   int
	// Go is the Go struct it mirrors (nil for LaunchHeader).
	Go reflect.Type
}

// member is one member of a Struct mirroring Go struct A, before layout.
type member[A any] struct {
	name, ctype string
	size, align int // align 0: the size
	comment     string
	get         func(a A) uint64
}

// withComment adds a trailing comment to the member's C definition.
func (m member[A]) withComment(c string) member[A] { m.comment = c; return m }

func i32[A any](name string, get func(A) int32) member[A] {
	return member[A]{name: name, ctype: "int32_t", size: 4, get: func(a A) uint64 { return uint64(uint32(get(a))) }}
}

func u32[A any](name string, get func(A) uint32) member[A] {
	return member[A]{name: name, ctype: "uint32_t", size: 4, get: func(a A) uint64 { return uint64(get(a)) }}
}

func i64[A any](name string, get func(A) int64) member[A] {
	return member[A]{name: name, ctype: "int64_t", size: 8, get: func(a A) uint64 { return uint64(get(a)) }}
}

func u64[A any](name string, get func(A) uint64) member[A] {
	return member[A]{name: name, ctype: "uint64_t", size: 8, get: get}
}

// ptr is a device pointer member of C type ctype.
func ptr[A any](name, ctype string, get func(A) uint64) member[A] {
	return member[A]{name: name, ctype: ctype, size: 8, get: get}
}

// reserved is a 4-byte member no Go field fills (always 0).
func reserved[A any](name string) member[A] {
	return member[A]{name: name, ctype: "uint32_t", size: 4}
}

// nested is a member holding the struct s.
func nested[A any](name string, s *Struct) member[A] {
	return member[A]{name: name, ctype: s.Name, size: s.Size, align: s.Align}
}

// layout places ms by C's rules: each member at the next multiple of its
// alignment, the struct's size a multiple of its largest alignment.
func layout[A any](name, doc string, goType reflect.Type, ms ...member[A]) *Struct {
	s := &Struct{Name: name, Doc: doc, Align: 1, Go: goType}
	off := 0
	for _, m := range ms {
		align := m.size
		if m.align != 0 {
			align = m.align
		}
		off = (off + align - 1) / align * align
		mem := Member{Name: m.name, Type: m.ctype, Size: m.size, Align: align, Offset: off, Comment: m.comment}
		if get := m.get; get != nil {
			mem.get = func(v any) uint64 { return get(v.(A)) }
		}
		s.Members = append(s.Members, mem)
		off += m.size
		s.Align = max(s.Align, align)
	}
	s.Size = (off + s.Align - 1) / s.Align * s.Align
	return s
}

// argsLayout is the layout of the C argument struct of Go struct A: the
// LaunchHeader, then ms.
func argsLayout[A kernels.Args](name, doc string, ms ...member[A]) *Struct {
	return layout(name, doc, reflect.TypeFor[A](), append([]member[A]{nested[A]("h", launchHeader)}, ms...)...)
}

// Offset is the offset of the member called name; it panics for a name
// the struct lacks (a mistake in this package).
func (s *Struct) Offset(name string) int {
	for _, m := range s.Members {
		if m.Name == name {
			return m.Offset
		}
	}
	panic(fmt.Sprintf("cabi: %s has no member %s", s.Name, name))
}

// pack writes the byte image of v (a value of s.Go) with header h.
func (s *Struct) pack(h LaunchHeader, v any) []byte {
	b := make([]byte, s.Size)
	putHeader(b, h)
	for _, m := range s.Members {
		if m.get == nil {
			continue
		}
		switch m.Size {
		case 4:
			binary.LittleEndian.PutUint32(b[m.Offset:], uint32(m.get(v)))
		case 8:
			binary.LittleEndian.PutUint64(b[m.Offset:], m.get(v))
		}
	}
	return b
}

// LaunchHeader is what the CUDA device puts before every kernel's
// arguments.
type LaunchHeader struct {
	// ErrorRecord is the device address of the stream's error record
	// (ErrorRecordSize bytes, zero when clear); 0 disables reporting.
	ErrorRecord uint64
	// Launch is the launch's sequence number on its stream, copied into
	// the record so the host can name the kernel that failed.
	Launch uint32
}

// The ABI's structs.
var (
	errorRecord = layout[ErrorRecord]("ErrorRecord",
		"What a kernel records when it gives up; the first writer wins. The host\n"+
			"reads it after the stream completes and clears it.",
		reflect.TypeFor[ErrorRecord](),
		member[ErrorRecord]{name: "state", ctype: "uint32_t", size: 4,
			get: func(ErrorRecord) uint64 { return recordStateWritten }}.withComment("0 clear, 1 being written, 2 written"),
		u32("launch", func(r ErrorRecord) uint32 { return r.Launch }).withComment("LaunchHeader::launch of the failing launch"),
		u32("reason", func(r ErrorRecord) uint32 { return r.Reason }).withComment("an ErrorReason"),
		i32("rank", func(r ErrorRecord) int32 { return r.Rank }).withComment("the rank that gave up"),
		i32("block", func(r ErrorRecord) int32 { return r.Block }),
		i32("peer", func(r ErrorRecord) int32 { return r.Peer }).withComment("the rank it waited for (or whose pointer was bad)"),
		i32("channel", func(r ErrorRecord) int32 { return r.Channel }),
		i32("slot", func(r ErrorRecord) int32 { return r.Slot }).withComment("slot index inside the pad"),
		i32("pad", func(r ErrorRecord) int32 { return r.Pad }).withComment("the rank whose pad holds the slot"),
		u32("value", func(r ErrorRecord) uint32 { return r.Value }).withComment("slot value (corrupt) or vector bytes (misaligned)"),
		i64("timeout_ns", func(r ErrorRecord) int64 { return r.TimeoutNs }),
		u64("elapsed_ns", func(r ErrorRecord) uint64 { return r.ElapsedNs }),
		member[ErrorRecord]{name: "reserved", ctype: "uint64_t", size: 8},
	)

	launchHeader = layout[LaunchHeader]("LaunchHeader",
		"Written by the device in front of every kernel's arguments.", nil,
		ptr("err", "ErrorRecord*", func(h LaunchHeader) uint64 { return h.ErrorRecord }),
		u32("launch", func(h LaunchHeader) uint32 { return h.Launch }),
		reserved[LaunchHeader]("reserved"),
	)

	signalArgs = argsLayout("SignalArgs", "put_signal, wait_signal, barrier.",
		i32("rank", func(a kernels.SignalArgs) int32 { return a.Rank }),
		i32("world", func(a kernels.SignalArgs) int32 { return a.World }),
		i32("peer", func(a kernels.SignalArgs) int32 { return a.Peer }),
		i32("channel", func(a kernels.SignalArgs) int32 { return a.Channel }),
		ptr("pad_ptrs", "const uint64_t*", func(a kernels.SignalArgs) uint64 { return uint64(a.PadPtrs) }),
		u64("pad_bytes", func(a kernels.SignalArgs) uint64 { return a.PadBytes }),
		i64("timeout_ns", func(a kernels.SignalArgs) int64 { return a.TimeoutNs }),
	)

	allReduceArgs = argsLayout("AllReduceArgs", "one_shot_all_reduce, two_shot_all_reduce, ll_all_reduce.",
		i32("rank", func(a kernels.AllReduceArgs) int32 { return a.Rank }),
		i32("world", func(a kernels.AllReduceArgs) int32 { return a.World }),
		i32("dtype", func(a kernels.AllReduceArgs) int32 { return int32(a.DType) }).withComment("a DType"),
		i32("op", func(a kernels.AllReduceArgs) int32 { return int32(a.Op) }).withComment("a ReduceOp"),
		ptr("buffer_ptrs", "const uint64_t*", func(a kernels.AllReduceArgs) uint64 { return uint64(a.BufferPtrs) }),
		ptr("pad_ptrs", "const uint64_t*", func(a kernels.AllReduceArgs) uint64 { return uint64(a.PadPtrs) }),
		u64("pad_bytes", func(a kernels.AllReduceArgs) uint64 { return a.PadBytes }),
		u64("offset", func(a kernels.AllReduceArgs) uint64 { return a.Offset }),
		u64("numel", func(a kernels.AllReduceArgs) uint64 { return a.Numel }),
		ptr("input", "const void*", func(a kernels.AllReduceArgs) uint64 { return uint64(a.Input) }),
		ptr("output", "void*", func(a kernels.AllReduceArgs) uint64 { return uint64(a.Output) }),
		i64("timeout_ns", func(a kernels.AllReduceArgs) int64 { return a.TimeoutNs }),
		reserved[kernels.AllReduceArgs]("reserved1"),
		reserved[kernels.AllReduceArgs]("reserved2"),
		u64("slot_bytes", func(a kernels.AllReduceArgs) uint64 { return a.SlotBytes }).withComment("ll_all_reduce: stride between source ranks' packets"),
	)
)

// argStructs are the C argument structs, one per Go argument struct.
var argStructs = []*Struct{signalArgs, allReduceArgs}

// Structs lists every C struct of the ABI in the order the header defines
// them.
func Structs() []*Struct {
	return []*Struct{errorRecord, launchHeader, signalArgs, allReduceArgs}
}

// argStruct is the C argument struct of kernel k.
func argStruct(k *kernels.Kernel) (*Struct, error) {
	for _, s := range argStructs {
		if s.Go == k.ArgType() {
			return s, nil
		}
	}
	return nil, fmt.Errorf("kernel %s: arguments %v have no C layout (declare one in kernels/cabi)", k.Name, k.ArgType())
}
