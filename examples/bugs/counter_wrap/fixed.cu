// counter_wrap, the fix: the barrier still counts in 32 bits, but a wait
// compares the signed difference of the flag and the value it waits for,
// which stays right across the wrap (as long as no two ranks are 2^31
// barriers apart).
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
// v, or a later value, in ours.
__device__ void barrier(unsigned* const* flags, int rank, int world, unsigned v)
{
    __syncthreads();
    int t = threadIdx.x;
    if (t < world) {
        put_flag(&flags[t][rank], v);
        while ((int)(get_flag(&flags[rank][t]) - v) < 0) { // FIX: wrap-safe
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
