// One-stage bf16 all-reduce in the usual shape of inference engines'
// custom all-reduce kernels: the peers' buffers come as a by-value array
// of pointers, copied into a local array indexed at run time, and the sum
// is taken on packed bf16 pairs. Its barrier is the release/acquire flag
// barrier of twostage_relacq.cu, one flag per block and peer.
//
// nvcc puts the pointer array in local memory (.local, ld.local) and
// emits packed bf16x2 arithmetic: what the interpreter must support to
// run it (symmem check --ptx onestage_bf16.ptx --list-unsupported).
#include <cuda_bf16.h>

#define MAX_BLOCKS 64
#define MAX_WORLD 8

struct Peers {
  const __nv_bfloat162* ptrs[MAX_WORLD];
};

struct Flags {
  unsigned int slot[2][MAX_BLOCKS][MAX_WORLD];  // [barrier][block][peer]
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

extern "C" __global__ void onestage_bf16(Peers peers, Flags* const* flags, __nv_bfloat162* out, int rank, int world,
                                         int pairs, unsigned int flag) {
  const __nv_bfloat162* local[MAX_WORLD];
  for (int r = 0; r < MAX_WORLD; r++) local[r] = peers.ptrs[(rank + r) % world];
  barrier(flags, 0, rank, world, flag);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < pairs; i += gridDim.x * blockDim.x) {
    __nv_bfloat162 s = local[0][i];
    for (int r = 1; r < world; r++) s = __hadd2(s, local[r][i]);
    out[i] = s;
  }
  barrier(flags, 1, rank, world, flag);
}
