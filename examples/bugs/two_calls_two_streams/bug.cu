// two_calls_two_streams, the bug: a one-shot all-reduce (gather and sum,
// with an entry and an exit barrier) whose workspace and barrier flags are
// one per rank. A program runs two of these calls at once, on two
// streams of each rank (say, two parts of a model overlapped); both write
// the same workspace and raise the same flags with the same epochs, so one
// call's barrier is satisfied by the other's flags, and each call
// overwrites the data the other reads.
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
    (void)slot;
    int half = 0, base = 0; // BUG: every call in flight uses the same half and flags
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
