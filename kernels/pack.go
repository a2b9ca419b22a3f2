package kernels

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/signal"
)

// The CUDA kernels take one argument: a C struct passed by value whose
// first member is a LaunchHeader written by the device, followed by the
// fields of the kernel's Go argument struct. The layouts are written down
// here field by field (all little endian, C alignment) and must match the
// structs in cuda/args.cuh, which asserts the same offsets with
// static_assert; TestLayoutsMatchHeader compares the two.

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

// field is one member of a C argument struct.
type field struct {
	name   string // C member name
	goName string // Go field it comes from ("" for header members)
	offset int
	size   int // 4 or 8
}

// Layouts of the C structs (see cuda/args.cuh).
var (
	headerFields = []field{
		{"err", "", 0, 8},
		{"launch", "", 8, 4},
		{"reserved", "", 12, 4},
	}
	signalFields = append(append([]field(nil), headerFields...),
		field{"rank", "Rank", 16, 4},
		field{"world", "World", 20, 4},
		field{"peer", "Peer", 24, 4},
		field{"channel", "Channel", 28, 4},
		field{"pad_ptrs", "PadPtrs", 32, 8},
		field{"pad_bytes", "PadBytes", 40, 8},
		field{"timeout_ns", "TimeoutNs", 48, 8},
	)
	allReduceFields = append(append([]field(nil), headerFields...),
		field{"rank", "Rank", 16, 4},
		field{"world", "World", 20, 4},
		field{"dtype", "DType", 24, 4},
		field{"op", "Op", 28, 4},
		field{"buffer_ptrs", "BufferPtrs", 32, 8},
		field{"pad_ptrs", "PadPtrs", 40, 8},
		field{"pad_bytes", "PadBytes", 48, 8},
		field{"offset", "Offset", 56, 8},
		field{"numel", "Numel", 64, 8},
		field{"input", "Input", 72, 8},
		field{"output", "Output", 80, 8},
		field{"timeout_ns", "TimeoutNs", 88, 8},
		field{"slot_bytes", "SlotBytes", 104, 8},
	)
)

// Sizes of the C argument structs.
const (
	SignalArgsSize    = 56
	AllReduceArgsSize = 112
)

// Pack checks args for kernel (as the kernel's registered Check does) and
// returns the byte image of the kernel's C argument struct with header h.
func Pack(h LaunchHeader, kernel string, args any) ([]byte, error) {
	k, ok := Lookup(kernel)
	if !ok {
		return nil, fmt.Errorf("pack: unknown kernel %q", kernel)
	}
	if err := k.Check(args); err != nil {
		return nil, err
	}
	switch kernel {
	case PutSignal, WaitSignal, Barrier:
		a, err := asSignalArgs(kernel, args)
		if err != nil {
			return nil, err
		}
		return packFields(signalFields, SignalArgsSize, h, func(name string) uint64 {
			switch name {
			case "Rank":
				return uint64(uint32(a.Rank))
			case "World":
				return uint64(uint32(a.World))
			case "Peer":
				return uint64(uint32(a.Peer))
			case "Channel":
				return uint64(uint32(a.Channel))
			case "PadPtrs":
				return uint64(a.PadPtrs)
			case "PadBytes":
				return a.PadBytes
			case "TimeoutNs":
				return uint64(a.TimeoutNs)
			}
			panic("kernels: no value for SignalArgs field " + name) // unreachable: the layout lists known fields
		}), nil
	case OneShotAllReduce, TwoShotAllReduce, LowLatencyAllReduce:
		a, err := asAllReduceArgs(kernel, args)
		if err != nil {
			return nil, err
		}
		return packFields(allReduceFields, AllReduceArgsSize, h, func(name string) uint64 {
			switch name {
			case "Rank":
				return uint64(uint32(a.Rank))
			case "World":
				return uint64(uint32(a.World))
			case "DType":
				return uint64(uint32(a.DType))
			case "Op":
				return uint64(uint32(a.Op))
			case "BufferPtrs":
				return uint64(a.BufferPtrs)
			case "PadPtrs":
				return uint64(a.PadPtrs)
			case "PadBytes":
				return a.PadBytes
			case "Offset":
				return a.Offset
			case "Numel":
				return a.Numel
			case "Input":
				return uint64(a.Input)
			case "Output":
				return uint64(a.Output)
			case "TimeoutNs":
				return uint64(a.TimeoutNs)
			case "SlotBytes":
				return a.SlotBytes
			}
			panic("kernels: no value for AllReduceArgs field " + name) // unreachable: the layout lists known fields
		}), nil
	}
	return nil, fmt.Errorf("pack: kernel %q has no C argument layout", kernel)
}

// SetHeader writes h into the header of an argument image made by Pack.
func SetHeader(b []byte, h LaunchHeader) error {
	if len(b) < 16 {
		return fmt.Errorf("set header: argument image of %d bytes has no header", len(b))
	}
	binary.LittleEndian.PutUint64(b[headerFields[0].offset:], h.ErrorRecord)
	binary.LittleEndian.PutUint32(b[headerFields[1].offset:], h.Launch)
	return nil
}

// packFields writes each field's value (from h for header members, from
// value for Go fields) at its offset.
func packFields(fields []field, size int, h LaunchHeader, value func(goName string) uint64) []byte {
	b := make([]byte, size)
	for _, f := range fields {
		var v uint64
		switch {
		case f.goName != "":
			v = value(f.goName)
		case f.name == "err":
			v = h.ErrorRecord
		case f.name == "launch":
			v = uint64(h.Launch)
		}
		if f.size == 4 {
			binary.LittleEndian.PutUint32(b[f.offset:], uint32(v))
		} else {
			binary.LittleEndian.PutUint64(b[f.offset:], v)
		}
	}
	return b
}

// CheckLaunch checks the launch shape of kernel against its arguments the
// way the CUDA kernels need it: signal kernels need at least one thread
// (barrier: one per rank); all-reduce kernels need a thread per rank for
// their barriers and at most one block per pad channel (block b uses
// channel b); one_shot_all_reduce is built for at most OneShotThreads
// threads per block.
func CheckLaunch(kernel string, blocks, threads int, args any) error {
	if blocks < 1 || threads < 1 || threads > MaxThreads {
		return fmt.Errorf("kernel %s: launch of %d blocks x %d threads (want >= 1 block, 1 to %d threads)", kernel, blocks, threads, MaxThreads)
	}
	switch kernel {
	case PutSignal, WaitSignal, Barrier:
		a, err := asSignalArgs(kernel, args)
		if err != nil {
			return err
		}
		if kernel == Barrier && threads < int(a.World) {
			return fmt.Errorf("kernel %s: %d threads for world size %d (one per rank needed)", kernel, threads, a.World)
		}
	case OneShotAllReduce, TwoShotAllReduce, LowLatencyAllReduce:
		a, err := asAllReduceArgs(kernel, args)
		if err != nil {
			return err
		}
		if kernel == LowLatencyAllReduce {
			if threads > LowLatencyThreads {
				return fmt.Errorf("kernel %s: %d threads per block (at most %d)", kernel, threads, LowLatencyThreads)
			}
			return nil
		}
		if threads < int(a.World) {
			return fmt.Errorf("kernel %s: %d threads for world size %d (one per rank needed)", kernel, threads, a.World)
		}
		if kernel == OneShotAllReduce && threads > OneShotThreads {
			return fmt.Errorf("kernel %s: %d threads per block (at most %d)", kernel, threads, OneShotThreads)
		}
		if ch := signal.Channels(a.PadBytes, int(a.World)); blocks > ch && kernel != LowLatencyAllReduce {
			return fmt.Errorf("kernel %s: %d blocks but the pad of %d bytes has %d channels for world size %d",
				kernel, blocks, a.PadBytes, ch, a.World)
		}
	default:
		return fmt.Errorf("kernel %q has no C argument layout", kernel)
	}
	return nil
}

// ErrorRecordSize is the size of the error record a CUDA kernel writes
// when it gives up (the C struct ErrorRecord in cuda/args.cuh, padded).
const ErrorRecordSize = 64

// Reasons a kernel records (C enum ErrorReason in cuda/args.cuh).
const (
	ReasonWaitTimeout  = 1 // a wait found no signal before its timeout
	ReasonPutTimeout   = 2 // a put found the previous signal still pending
	ReasonPutCorrupt   = 3 // a put found a slot value no signal writes
	ReasonWaitCorrupt  = 4 // a wait found a slot value no signal writes
	ReasonNullPointer  = 5 // a pointer array held a null entry
	ReasonMisaligned   = 6 // a rank's tensor is not aligned to the vector width
	ReasonOutputAlias  = 7 // Output overlaps this rank's buffer tensor
	ReasonDataTimeout  = 8 // the low-latency kernel's packets did not arrive
	ReasonWrongEntry   = 9 // a specialised entry point got a launch it was not built for
	recordStateWritten = 2 // state of a complete record
)

// ErrorRecord is a decoded error record. Its C layout:
//
//	offset  0 uint32 state     0 clear, 1 being written, 2 written
//	offset  4 uint32 launch    LaunchHeader.Launch of the failing launch
//	offset  8 uint32 reason    one of the Reason constants
//	offset 12 int32  rank      the rank that gave up
//	offset 16 int32  block
//	offset 20 int32  peer      the rank it waited for (or whose pointer was bad)
//	offset 24 int32  channel
//	offset 28 int32  slot      slot index inside the pad
//	offset 32 int32  pad       the rank whose pad holds the slot
//	offset 36 uint32 value     slot value (corrupt) or vector bytes (misaligned)
//	offset 40 int64  timeout_ns
//	offset 48 uint64 elapsed_ns
type ErrorRecord struct {
	Launch                                uint32
	Reason                                uint32
	Rank, Block, Peer, Channel, Slot, Pad int32
	Value                                 uint32
	TimeoutNs                             int64
	ElapsedNs                             uint64
}

// DecodeErrorRecord decodes a record of ErrorRecordSize bytes; ok is false
// when the record is clear (state 0).
func DecodeErrorRecord(b []byte) (rec ErrorRecord, ok bool) {
	if len(b) < ErrorRecordSize {
		return rec, false
	}
	le := binary.LittleEndian
	if le.Uint32(b[0:]) == 0 {
		return rec, false
	}
	i32 := func(off int) int32 { return int32(le.Uint32(b[off:])) }
	return ErrorRecord{
		Launch:    le.Uint32(b[4:]),
		Reason:    le.Uint32(b[8:]),
		Rank:      i32(12),
		Block:     i32(16),
		Peer:      i32(20),
		Channel:   i32(24),
		Slot:      i32(28),
		Pad:       i32(32),
		Value:     le.Uint32(b[36:]),
		TimeoutNs: int64(le.Uint64(b[40:])),
		ElapsedNs: le.Uint64(b[48:]),
	}, true
}

// EncodeErrorRecord is the inverse of DecodeErrorRecord (state written).
func EncodeErrorRecord(r ErrorRecord) []byte {
	b := make([]byte, ErrorRecordSize)
	le := binary.LittleEndian
	le.PutUint32(b[0:], recordStateWritten)
	le.PutUint32(b[4:], r.Launch)
	le.PutUint32(b[8:], r.Reason)
	for i, v := range []int32{r.Rank, r.Block, r.Peer, r.Channel, r.Slot, r.Pad} {
		le.PutUint32(b[12+4*i:], uint32(v))
	}
	le.PutUint32(b[36:], r.Value)
	le.PutUint64(b[40:], uint64(r.TimeoutNs))
	le.PutUint64(b[48:], r.ElapsedNs)
	return b
}

// KernelError turns the record of a launch of kernel into the error the
// simulator's twin of that kernel reports.
func (r ErrorRecord) KernelError(kernel string) *device.KernelError {
	return &device.KernelError{
		Kernel:  kernel,
		Rank:    int(r.Rank),
		Block:   int(r.Block),
		Peer:    int(r.Peer),
		Channel: int(r.Channel),
		Slot:    int(r.Slot),
		Timeout: time.Duration(r.TimeoutNs),
		Reason:  r.reason(),
	}
}

func (r ErrorRecord) reason() string {
	switch r.Reason {
	case ReasonWaitTimeout:
		return "wait timed out (no signal arrived)"
	case ReasonPutTimeout:
		return fmt.Sprintf("put timed out (previous signal still pending in pad of rank %d)", r.Pad)
	case ReasonPutCorrupt, ReasonWaitCorrupt:
		op := signal.Put
		if r.Reason == ReasonWaitCorrupt {
			op = signal.Wait
		}
		return fmt.Sprintf("%s found pad of rank %d slot holding 0x%08x (pad not zeroed or overwritten)", op, r.Pad, r.Value)
	case ReasonNullPointer:
		return fmt.Sprintf("pointer array entry of rank %d is null", r.Peer)
	case ReasonMisaligned:
		return fmt.Sprintf("tensor of rank %d is not aligned to the %d-byte vector", r.Peer, r.Value)
	case ReasonOutputAlias:
		return "Output overlaps this rank's buffer tensor"
	case ReasonDataTimeout:
		return DataTimeoutReason(r.Value)
	case ReasonWrongEntry:
		return "the launch's dtype, world size or vector width is not the one its entry point was built for"
	}
	return fmt.Sprintf("unknown error reason %d", r.Reason)
}

// DataTimeoutReason is how a low-latency kernel's timeout reads: the
// packets of call seq did not all arrive.
func DataTimeoutReason(seq uint32) string {
	return fmt.Sprintf("data of call %d did not arrive", seq)
}
