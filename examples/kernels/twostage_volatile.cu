// Two-stage all-reduce (reduce-scatter, then all-gather) whose barriers
// are volatile 32-bit flags, one per block, phase and peer, with a fence
// only on the writer's side.
//
// Stage 1: rank r sums chunk r of every peer's buffer into chunk r of its
// own buffer. Stage 2: every rank gathers chunk p from rank p. Between the
// stages, thread t of each block fences and stores the call's flag into
// its slot of peer t, then spins on peer t's slot of its own flags.
//
// The writer's fence orders the block's sums before its flag store, but
// the reader's volatile load acquires nothing: in the PTX memory model the
// gathered chunk may be read before the peer's sums reach it (a data race
// between stage 1's stores and stage 2's loads).
#define MAX_BLOCKS 64
#define MAX_WORLD 8

struct Flags {
  unsigned int slot[3][MAX_BLOCKS][MAX_WORLD];  // [barrier][block][peer]
};

__device__ void barrier(Flags* const* flags, int phase, int rank, int world, unsigned int flag) {
  __syncthreads();
  if (threadIdx.x < world) {
    __threadfence_system();
    volatile unsigned int* peer = &flags[threadIdx.x]->slot[phase][blockIdx.x][rank];
    *peer = flag;
    volatile unsigned int* own = &flags[rank]->slot[phase][blockIdx.x][threadIdx.x];
    while (*own != flag) {
    }
  }
  __syncthreads();
}

extern "C" __global__ void twostage_volatile(float* const* bufs, Flags* const* flags, float* out, int rank, int world,
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
