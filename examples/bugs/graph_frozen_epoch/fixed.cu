// graph_frozen_epoch, the fix: the barrier epoch lives in device memory
// (slot kMaxWorld of the rank's own signal pad), read and advanced by the
// kernel itself, so every replay of a captured launch takes a new one. The
// epoch parameter is kept for the same signature and ignored.

constexpr int kMaxWorld = 8;

__device__ __forceinline__ void put_flag(unsigned* p, unsigned v)
{
    asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ unsigned get_flag(const unsigned* p)
{
    unsigned v;
    asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

// barrier raises v in every peer's pad and waits until every peer raised
// at least v in ours.
__device__ void barrier(unsigned* const* flags, int rank, int world, unsigned v)
{
    __syncthreads();
    int t = threadIdx.x;
    if (t < world) {
        put_flag(&flags[t][rank], v);
        while (get_flag(&flags[rank][t]) < v) {
        }
    }
    __syncthreads();
}

extern "C" __global__ void gather_sum(float* const* data, unsigned* const* flags, const float* in, float* out,
                                      int rank, int world, int n, unsigned epoch)
{
    (void)epoch;
    __shared__ unsigned s_epoch;
    if (threadIdx.x == 0)
        s_epoch = flags[rank][kMaxWorld] + 1; // FIX: this rank's call count, kept on the device
    __syncthreads();
    unsigned e = s_epoch;
    float* mine = data[rank];
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        mine[i] = in[i];
    barrier(flags, rank, world, 2 * e + 1);
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float s = 0.0f;
        for (int r = 0; r < world; ++r)
            s += data[r][i];
        out[i] = s;
    }
    barrier(flags, rank, world, 2 * e + 2);
    if (threadIdx.x == 0)
        flags[rank][kMaxWorld] = e;
}
