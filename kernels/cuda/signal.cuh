// Signal pad operations at system scope, with recoverable timeouts: the
// CUDA twin of kernels/signals.go and package signal's rules.
#pragma once

#include <cstdint>

#include "abi.cuh"

namespace symmem {

// Memory orders, numbered as package signal numbers them.
enum Order : int { kRelaxed = 0, kAcquire = 1, kRelease = 2, kAcqRel = 3 };

// Slot values under the protocol.
constexpr uint32_t kIdle = 0;
constexpr uint32_t kRaised = 1;

// now_ns reads the global nanosecond timer.
__device__ __forceinline__ uint64_t now_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// cas_sys is a compare-and-swap on a global uint32 at system scope with the
// given order; it returns the value the slot held.
__device__ __forceinline__ uint32_t cas_sys(uint32_t* p, uint32_t cmp, uint32_t val, int order) {
  uint32_t prev;
  switch (order) {
    case kAcquire:
      asm volatile("atom.acquire.sys.global.cas.b32 %0, [%1], %2, %3;"
                   : "=r"(prev) : "l"(p), "r"(cmp), "r"(val) : "memory");
      break;
    case kRelease:
      asm volatile("atom.release.sys.global.cas.b32 %0, [%1], %2, %3;"
                   : "=r"(prev) : "l"(p), "r"(cmp), "r"(val) : "memory");
      break;
    case kAcqRel:
      asm volatile("atom.acq_rel.sys.global.cas.b32 %0, [%1], %2, %3;"
                   : "=r"(prev) : "l"(p), "r"(cmp), "r"(val) : "memory");
      break;
    default:
      asm volatile("atom.relaxed.sys.global.cas.b32 %0, [%1], %2, %3;"
                   : "=r"(prev) : "l"(p), "r"(cmp), "r"(val) : "memory");
      break;
  }
  return prev;
}

// load_relaxed_sys reads a global uint32 atomically (relaxed, system scope).
__device__ __forceinline__ uint32_t load_relaxed_sys(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.relaxed.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// Who is signalling: one rank's block, with what it reports on failure.
struct SignalCtx {
  ErrorRecord* err;
  uint32_t launch;
  int rank;
  int world;
  int block;
  uint64_t pad_bytes;
  int64_t timeout_ns;  // per operation; <= 0 waits forever
};

// record_error claims the record (the first failure wins) and fills it.
__device__ inline void record_error(const SignalCtx& c, uint32_t reason, int peer, int channel, int slot,
                                    int pad, uint32_t value, uint64_t elapsed) {
  ErrorRecord* r = c.err;
  if (r == nullptr) return;
  if (atomicCAS_system(&r->state, 0u, 1u) != 0u) return;
  r->launch = c.launch;
  r->reason = reason;
  r->rank = c.rank;
  r->block = c.block;
  r->peer = peer;
  r->channel = channel;
  r->slot = slot;
  r->pad = pad;
  r->value = value;
  r->timeout_ns = c.timeout_ns;
  r->elapsed_ns = elapsed;
  __threadfence_system();
  atomicExch_system(&r->state, 2u);
}

// signal_op performs a put (compare-and-swap 0 -> 1 in peer's pad) or a wait
// (1 -> 0 in this rank's pad) on channel, retrying while the slot holds the
// value the operation would write and waiting until it holds the value the
// swap expects, until it
// succeeds, the slot turns out corrupt or the timeout passes. It returns
// false after recording why it gave up.
__device__ inline bool signal_op(const SignalCtx& c, const uint64_t* pads, bool put, int peer, int channel,
                                 int order) {
  const int pad = put ? peer : c.rank;
  const int src = put ? c.rank : peer;
  const int slot = channel * c.world + src;
  uint32_t* p = reinterpret_cast<uint32_t*>(pads[pad]) + slot;
  const uint32_t old = put ? kIdle : kRaised;
  const uint32_t val = put ? kRaised : kIdle;
  uint64_t start = 0;  // read once the first swap fails: the fast path skips the timer
  for (;;) {
    const uint32_t prev = cas_sys(p, old, val, order);
    if (prev == old) return true;
    if (start == 0) start = now_ns();
    if (prev != val) {
      record_error(c, put ? kPutCorrupt : kWaitCorrupt, peer, channel, slot, pad, prev, now_ns() - start);
      return false;
    }
    for (;;) {
      const uint64_t elapsed = now_ns() - start;
      if (c.timeout_ns > 0 && elapsed >= static_cast<uint64_t>(c.timeout_ns)) {
        record_error(c, put ? kPutTimeout : kWaitTimeout, peer, channel, slot, pad, prev, elapsed);
        return false;
      }
      if (load_relaxed_sys(p) == old) break;  // ready: try the swap again
    }
  }
}

// block_barrier synchronises this block with the same block of every peer
// on channel: thread p puts to peer p with put_order, then waits for peer p
// with wait_order. Block-wide syncs come before and after. It returns false
// in every thread of the block if any thread gave up.
__device__ inline bool block_barrier(const SignalCtx& c, const uint64_t* pads, int channel, int put_order,
                                     int wait_order) {
  __syncthreads();
  bool ok = true;
  const int p = threadIdx.x;
  if (p < c.world && p != c.rank) {
    ok = signal_op(c, pads, true, p, channel, put_order) && signal_op(c, pads, false, p, channel, wait_order);
  }
  return __syncthreads_or(!ok) == 0;
}

// check_ptrs reports (and records) a null entry in a pointer array of
// world entries.
__device__ inline bool check_ptrs(const SignalCtx& c, const uint64_t* ptrs) {
  if (ptrs == nullptr) {
    record_error(c, kNullPointer, -1, -1, -1, -1, 0, 0);
    return false;
  }
  for (int r = 0; r < c.world; r++) {
    if (ptrs[r] == 0) {
      record_error(c, kNullPointer, r, -1, -1, -1, 0, 0);
      return false;
    }
  }
  return true;
}

}  // namespace symmem
