// nc_load_of_peer_data, the bug: a one-shot gather-and-sum that reads the
// peers' buffers through the non-coherent read-only path (ld.global.nc,
// what __ldg compiles to; written as inline PTX here so that the load's
// line is this file's) after a correct release/acquire flag. That path is
// valid only for bytes nothing writes while the kernel runs; the peers
// write these during the kernel, so the load may return a stale cached
// line whatever the flag ordered.
//
// data[r] is rank r's symmetric buffer of n floats; flags[r] is rank r's
// signal pad: slot p holds the flag rank p raised for it.

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
        for (int r = 0; r < world; ++r) {
            float v;
            asm volatile("ld.global.nc.f32 %0, [%1];" : "=f"(v) : "l"(data[r] + i) : "memory"); // BUG: as __ldg
            s += v;
        }
        out[i] = s;
    }
}
