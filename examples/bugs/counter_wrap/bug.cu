// counter_wrap, the bug: a one-shot gather-and-sum across ranks whose
// barrier epoch is a 32-bit counter kept in device memory and compared with
// "<". After 2^32 barriers the counter wraps to 0, and a wait for "at least
// 0" is satisfied by any flag: the barrier stops waiting, and a rank reads a
// peer's buffer before the peer wrote this call's values into it.
//
// data[r] is rank r's symmetric buffer of n floats; flags[r] is rank r's
// signal pad: slot p holds the latest barrier value rank p raised for it.
// count is this rank's barrier counter (the last value it raised).

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
        while (get_flag(&flags[rank][t]) < v) { // BUG: after the wrap, v is 0 and nothing is below it
        }
    }
    __syncthreads();
}

extern "C" __global__ void gather_sum(float* const* data, unsigned* const* flags, unsigned* count, const float* in,
                                      float* out, int rank, int world, int n)
{
    unsigned e = *count;
    float* mine = data[rank];
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        mine[i] = in[i];
    barrier(flags, rank, world, e + 1);
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float s = 0.0f;
        for (int r = 0; r < world; ++r)
            s += data[r][i];
        out[i] = s;
    }
    barrier(flags, rank, world, e + 2);
    if (threadIdx.x == 0)
        *count = e + 2;
}
