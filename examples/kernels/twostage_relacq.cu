// Two-stage all-reduce (reduce-scatter, then all-gather) whose barriers
// are 32-bit flags stored with st.release.sys and polled with
// ld.acquire.sys, one per block, phase and peer.
//
// The same kernel as twostage_volatile.cu but for its barrier: the block's
// threads meet at __syncthreads, then thread t releases its flag to peer t
// and acquires peer t's flag, then the block meets again. Release and
// acquire at system scope order every peer's sums before the gather: the
// PTX memory model finds no race.
#define MAX_BLOCKS 64
#define MAX_WORLD 8

struct Flags {
  unsigned int slot[3][MAX_BLOCKS][MAX_WORLD];  // [barrier][block][peer]
};

__device__ void store_release(unsigned int* p, unsigned int v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ unsigned int load_acquire(unsigned int* p) {
  unsigned int v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ void barrier(Flags* const* flags, int phase, int rank, int world, unsigned int flag) {
  __syncthreads();
  if (threadIdx.x < world) {
    store_release(&flags[threadIdx.x]->slot[phase][blockIdx.x][rank], flag);
    while (load_acquire(&flags[rank]->slot[phase][blockIdx.x][threadIdx.x]) != flag) {
    }
  }
  __syncthreads();
}

extern "C" __global__ void twostage_relacq(float* const* bufs, Flags* const* flags, float* out, int rank, int world,
                                           int n, unsigned int flag) {
  int chunk = (n + world - 1) / world;
  int stride = gridDim.x * blockDim.x;
  int first = blockIdx.x * blockDim.x + threadIdx.x;
  barrier(flags, 0, rank, world, flag);
  for (int j = first; j < chunk; j += stride) {
    int i = rank * chunk + j;
    if (i < n) {
      float s = 0.f;
      for (int r = 0; r < world; r++) s += bufs[r][i];
      bufs[rank][i] = s;
    }
  }
  barrier(flags, 1, rank, world, flag);
  for (int j = first; j < chunk; j += stride) {
    for (int p = 0; p < world; p++) {
      int i = p * chunk + j;
      if (i < n) out[i] = bufs[p][i];
    }
  }
  barrier(flags, 2, rank, world, flag);
}
