// The CUDA twins of the kernels in package kernels (signals.go,
// allreduce.go). Entry points are extern "C" and named as the Go package
// names them; each takes its argument struct (abi.cuh) by value. Dtype,
// vector width and world size (2, 4, 8 specialised, others generic) are
// dispatched at run time inside the kernel.
#include <cstdint>

#include "abi.cuh"
#include "reduce.cuh"
#include "signal.cuh"

namespace symmem {

__device__ __forceinline__ SignalCtx signal_ctx(const LaunchHeader& h, int rank, int world, uint64_t pad_bytes,
                                                int64_t timeout_ns) {
  return SignalCtx{h.err, h.launch, rank, world, static_cast<int>(blockIdx.x), pad_bytes, timeout_ns};
}

// Tensors holds the address of every rank's tensor (buffer + offset) in
// registers when the world size is known at compile time and N > 0 (N = W);
// with N = 0 the addresses are read from the device array when used, which
// saves 2*W registers where the register budget is tight.
template <int N>
struct Tensors {
  const char* base[N];
  __device__ __forceinline__ Tensors(const uint64_t* bufs, uint64_t offset) {
#pragma unroll
    for (int r = 0; r < N; r++) base[r] = reinterpret_cast<const char*>(bufs[r]) + offset;
  }
  __device__ __forceinline__ const char* at(int r, const uint64_t*, uint64_t) const { return base[r]; }
};

template <>
struct Tensors<0> {
  __device__ __forceinline__ Tensors(const uint64_t*, uint64_t) {}
  __device__ __forceinline__ const char* at(int r, const uint64_t* bufs, uint64_t offset) const {
    return reinterpret_cast<const char*>(bufs[r]) + offset;
  }
};

// Collective is one block's view of an all-reduce launch. W is the world
// size (0: known only at run time); CACHE keeps the tensor addresses in
// registers.
template <typename T, int VEC, int W, bool CACHE>
struct Collective {
  const AllReduceArgs& a;
  SignalCtx c;
  Tensors<(CACHE ? W : 0)> t;
  char* own;  // this rank's tensor

  __device__ Collective(const AllReduceArgs& args)
      : a(args),
        c(signal_ctx(args.h, args.rank, args.world, args.pad_bytes, args.timeout_ns)),
        t(args.buffer_ptrs, args.offset),
        own(reinterpret_cast<char*>(args.buffer_ptrs[args.rank]) + args.offset) {}

  __device__ __forceinline__ int world() const { return W > 0 ? W : a.world; }

  // reduce reduces the vector at byte offset off of every rank's tensor.
  __device__ __forceinline__ Vec<VEC> reduce(uint64_t off) const {
    if constexpr (W > 0) {
      const char* base[W];
#pragma unroll
      for (int r = 0; r < W; r++) base[r] = t.at(r, a.buffer_ptrs, a.offset);
      return reduce_fixed<T, VEC, W>(base, off, a.op);
    } else {
      return reduce_any<T, VEC>(a.buffer_ptrs, a.offset, a.world, off, a.op);
    }
  }

  // reduce2 is reduce for two offsets, with all their loads in flight at
  // once (W > 0 only).
  __device__ __forceinline__ void reduce2(uint64_t off0, uint64_t off1, Vec<VEC>& out0, Vec<VEC>& out1) const {
    static_assert(W > 0, "reduce2 needs a fixed world size");
    const char* base[W];
#pragma unroll
    for (int r = 0; r < W; r++) base[r] = t.at(r, a.buffer_ptrs, a.offset);
    reduce_fixed2<T, VEC, W>(base, off0, off1, a.op, out0, out1);
  }

  // store_all writes v at byte offset off of every rank's tensor.
  __device__ __forceinline__ void store_all(uint64_t off, const Vec<VEC>& v) const {
    if constexpr (W > 0) {
#pragma unroll
      for (int r = 0; r < W; r++) store_vec<VEC>(const_cast<char*>(t.at(r, a.buffer_ptrs, a.offset)) + off, v);
    } else {
      for (int r = 0; r < a.world; r++) store_vec<VEC>(reinterpret_cast<char*>(a.buffer_ptrs[r]) + a.offset + off, v);
    }
  }

  __device__ __forceinline__ const char* tensor(int r) const {
    return reinterpret_cast<const char*>(a.buffer_ptrs[r]) + a.offset;
  }

  __device__ __forceinline__ bool barrier(int put_order) const {
    return block_barrier(c, a.pad_ptrs, blockIdx.x, put_order, kAcquire);
  }
};

// check_collective validates what the host cannot see: the pointer arrays,
// the alignment of every rank's tensor and that the output does not overlap
// this rank's tensor. Only thread 0 of each block records a failure.
__device__ inline bool check_collective(const AllReduceArgs& a, const SignalCtx& c, int vec, uint64_t bytes) {
  SignalCtx quiet = c;
  if (threadIdx.x != 0) quiet.err = nullptr;
  if (!check_ptrs(quiet, a.buffer_ptrs) || !check_ptrs(quiet, a.pad_ptrs)) return false;
  for (int r = 0; r < a.world; r++) {
    if ((a.buffer_ptrs[r] + a.offset) % vec != 0) {
      record_error(quiet, kMisaligned, r, -1, -1, -1, vec, 0);
      return false;
    }
  }
  const uint64_t own = a.buffer_ptrs[a.rank] + a.offset;
  const uint64_t out = reinterpret_cast<uint64_t>(a.output);
  if (out != 0 && out < own + bytes && own < out + bytes) {
    record_error(quiet, kOutputAlias, a.rank, -1, -1, -1, 0, 0);
    return false;
  }
  return true;
}

// collective_ok runs check_collective's checks in parallel, thread t < W
// loading rank t's two pointers (the barrier loads them again, from cache),
// so that a launch that passes costs one load and one block sync rather
// than a chain of loads. When any check fails, every thread runs
// check_collective, in which thread 0 records the same error as ever.
__device__ inline bool collective_ok(const AllReduceArgs& a, const SignalCtx& c, int vec, uint64_t bytes) {
  bool bad = a.buffer_ptrs == nullptr || a.pad_ptrs == nullptr;
  const int t = threadIdx.x;
  if (!bad && t < a.world) {
    const uint64_t buf = a.buffer_ptrs[t];
    bad = buf == 0 || a.pad_ptrs[t] == 0 || (buf + a.offset) % vec != 0;
    const uint64_t out = reinterpret_cast<uint64_t>(a.output);
    if (t == a.rank && out != 0 && out < buf + a.offset + bytes && buf + a.offset < out + bytes) bad = true;
  }
  if (__syncthreads_or(bad) == 0) return true;
  check_collective(a, c, vec, bytes);
  return false;
}

// one_shot: every rank reduces the whole tensor from every peer into
// output; with input set (the copy form) each block first copies its share
// of input into this rank's buffer and publishes it with a release put.
template <typename T, int VEC, int W>
__device__ void one_shot(const AllReduceArgs& a) {
  Collective<T, VEC, W, true> col(a);
  const uint64_t nvec = a.numel * T::kSize / VEC;
  const uint64_t first = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  int start_put = kRelaxed;
  if (a.input != nullptr) {
    start_put = kRelease;
    const char* in = reinterpret_cast<const char*>(a.input);
    for (uint64_t v = first; v < nvec; v += stride) store_vec<VEC>(col.own + v * VEC, load_vec<VEC>(in + v * VEC));
  }
  if (!col.barrier(start_put)) return;
  char* out = reinterpret_cast<char*>(a.output);
  for (uint64_t v = first; v < nvec; v += stride) store_vec<VEC>(out + v * VEC, col.reduce(v * VEC));
  col.barrier(kRelease);
}

// two_shot: rank r reduces its chunk [r*chunk, (r+1)*chunk) and writes it
// into every rank's buffer (output null), or into its own buffer and then
// gathers every chunk into output.
template <typename T, int VEC, int W>
__device__ void two_shot(const AllReduceArgs& a) {
  // 1024 threads leave 64 registers a thread: keep addresses in memory for
  // the widest worlds.
  Collective<T, VEC, W, (W > 0 && W <= 4)> col(a);
  const int world = col.world();
  constexpr uint64_t vec_elems = VEC / T::kSize;
  const uint64_t unit = vec_elems * world;
  const uint64_t chunk = (a.numel + unit - 1) / unit * unit / world;  // elements
  const uint64_t chunk_vecs = chunk / vec_elems;
  auto vectors_of = [&](int r) -> uint64_t {
    const uint64_t start = static_cast<uint64_t>(r) * chunk;
    if (start >= a.numel) return 0;
    const uint64_t left = a.numel - start;
    return (left < chunk ? left : chunk) / vec_elems;
  };
  const uint64_t my_start = static_cast<uint64_t>(a.rank) * chunk * T::kSize;
  const uint64_t first = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;

  // put stores the reduced vector at off: into every rank's buffer, or
  // into this rank's alone for the gather below.
  auto put = [&](uint64_t off, const Vec<VEC>& r) {
    if (a.output != nullptr) {
      store_vec<VEC>(col.own + off, r);
    } else {
      col.store_all(off, r);
    }
  };
  if (!col.barrier(kRelaxed)) return;
  const uint64_t mine = vectors_of(a.rank);
  uint64_t v = first;
  if constexpr (W > 0 && W <= 4) {
    // Two vectors a step while both exist: twice the loads in flight,
    // which large tensors on many blocks need to fill the links (wider
    // worlds have no registers to spare for it).
    for (; v + stride < mine; v += 2 * stride) {
      const uint64_t off0 = my_start + v * VEC, off1 = off0 + stride * VEC;
      Vec<VEC> r0, r1;
      col.reduce2(off0, off1, r0, r1);
      put(off0, r0);
      put(off1, r1);
    }
  }
  for (; v < mine; v += stride) put(my_start + v * VEC, col.reduce(my_start + v * VEC));
  if (!col.barrier(kRelease)) return;
  if (a.output == nullptr) return;
  char* out = reinterpret_cast<char*>(a.output);
  for (uint64_t v = first; v < chunk_vecs; v += stride) {
    for (int r = 0; r < world; r++) {
      if (v >= vectors_of(r)) continue;
      const uint64_t off = static_cast<uint64_t>(r) * chunk * T::kSize + v * VEC;
      store_vec<VEC>(out + off, load_vec<VEC>(col.tensor(r) + off));
    }
  }
  col.barrier(kRelease);
}

// Packets of the low-latency kernel: one data word (low half) and the
// call's number (high half), stored and loaded as one 64-bit access.
__device__ __forceinline__ void store_packet(uint64_t* p, uint64_t v) {
  asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ uint64_t load_packet(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

// low_latency: every thread sends its words of input, as packets, to the
// slot of this rank in every rank's workspace (peers in rotated order),
// then waits for the packets of every rank in its own workspace and
// reduces them in rank order into output. The parity of seq picks the
// workspace half. No barrier: the flag travels with the data.
template <typename T>
__device__ void low_latency(const AllReduceArgs& a, const SignalCtx& c, uint32_t seq) {
  const int world = a.world;
  const int rank = a.rank;
  const uint64_t words = a.numel * T::kSize / 4;
  const uint64_t half = a.offset + static_cast<uint64_t>(seq & 1u) * world * a.slot_bytes;
  const uint64_t flag = static_cast<uint64_t>(seq) << 32;
  const uint64_t first = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  const uint32_t* in = reinterpret_cast<const uint32_t*>(a.input);
  for (uint64_t w = first; w < words; w += stride) {
    const uint64_t packet = flag | in[w];
    int dst = rank;
    for (int s = 0; s < world; s++) {
      store_packet(reinterpret_cast<uint64_t*>(a.buffer_ptrs[dst] + half + rank * a.slot_bytes) + w, packet);
      if (++dst == world) dst = 0;
    }
  }
  const char* own = reinterpret_cast<const char*>(a.buffer_ptrs[rank]) + half;
  uint32_t* out = reinterpret_cast<uint32_t*>(a.output);
  const uint64_t start = now_ns();
  constexpr int E = 4 / T::kSize;
  for (uint64_t w = first; w < words; w += stride) {
    float acc[E];
    for (int src = 0; src < world; src++) {
      const uint64_t* p = reinterpret_cast<const uint64_t*>(own + src * a.slot_bytes) + w;
      uint64_t v;
      for (uint32_t spins = 1;; spins++) {
        v = load_packet(p);
        if ((v & 0xffffffff00000000ull) == flag) break;
        if (a.timeout_ns > 0 && (spins & 63u) == 0) {
          const uint64_t elapsed = now_ns() - start;
          if (elapsed >= static_cast<uint64_t>(a.timeout_ns)) {
            record_error(c, kDataTimeout, src, -1, -1, rank, seq, elapsed);
            return;
          }
        }
      }
      const uint32_t word = static_cast<uint32_t>(v);
#pragma unroll
      for (int k = 0; k < E; k++) acc[k] = src == 0 ? T::get(&word, k) : combine(acc[k], T::get(&word, k), a.op);
    }
    out[w] = finish<T, 4>(acc, a.op, world).w[0];
  }
}

__device__ void low_latency_all_reduce(const AllReduceArgs& a) {
  if (a.numel == 0) return;
  const SignalCtx c = signal_ctx(a.h, a.rank, a.world, a.pad_bytes, a.timeout_ns);
  // The call number lives in the workspace's control words, after its two
  // halves: [0] the last call's number, [1] the current call's finished
  // blocks. Every block starts from [0]; the last block to finish stores
  // its number there for the next call, so replayed graphs stay in step.
  // Thread t < W checks rank t's pointer while thread 0 reads the number;
  // on a bad pointer, check_ptrs records the first one as ever.
  __shared__ uint32_t call;
  uint32_t* ctl = nullptr;
  const int t = threadIdx.x;
  bool bad = a.buffer_ptrs == nullptr;
  if (!bad && t < a.world) bad = a.buffer_ptrs[t] == 0;
  if (!bad && t == 0 && a.buffer_ptrs[a.rank] != 0) {
    ctl = reinterpret_cast<uint32_t*>(a.buffer_ptrs[a.rank] + a.offset +
                                      2ull * static_cast<uint64_t>(a.world) * a.slot_bytes);
    const uint32_t next = *reinterpret_cast<volatile uint32_t*>(ctl) + 1u;
    call = next == 0u ? 1u : next;
  }
  if (__syncthreads_or(bad) != 0) {
    SignalCtx quiet = c;
    if (t != 0) quiet.err = nullptr;
    check_ptrs(quiet, a.buffer_ptrs);
    return;
  }
  const uint32_t seq = call;
  switch (a.dtype) {
    case kFloat32:
      low_latency<F32>(a, c, seq);
      break;
    case kBFloat16:
      low_latency<BF16>(a, c, seq);
      break;
    default:
      low_latency<F16>(a, c, seq);
      break;
  }
  // The fence before the count releases this block's work (its read of
  // [0] included); the last block's fence after it acquires every other
  // block's, so that their reads of [0] happen before its store there
  // (without it the PTX memory model lets them race).
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(ctl + 1, 1u) == gridDim.x - 1u) {
      __threadfence();
      ctl[1] = 0u;
      ctl[0] = seq;
    }
  }
}

// vec_width is the largest of 16, 8 and 4 bytes that divides both the
// offset and the size of the tensor (the host checked both are multiples
// of 4).
__device__ __forceinline__ int vec_width(uint64_t offset, uint64_t bytes) {
  if (offset % 16 == 0 && bytes % 16 == 0) return 16;
  if (offset % 8 == 0 && bytes % 8 == 0) return 8;
  return 4;
}

template <template <typename, int, int> class Body, typename T, int VEC>
struct ByWorld {
  __device__ static void run(const AllReduceArgs& a) {
    switch (a.world) {
      case 2:
        Body<T, VEC, 2>::run(a);
        break;
      case 4:
        Body<T, VEC, 4>::run(a);
        break;
      case 8:
        Body<T, VEC, 8>::run(a);
        break;
      default:
        Body<T, VEC, 0>::run(a);
        break;
    }
  }
};

template <typename T, int VEC, int W>
struct OneShot {
  __device__ static void run(const AllReduceArgs& a) { one_shot<T, VEC, W>(a); }
};

template <typename T, int VEC, int W>
struct TwoShot {
  __device__ static void run(const AllReduceArgs& a) { two_shot<T, VEC, W>(a); }
};

template <template <typename, int, int> class Body, typename T>
__device__ void by_vec(const AllReduceArgs& a, int vec) {
  switch (vec) {
    case 16:
      ByWorld<Body, T, 16>::run(a);
      break;
    case 8:
      ByWorld<Body, T, 8>::run(a);
      break;
    default:
      ByWorld<Body, T, 4>::run(a);
      break;
  }
}

// all_reduce validates the launch on the device, then dispatches on dtype,
// vector width and world size.
template <template <typename, int, int> class Body>
__device__ void all_reduce(const AllReduceArgs& a) {
  if (a.numel == 0) return;
  const int size = a.dtype == kFloat32 ? 4 : 2;
  const uint64_t bytes = a.numel * size;
  const int vec = vec_width(a.offset, bytes);
  const SignalCtx c = signal_ctx(a.h, a.rank, a.world, a.pad_bytes, a.timeout_ns);
  if (!collective_ok(a, c, vec, bytes)) return;
  switch (a.dtype) {
    case kFloat32:
      by_vec<Body, F32>(a, vec);
      break;
    case kBFloat16:
      by_vec<Body, BF16>(a, vec);
      break;
    default:
      by_vec<Body, F16>(a, vec);
      break;
  }
}

// all_reduce_fixed is all_reduce compiled for one dtype, 16-byte vectors
// and world size W: the entry points below, which the host picks when a
// launch matches them (cabi.Entry), skip the run-time dispatch and get
// registers allotted for their one body. A launch that does not match is
// refused with kWrongEntry.
template <template <typename, int, int> class Body, typename T, int W>
__device__ void all_reduce_fixed(const AllReduceArgs& a) {
  if (a.numel == 0) return;
  const uint64_t bytes = a.numel * T::kSize;
  const SignalCtx c = signal_ctx(a.h, a.rank, a.world, a.pad_bytes, a.timeout_ns);
  if (a.dtype != T::kDType || a.world != W || vec_width(a.offset, bytes) != 16) {
    if (threadIdx.x == 0) record_error(c, kWrongEntry, -1, -1, -1, -1, 0, 0);
    return;
  }
  if (!collective_ok(a, c, 16, bytes)) return;
  Body<T, 16, W>::run(a);
}

// signal_setup: only block 0 of a signal kernel acts, after checking the
// pad array.
__device__ inline bool signal_setup(const SignalArgs& a, const SignalCtx& c) {
  if (blockIdx.x != 0) return false;
  SignalCtx quiet = c;
  if (threadIdx.x != 0) quiet.err = nullptr;
  return check_ptrs(quiet, a.pad_ptrs);
}

}  // namespace symmem

using symmem::AllReduceArgs;
using symmem::SignalArgs;

// put_signal raises the slot of rank in the pad of peer on channel
// (release, system scope).
extern "C" __global__ void __launch_bounds__(1024) put_signal(const __grid_constant__ SignalArgs a) {
  const symmem::SignalCtx c = symmem::signal_ctx(a.h, a.rank, a.world, a.pad_bytes, a.timeout_ns);
  if (!symmem::signal_setup(a, c) || threadIdx.x != 0) return;
  symmem::signal_op(c, a.pad_ptrs, true, a.peer, a.channel, symmem::kRelease);
}

// wait_signal consumes the signal from peer on channel in this rank's pad
// (acquire, system scope).
extern "C" __global__ void __launch_bounds__(1024) wait_signal(const __grid_constant__ SignalArgs a) {
  const symmem::SignalCtx c = symmem::signal_ctx(a.h, a.rank, a.world, a.pad_bytes, a.timeout_ns);
  if (!symmem::signal_setup(a, c) || threadIdx.x != 0) return;
  symmem::signal_op(c, a.pad_ptrs, false, a.peer, a.channel, symmem::kAcquire);
}

// barrier: thread p puts to peer p (release) and waits for it (acquire) on
// channel, for every peer other than this rank.
extern "C" __global__ void __launch_bounds__(1024) barrier(const __grid_constant__ SignalArgs a) {
  const symmem::SignalCtx c = symmem::signal_ctx(a.h, a.rank, a.world, a.pad_bytes, a.timeout_ns);
  if (!symmem::signal_setup(a, c)) return;
  symmem::block_barrier(c, a.pad_ptrs, a.channel, symmem::kRelease, symmem::kAcquire);
}

// one_shot_all_reduce: at most 512 threads per block (its register budget).
extern "C" __global__ void __launch_bounds__(512) one_shot_all_reduce(const __grid_constant__ AllReduceArgs a) {
  symmem::all_reduce<symmem::OneShot>(a);
}

extern "C" __global__ void __launch_bounds__(1024) two_shot_all_reduce(const __grid_constant__ AllReduceArgs a) {
  symmem::all_reduce<symmem::TwoShot>(a);
}

// The specialised entry points: <kernel>_<dtype>_w<W>, listed by the
// generated abi.cuh (kernels/cabi).
#define SYMMEM_ENTRY(name, bounds, body, type, w)                                         \
  extern "C" __global__ void __launch_bounds__(bounds) name(const __grid_constant__ AllReduceArgs a) { \
    symmem::all_reduce_fixed<symmem::body, symmem::type, w>(a);                            \
  }
SYMMEM_SPECIALISED_ENTRIES(SYMMEM_ENTRY)
#undef SYMMEM_ENTRY

// ll_all_reduce: the low-latency one-shot (packets with flags, no barrier).
extern "C" __global__ void __launch_bounds__(512) ll_all_reduce(const __grid_constant__ AllReduceArgs a) {
  symmem::low_latency_all_reduce(a);
}
