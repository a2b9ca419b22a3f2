// missing_exit_barrier, the bug: a one-shot gather-and-sum that waits for
// every peer's data before reading it, but returns without waiting for
// the peers to finish reading its own. The next call overwrites the
// rank's buffer with new data while a slower peer still reads the old.
//
// data[r] is rank r's symmetric buffer of n floats; flags[r] is rank r's
// signal pad: slot p holds the latest barrier value rank p raised for it.
// epoch is the call's number, 1, 2, ...

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
    float* mine = data[rank];
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        mine[i] = in[i]; // the next call's store, while a peer may still read
    barrier(flags, rank, world, 2 * epoch - 1);
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float s = 0.0f;
        for (int r = 0; r < world; ++r)
            s += data[r][i];
        out[i] = s;
    }
    // BUG: no exit barrier; a peer may still read mine when the next call writes it
}
