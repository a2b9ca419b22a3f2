// shared_slots_across_groups, the fix: each group offsets its slots by
// group * kMaxWorld, so the two groups' flags never meet in one slot.
//
// data[r] is rank r's symmetric buffer of n floats for this group;
// flags[r] is rank r's signal pad, shared by the groups: slot
// g * kMaxWorld + p holds the flag rank p raised for group g.

constexpr int kMaxWorld = 8;

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
        int base = group * kMaxWorld; // FIX: this group's own slots
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
