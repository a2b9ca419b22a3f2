// memset_after_peer_signal, the fix: the kernel starts with a barrier on
// epoch flags that nobody resets (the call's epoch, larger every call).
// Once a peer raised this call's epoch, its kernel has started, so its
// host's memset of its pad is done: only then does this rank set flags in
// that pad, which the memset can no longer erase.
//
// data[r] is rank r's symmetric buffer of n floats; flags[r] is rank r's
// pad of 32 words: words 0-15 are the flags the host zeroes (slot p set by
// rank p), words 16-31 epoch flags that nobody resets, which only the fix
// uses.

constexpr int kEpochSlots = 16;

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

// barrier raises v in slot base+rank of every peer's pad and waits until
// every peer raised at least v in ours.
__device__ void barrier(unsigned* const* flags, int base, int rank, int world, unsigned v)
{
    __syncthreads();
    int t = threadIdx.x;
    if (t < world) {
        put_flag(&flags[t][base + rank], v);
        while (get_flag(&flags[rank][base + t]) < v) {
        }
    }
    __syncthreads();
}

extern "C" __global__ void gather_sum(float* const* data, unsigned* const* flags, const float* in, float* out,
                                      int rank, int world, int n, unsigned epoch)
{
    barrier(flags, kEpochSlots, rank, world, epoch); // FIX: every peer's memset is done
    float* mine = data[rank];
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        mine[i] = in[i];
    barrier(flags, 0, rank, world, 1);
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float s = 0.0f;
        for (int r = 0; r < world; ++r)
            s += data[r][i];
        out[i] = s;
    }
    barrier(flags, 0, rank, world, 2);
}
