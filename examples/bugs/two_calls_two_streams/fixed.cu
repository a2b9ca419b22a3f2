// two_calls_two_streams, the fix: a one-shot all-reduce (gather and sum,
// with an entry and an exit barrier) that two streams of each rank may call
// at once: each call uses the half of the workspace and the set of flags
// of its stream's slot, so calls in flight on two streams share nothing.
//
// ws[r] is rank r's symmetric workspace, two halves of n floats; flags[r]
// is rank r's signal pad, two sets of kMaxWorld slots (slot p of a set
// holds the latest barrier value rank p raised for it); slot names the
// half and the set a call may use (the stream's index). epoch is the
// call's number on its stream, 1, 2, ...

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

extern "C" __global__ void allreduce(float* const* ws, unsigned* const* flags, const float* in, float* out, int rank,
                                     int world, int n, int slot, unsigned epoch)
{
    int half = slot * n, base = slot * kMaxWorld; // FIX: a workspace and flags per stream
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        ws[rank][half + i] = in[i];
    barrier(flags, base, rank, world, 2 * epoch - 1);
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float s = 0.0f;
        for (int r = 0; r < world; ++r)
            s += ws[r][half + i];
        out[i] = s;
    }
    barrier(flags, base, rank, world, 2 * epoch);
}
