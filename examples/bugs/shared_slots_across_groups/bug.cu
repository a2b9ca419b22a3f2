// shared_slots_across_groups, the bug: a one-shot gather-and-sum called by
// two groups of ranks at once (two communicators, each with its own data
// buffer, on two streams), which share one signal pad and index it by rank
// only. One group's flag lands in the slot the other group polls, so a rank
// of group B may pass its wait on group A's flag and read a peer's group-B
// data before the peer wrote it.
//
// data[r] is rank r's symmetric buffer of n floats for this group;
// flags[r] is rank r's signal pad, shared by the groups: slot
// p holds the flag rank p raised, whichever group it raised it for.

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
                                      int rank, int world, int n, unsigned epoch, int group)
{
    float* mine = data[rank];
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        mine[i] = in[i];
    __syncthreads();
    int t = threadIdx.x;
    if (t < world) {
        (void)group;
        int base = 0; // BUG: every group uses slots 0..world-1
        put_flag(&flags[t][base + rank], epoch);
        while (get_flag(&flags[rank][base + t]) != epoch) {
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
