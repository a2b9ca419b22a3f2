// Argument structs and the error record shared by the kernels and the Go
// host code. The Go side writes these layouts byte by byte (kernels/pack.go);
// the static_asserts below are the contract, and the Go tests read them back
// from this file to compare.
#pragma once

#include <cstddef>
#include <cstdint>

namespace symmem {

// Reasons a kernel gives up (ErrorRecord::reason).
enum ErrorReason : uint32_t {
  kWaitTimeout = 1,  // a wait found no signal before its timeout
  kPutTimeout = 2,   // a put found the previous signal still pending
  kPutCorrupt = 3,   // a put found a slot value no signal writes
  kWaitCorrupt = 4,  // a wait found a slot value no signal writes
  kNullPointer = 5,  // a pointer array held a null entry
  kMisaligned = 6,   // a rank's tensor is not aligned to the vector width
  kOutputAlias = 7,  // output overlaps this rank's buffer tensor
  kDataTimeout = 8,  // the low-latency kernel's packets did not arrive
  kWrongEntry = 9,   // a specialised entry point got a launch it was not built for
};

// What a kernel records when it gives up; the first writer wins. The host
// reads it after the stream completes and clears it.
struct ErrorRecord {
  uint32_t state;  // 0 clear, 1 being written, 2 written
  uint32_t launch;
  uint32_t reason;
  int32_t rank;
  int32_t block;
  int32_t peer;
  int32_t channel;
  int32_t slot;
  int32_t pad;
  uint32_t value;
  int64_t timeout_ns;
  uint64_t elapsed_ns;
  uint64_t reserved;
};

// Written by the device in front of every kernel's arguments.
struct LaunchHeader {
  ErrorRecord* err;
  uint32_t launch;
  uint32_t reserved;
};

// put_signal, wait_signal, barrier.
struct SignalArgs {
  LaunchHeader h;
  int32_t rank;
  int32_t world;
  int32_t peer;
  int32_t channel;
  const uint64_t* pad_ptrs;
  uint64_t pad_bytes;
  int64_t timeout_ns;
};

// one_shot_all_reduce, two_shot_all_reduce.
struct AllReduceArgs {
  LaunchHeader h;
  int32_t rank;
  int32_t world;
  int32_t dtype;  // 0 float32, 1 bfloat16, 2 float16
  int32_t op;     // 0 sum, 1 avg, 2 max, 3 min
  const uint64_t* buffer_ptrs;
  const uint64_t* pad_ptrs;
  uint64_t pad_bytes;
  uint64_t offset;
  uint64_t numel;
  const void* input;
  void* output;
  int64_t timeout_ns;
  uint32_t reserved1;
  uint32_t reserved2;
  uint64_t slot_bytes;  // ll_all_reduce: stride between source ranks' packets
};

// The layout contract (kernels/pack.go).
static_assert(sizeof(ErrorRecord) == 64, "ErrorRecord size");
static_assert(offsetof(ErrorRecord, state) == 0, "ErrorRecord.state");
static_assert(offsetof(ErrorRecord, launch) == 4, "ErrorRecord.launch");
static_assert(offsetof(ErrorRecord, reason) == 8, "ErrorRecord.reason");
static_assert(offsetof(ErrorRecord, rank) == 12, "ErrorRecord.rank");
static_assert(offsetof(ErrorRecord, block) == 16, "ErrorRecord.block");
static_assert(offsetof(ErrorRecord, peer) == 20, "ErrorRecord.peer");
static_assert(offsetof(ErrorRecord, channel) == 24, "ErrorRecord.channel");
static_assert(offsetof(ErrorRecord, slot) == 28, "ErrorRecord.slot");
static_assert(offsetof(ErrorRecord, pad) == 32, "ErrorRecord.pad");
static_assert(offsetof(ErrorRecord, value) == 36, "ErrorRecord.value");
static_assert(offsetof(ErrorRecord, timeout_ns) == 40, "ErrorRecord.timeout_ns");
static_assert(offsetof(ErrorRecord, elapsed_ns) == 48, "ErrorRecord.elapsed_ns");

static_assert(sizeof(LaunchHeader) == 16, "LaunchHeader size");
static_assert(offsetof(LaunchHeader, err) == 0, "LaunchHeader.err");
static_assert(offsetof(LaunchHeader, launch) == 8, "LaunchHeader.launch");
static_assert(offsetof(LaunchHeader, reserved) == 12, "LaunchHeader.reserved");

static_assert(sizeof(SignalArgs) == 56, "SignalArgs size");
static_assert(offsetof(SignalArgs, rank) == 16, "SignalArgs.rank");
static_assert(offsetof(SignalArgs, world) == 20, "SignalArgs.world");
static_assert(offsetof(SignalArgs, peer) == 24, "SignalArgs.peer");
static_assert(offsetof(SignalArgs, channel) == 28, "SignalArgs.channel");
static_assert(offsetof(SignalArgs, pad_ptrs) == 32, "SignalArgs.pad_ptrs");
static_assert(offsetof(SignalArgs, pad_bytes) == 40, "SignalArgs.pad_bytes");
static_assert(offsetof(SignalArgs, timeout_ns) == 48, "SignalArgs.timeout_ns");

static_assert(sizeof(AllReduceArgs) == 112, "AllReduceArgs size");
static_assert(offsetof(AllReduceArgs, rank) == 16, "AllReduceArgs.rank");
static_assert(offsetof(AllReduceArgs, world) == 20, "AllReduceArgs.world");
static_assert(offsetof(AllReduceArgs, dtype) == 24, "AllReduceArgs.dtype");
static_assert(offsetof(AllReduceArgs, op) == 28, "AllReduceArgs.op");
static_assert(offsetof(AllReduceArgs, buffer_ptrs) == 32, "AllReduceArgs.buffer_ptrs");
static_assert(offsetof(AllReduceArgs, pad_ptrs) == 40, "AllReduceArgs.pad_ptrs");
static_assert(offsetof(AllReduceArgs, pad_bytes) == 48, "AllReduceArgs.pad_bytes");
static_assert(offsetof(AllReduceArgs, offset) == 56, "AllReduceArgs.offset");
static_assert(offsetof(AllReduceArgs, numel) == 64, "AllReduceArgs.numel");
static_assert(offsetof(AllReduceArgs, input) == 72, "AllReduceArgs.input");
static_assert(offsetof(AllReduceArgs, output) == 80, "AllReduceArgs.output");
static_assert(offsetof(AllReduceArgs, timeout_ns) == 88, "AllReduceArgs.timeout_ns");
static_assert(offsetof(AllReduceArgs, slot_bytes) == 104, "AllReduceArgs.slot_bytes");

}  // namespace symmem
