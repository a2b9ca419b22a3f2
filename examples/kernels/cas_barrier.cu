// A barrier built from compare-and-swap signals, as symmetric-memory
// libraries build theirs: a put swaps a peer's slot from 0 to 1 (retrying
// while the previous put is not consumed yet), a wait swaps its own slot
// from 1 back to 0, so the slots are ready for the next call without a
// reset.
//
// cas_exchange: each rank writes its scaled input into its own symmetric
// buffer, meets its peers, sums every peer's buffer into its output, and
// meets them again before returning. Puts release and waits acquire at
// system scope: the PTX memory model finds no race.
//
// cas_exchange_relaxed_wait: the same, but the first barrier's wait is
// relaxed. Nothing then orders a peer's writes before this rank's reads:
// a data race.
#define MAX_WORLD 8

__device__ void put_signal(unsigned int* slot) {
  unsigned int old;
  do {
    asm volatile("atom.release.sys.global.cas.b32 %0, [%1], %2, %3;" : "=r"(old) : "l"(slot), "r"(0u), "r"(1u) : "memory");
  } while (old != 0);
}

template <bool Relaxed>
__device__ void wait_signal(unsigned int* slot) {
  unsigned int old;
  do {
    if (Relaxed) {
      asm volatile("atom.relaxed.sys.global.cas.b32 %0, [%1], %2, %3;" : "=r"(old) : "l"(slot), "r"(1u), "r"(0u) : "memory");
    } else {
      asm volatile("atom.acquire.sys.global.cas.b32 %0, [%1], %2, %3;" : "=r"(old) : "l"(slot), "r"(1u), "r"(0u) : "memory");
    }
  } while (old != 1);
}

// barrier meets every peer on channel (0 or 1) of this block: thread t
// puts to peer t and waits for peer t.
template <bool RelaxedWait>
__device__ void barrier(unsigned int* const* pads, int channel, int rank, int world) {
  __syncthreads();
  if (threadIdx.x < world) {
    int base = (blockIdx.x * 2 + channel) * MAX_WORLD;
    put_signal(pads[threadIdx.x] + base + rank);
    wait_signal<RelaxedWait>(pads[rank] + base + threadIdx.x);
  }
  __syncthreads();
}

template <bool RelaxedFirstWait>
__device__ void exchange(float* const* bufs, unsigned int* const* pads, const float* in, float* out, int rank,
                         int world, int n, float scale) {
  int stride = gridDim.x * blockDim.x;
  int first = blockIdx.x * blockDim.x + threadIdx.x;
  for (int i = first; i < n; i += stride) bufs[rank][i] = in[i] * scale;
  barrier<RelaxedFirstWait>(pads, 0, rank, world);
  for (int i = first; i < n; i += stride) {
    float s = 0.f;
    for (int r = 0; r < world; r++) s += bufs[r][i];
    out[i] = s;
  }
  barrier<false>(pads, 1, rank, world);
}

extern "C" __global__ void cas_exchange(float* const* bufs, unsigned int* const* pads, const float* in, float* out,
                                        int rank, int world, int n, float scale) {
  exchange<false>(bufs, pads, in, out, rank, world, n, scale);
}

extern "C" __global__ void cas_exchange_relaxed_wait(float* const* bufs, unsigned int* const* pads, const float* in,
                                                     float* out, int rank, int world, int n, float scale) {
  exchange<true>(bufs, pads, in, out, rank, world, n, scale);
}
