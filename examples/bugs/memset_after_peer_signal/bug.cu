// memset_after_peer_signal, the bug: a one-shot gather-and-sum whose
// barriers use one-shot flags (1 for "my data is ready", 2 for "I am done
// reading yours") in a signal pad that the host zeroes before every call
// with a memset on the rank's stream. The memset is ordered with this
// rank's kernels only: a peer that already started the call may have set
// its flag in this rank's pad, and the memset erases it (the barrier then
// waits forever), or lands after it (the race the checker reports).
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
    (void)epoch; // BUG: no barrier before the flags the host zeroes are set
    float* mine = data[rank];
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        mine[i] = in[i];
    barrier(flags, 0, rank, world, 1); // BUG: a peer's memset may come after this flag
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float s = 0.0f;
        for (int r = 0; r < world; ++r)
            s += data[r][i];
        out[i] = s;
    }
    barrier(flags, 0, rank, world, 2);
}
