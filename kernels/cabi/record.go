package cabi

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/symmem/symmem/device"
	"github.com/symmem/symmem/kernels"
	"github.com/symmem/symmem/signal"
)

// ErrorRecordSize is the size of the error record a CUDA kernel writes
// when it gives up (the C struct ErrorRecord, padded; a test checks it
// against the layout).
const ErrorRecordSize = 64

// Reasons a kernel records (the C enum ErrorReason).
const (
	ReasonWaitTimeout = 1 // a wait found no signal before its timeout
	ReasonPutTimeout  = 2 // a put found the previous signal still pending
	ReasonPutCorrupt  = 3 // a put found a slot value no signal writes
	ReasonWaitCorrupt = 4 // a wait found a slot value no signal writes
	ReasonNullPointer = 5 // a pointer array held a null entry
	ReasonMisaligned  = 6 // a rank's tensor is not aligned to the vector width
	ReasonOutputAlias = 7 // output overlaps this rank's buffer tensor
	ReasonDataTimeout = 8 // the low-latency kernel's packets did not arrive
	ReasonWrongEntry  = 9 // a specialised entry point got a launch it was not built for
)

// recordStateWritten is the state of a complete record.
const recordStateWritten = 2

// ErrorRecord is a decoded error record (the C struct ErrorRecord; see
// [Structs] for its layout).
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
	at := errorRecord.Offset
	if le.Uint32(b[at("state"):]) == 0 {
		return rec, false
	}
	i32 := func(name string) int32 { return int32(le.Uint32(b[at(name):])) }
	return ErrorRecord{
		Launch:    le.Uint32(b[at("launch"):]),
		Reason:    le.Uint32(b[at("reason"):]),
		Rank:      i32("rank"),
		Block:     i32("block"),
		Peer:      i32("peer"),
		Channel:   i32("channel"),
		Slot:      i32("slot"),
		Pad:       i32("pad"),
		Value:     le.Uint32(b[at("value"):]),
		TimeoutNs: int64(le.Uint64(b[at("timeout_ns"):])),
		ElapsedNs: le.Uint64(b[at("elapsed_ns"):]),
	}, true
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
		return kernels.DataTimeoutReason(r.Value)
	case ReasonWrongEntry:
		return "the launch's dtype, world size or vector width is not the one its entry point was built for"
	}
	return fmt.Sprintf("unknown error reason %d", r.Reason)
}
