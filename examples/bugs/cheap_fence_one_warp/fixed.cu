// cheap_fence_one_warp, the fix: __syncthreads before the fence, so every
// warp's data stores happen before the fencing lanes' fence (bar.sync
// orders them), and the fence followed by the flag store publishes them
// all.
//
// data[r] is rank r's symmetric buffer of n floats; flags[r] is rank r's
// signal pad: slot p holds the flag rank p raised for it.

__device__ __forceinline__ void put_flag(unsigned* p, unsigned v)
{
    asm volatile("st.relaxed.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ unsigned get_flag(const unsigned* p)
{
    unsigned v;
    asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

extern "C" __global__ void gather_sum(float* const* data, unsigned* const* flags, const float* in, float* out,
                                      int rank, int world, int n, unsigned epoch)
{
    float* mine = data[rank];
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        mine[i] = in[i];
    int t = threadIdx.x;
    __syncthreads(); // FIX: every warp's stores come before the fence below
    if (t < world) {
        __threadfence_system();
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
