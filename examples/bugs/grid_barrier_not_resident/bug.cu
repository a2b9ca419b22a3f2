// grid_barrier_not_resident, the bug: an all-reduce of every rank's vector
// followed by an L1 normalisation, out[i] = s[i] / (s[0] + ... + s[n-1]),
// where s[i] is the sum over ranks of data[r][i]. The grid's blocks split
// the vector; the normalisation needs every block's partial sum, so the
// blocks meet at a software grid barrier. Every block waits there for all
// gridDim.x blocks, which holds only when they are all resident at once:
// each block keeps a 40 KiB tile of shared memory, so an SM holds 5 of them,
// and a grid larger than 5 x the SM count hangs on a GPU (the blocks past
// the resident ones start only when a resident block exits, and none does).
//
// data[r] is rank r's symmetric buffer of n floats; partials holds one
// float per block; arrived counts the blocks that reached the barrier, over
// every call (epoch is 1 for the first call, 2 for the second, ...).

#define TILE 10240 // floats: a block's slice is at most this long

__device__ __forceinline__ unsigned load_acquire(const unsigned* p)
{
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

// block_sum returns the sum of v over the block's threads, to every thread.
__device__ float block_sum(float v)
{
    __shared__ float warp_sums[32];
    for (int d = 16; d > 0; d /= 2)
        v += __shfl_xor_sync(0xffffffffu, v, d);
    if (threadIdx.x % 32 == 0)
        warp_sums[threadIdx.x / 32] = v;
    __syncthreads();
    float s = 0.0f;
    for (int w = 0; w < (blockDim.x + 31) / 32; ++w)
        s += warp_sums[w];
    __syncthreads();
    return s;
}

extern "C" __global__ void allreduce_normalize(float* const* data, float* out, float* partials, unsigned* arrived,
                                               int world, int n, unsigned epoch)
{
    __shared__ float tile[TILE];
    int per = (n + gridDim.x - 1) / gridDim.x;
    int lo = blockIdx.x * per;
    int len = max(0, min(per, n - lo));
    float mine = 0.0f;
    for (int j = threadIdx.x; j < len; j += blockDim.x) {
        float s = 0.0f;
        for (int r = 0; r < world; ++r)
            s += data[r][lo + j];
        tile[j] = s;
        mine += s;
    }
    float part = block_sum(mine);
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = part;
        __threadfence();
        atomicAdd(arrived, 1u);
        // BUG: waits for all gridDim.x blocks, but only the resident ones can arrive
        while (load_acquire(arrived) < gridDim.x * epoch) {
        }
    }
    __syncthreads();
    float total = 0.0f;
    for (int b = 0; b < gridDim.x; ++b)
        total += partials[b];
    for (int j = threadIdx.x; j < len; j += blockDim.x)
        out[lo + j] = tile[j] / total;
}
