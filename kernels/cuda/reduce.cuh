// Element types, vectors and the reduction arithmetic: the CUDA twin of
// kernels/reduce.go and kernels/convert.go. Accumulate in float32 in rank
// order 0..W-1, round once to the element type with round-to-nearest-even,
// canonicalise NaNs. Must be built without fast-math (no flush to zero, IEEE
// division).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "abi.cuh"

namespace symmem {

// Vec is VEC bytes (16, 8 or 4) loaded or stored with one access.
template <int VEC>
struct Vec {
  uint32_t w[VEC / 4];
};

__device__ __forceinline__ Vec<16> load_vec16(const void* p) {
  const uint4 u = *reinterpret_cast<const uint4*>(p);
  return Vec<16>{{u.x, u.y, u.z, u.w}};
}

template <int VEC>
__device__ __forceinline__ Vec<VEC> load_vec(const void* p) {
  Vec<VEC> v;
  if constexpr (VEC == 16) {
    v = load_vec16(p);
  } else if constexpr (VEC == 8) {
    const uint2 u = *reinterpret_cast<const uint2*>(p);
    v.w[0] = u.x;
    v.w[1] = u.y;
  } else {
    v.w[0] = *reinterpret_cast<const uint32_t*>(p);
  }
  return v;
}

template <int VEC>
__device__ __forceinline__ void store_vec(void* p, const Vec<VEC>& v) {
  if constexpr (VEC == 16) {
    *reinterpret_cast<uint4*>(p) = make_uint4(v.w[0], v.w[1], v.w[2], v.w[3]);
  } else if constexpr (VEC == 8) {
    *reinterpret_cast<uint2*>(p) = make_uint2(v.w[0], v.w[1]);
  } else {
    *reinterpret_cast<uint32_t*>(p) = v.w[0];
  }
}

// Element types: get decodes element i of a vector exactly to float32; put
// rounds v to nearest even (NaN becomes the canonical NaN) and writes it.
struct F32 {
  static constexpr int kSize = 4;
  static constexpr DType kDType = kFloat32;
  __device__ __forceinline__ static float get(const uint32_t* w, int i) { return __uint_as_float(w[i]); }
  __device__ __forceinline__ static void put(uint32_t* w, int i, float v) {
    w[i] = (v != v) ? 0x7fffffffu : __float_as_uint(v);
  }
};

// half16 reads the 16-bit element i of a word array (little endian).
__device__ __forceinline__ uint32_t half16(const uint32_t* w, int i) { return (w[i / 2] >> (16 * (i & 1))) & 0xffffu; }

__device__ __forceinline__ void set_half16(uint32_t* w, int i, uint32_t h) {
  const int shift = 16 * (i & 1);
  w[i / 2] = (w[i / 2] & ~(0xffffu << shift)) | (h << shift);
}

struct BF16 {
  static constexpr int kSize = 2;
  static constexpr DType kDType = kBFloat16;
  __device__ __forceinline__ static float get(const uint32_t* w, int i) { return __uint_as_float(half16(w, i) << 16); }
  __device__ __forceinline__ static void put(uint32_t* w, int i, float v) {
    const uint32_t h = (v != v) ? 0x7fffu : static_cast<uint32_t>(__bfloat16_as_ushort(__float2bfloat16_rn(v)));
    set_half16(w, i, h);
  }
};

struct F16 {
  static constexpr int kSize = 2;
  static constexpr DType kDType = kFloat16;
  __device__ __forceinline__ static float get(const uint32_t* w, int i) {
    return __half2float(__ushort_as_half(static_cast<unsigned short>(half16(w, i))));
  }
  __device__ __forceinline__ static void put(uint32_t* w, int i, float v) {
    const uint32_t h = (v != v) ? 0x7fffu : static_cast<uint32_t>(__half_as_ushort(__float2half_rn(v)));
    set_half16(w, i, h);
  }
};

// combine folds x (the next rank's element) into acc. max and min take x
// when it is NaN or strictly beyond acc, so NaN propagates and among equal
// values the lowest rank wins.
__device__ __forceinline__ float combine(float acc, float x, int op) {
  switch (op) {
    case kMax:
      return (x != x || x > acc) ? x : acc;
    case kMin:
      return (x != x || x < acc) ? x : acc;
    default:
      return __fadd_rn(acc, x);
  }
}

// finish applies avg's division and rounds the accumulators into a vector.
template <typename T, int VEC>
__device__ __forceinline__ Vec<VEC> finish(float (&acc)[VEC / T::kSize], int op, int world) {
  constexpr int E = VEC / T::kSize;
  Vec<VEC> out;
#pragma unroll
  for (int k = 0; k < VEC / 4; k++) out.w[k] = 0;
  if (op == kAvg) {
    const float w = static_cast<float>(world);
#pragma unroll
    for (int k = 0; k < E; k++) acc[k] = __fdiv_rn(acc[k], w);
  }
#pragma unroll
  for (int k = 0; k < E; k++) T::put(out.w, k, acc[k]);
  return out;
}

// combine_fixed reduces W vectors, loaded from the ranks in rank order.
template <typename T, int VEC, int W>
__device__ __forceinline__ Vec<VEC> combine_fixed(const Vec<VEC> (&x)[W], int op) {
  constexpr int E = VEC / T::kSize;
  float acc[E];
#pragma unroll
  for (int k = 0; k < E; k++) acc[k] = T::get(x[0].w, k);
#pragma unroll
  for (int r = 1; r < W; r++) {
#pragma unroll
    for (int k = 0; k < E; k++) acc[k] = combine(acc[k], T::get(x[r].w, k), op);
  }
  return finish<T, VEC>(acc, op, W);
}

// reduce_fixed reduces the vector at byte offset off of W tensors (bases in
// rank order), issuing every load before the first use.
template <typename T, int VEC, int W>
__device__ __forceinline__ Vec<VEC> reduce_fixed(const char* const (&base)[W], uint64_t off, int op) {
  Vec<VEC> x[W];
#pragma unroll
  for (int r = 0; r < W; r++) x[r] = load_vec<VEC>(base[r] + off);
  return combine_fixed<T, VEC, W>(x, op);
}

// reduce_fixed2 reduces the vectors at byte offsets off0 and off1, issuing
// all 2W loads before the first use.
template <typename T, int VEC, int W>
__device__ __forceinline__ void reduce_fixed2(const char* const (&base)[W], uint64_t off0, uint64_t off1, int op,
                                              Vec<VEC>& out0, Vec<VEC>& out1) {
  Vec<VEC> x0[W], x1[W];
#pragma unroll
  for (int r = 0; r < W; r++) {
    x0[r] = load_vec<VEC>(base[r] + off0);
    x1[r] = load_vec<VEC>(base[r] + off1);
  }
  out0 = combine_fixed<T, VEC, W>(x0, op);
  out1 = combine_fixed<T, VEC, W>(x1, op);
}

// reduce_any is reduce_fixed for a world size known only at run time.
template <typename T, int VEC>
__device__ __forceinline__ Vec<VEC> reduce_any(const uint64_t* bufs, uint64_t offset, int world, uint64_t off,
                                               int op) {
  constexpr int E = VEC / T::kSize;
  float acc[E];
  Vec<VEC> x = load_vec<VEC>(reinterpret_cast<const char*>(bufs[0]) + offset + off);
#pragma unroll
  for (int k = 0; k < E; k++) acc[k] = T::get(x.w, k);
  for (int r = 1; r < world; r++) {
    x = load_vec<VEC>(reinterpret_cast<const char*>(bufs[r]) + offset + off);
#pragma unroll
    for (int k = 0; k < E; k++) acc[k] = combine(acc[k], T::get(x.w, k), op);
  }
  return finish<T, VEC>(acc, op, world);
}

}  // namespace symmem
