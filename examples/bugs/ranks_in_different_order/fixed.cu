// ranks_in_different_order, the fix: a one-shot all-reduce (gather and
// sum, entry and exit barriers) whose sequence numbers and flags are kept
// per collective, so a call pairs with the peers' calls of the same
// collective whatever order the ranks issued the collectives in.
//
// ws[r] is rank r's symmetric workspace of this collective, n floats;
// flags[r] is rank r's signal pad, a set of kMaxWorld slots per collective
// (slot p of a set holds the latest barrier value rank p raised for it);
// count holds this rank's sequence counters, one per collective; coll is
// the collective's index.

constexpr int kMaxWorld = 8;

__device__ __forceinline__ void put_flag(unsigned* p, unsigned v)
{
    // A maximum: two collectives in flight never lower a flag.
    asm volatile("red.release.sys.global.max.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
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

extern "C" __global__ void allreduce(float* const* ws, unsigned* const* flags, unsigned* count, const float* in,
                                     float* out, int rank, int world, int n, int coll)
{
    int c = coll; // FIX: a sequence and a set of flags per collective
    __shared__ unsigned s_seq;
    if (threadIdx.x == 0)
        s_seq = atomicAdd(&count[c], 1u) + 1;
    __syncthreads();
    unsigned seq = s_seq;
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        ws[rank][i] = in[i];
    barrier(flags, c * kMaxWorld, rank, world, 2 * seq - 1);
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float s = 0.0f;
        for (int r = 0; r < world; ++r)
            s += ws[r][i];
        out[i] = s;
    }
    barrier(flags, c * kMaxWorld, rank, world, 2 * seq);
}
