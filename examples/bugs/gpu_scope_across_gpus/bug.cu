// gpu_scope_across_gpus, the bug: a one-shot gather-and-sum whose flag is
// released and acquired at .gpu scope. The peer is another GPU: a .gpu
// release and a .gpu acquire of two devices do not share a scope, so they
// synchronise nothing, and the peer may read the data before it lands.
//
// data[r] is rank r's symmetric buffer of n floats; flags[r] is rank r's
// signal pad: slot p holds the flag rank p raised for it.

__device__ __forceinline__ void put_flag(unsigned* p, unsigned v)
{
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory"); // BUG: .gpu, peer is a GPU
}

__device__ __forceinline__ unsigned get_flag(const unsigned* p)
{
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory"); // BUG: .gpu as well
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
        for (int r = 0; r < world; ++r)
            s += data[r][i];
        out[i] = s;
    }
}
