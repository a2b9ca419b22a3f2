// missing_acquire, the bug: a one-shot gather-and-sum whose writer releases
// its flag, but whose reader polls it with a volatile load and no fence
// after the loop. A relaxed load acquires nothing: the reads of the peer's
// data that follow may be satisfied before the flag was seen.
//
// data[r] is rank r's symmetric buffer of n floats; flags[r] is rank r's
// signal pad: slot p holds the flag rank p raised for it.

__device__ __forceinline__ void put_flag(unsigned* p, unsigned v)
{
    asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ unsigned get_flag(const unsigned* p)
{
    return *(const volatile unsigned*)p; // BUG: relaxed; nothing after it is ordered after the peer's data
}

extern "C" __global__ void gather_sum(float* const* data, unsigned* const* flags, const float* in, float* out,
                                      int rank, int world, int n, unsigned epoch)
{
    float* mine = data[rank];
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        mine[i] = in[i];
    __syncthreads();
    int t = threadIdx.x;
    if (t < world) {
        put_flag(&flags[t][rank], epoch);
        while (get_flag(&flags[rank][t]) != epoch) {
        }
    }
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float s = 0.0f;
        for (int r = 0; r < world; ++r)
            s += data[r][i];
        out[i] = s;
    }
}
