// clear_then_set_lost_flag, the bug: a one-shot all-reduce whose start and
// end barriers reuse 0/1 flags, each cleared for the next call just before
// the barrier that answers it is raised. The clear and the set are plain
// volatile stores with nothing ordering them, so the set can become
// visible first: a peer that saw the set answers (its end flag for us)
// and that answer can land before our clear, which then erases it. We
// wait for the lost flag forever.
//
// pads[r] is rank r's signal pad: words START+p and END+p hold rank p's
// start and end flags for rank r.

#define START 0
#define END 16

__device__ __forceinline__ void put(unsigned* p, unsigned v) { *(volatile unsigned*)p = v; }

__device__ __forceinline__ unsigned get(const unsigned* p) { return *(const volatile unsigned*)p; }

__device__ void start_sync(unsigned* const* pads, int rank, int world)
{
    int t = threadIdx.x;
    if (t < world) {
        put(&pads[rank][END + t], 0);   // BUG: the clear of the last call's end flag ...
        put(&pads[t][START + rank], 1); // ... is not ordered before this set
        while (get(&pads[rank][START + t]) == 0) {
        }
    }
    __syncthreads();
}

__device__ void end_sync(unsigned* const* pads, int rank, int world)
{
    __syncthreads();
    int t = threadIdx.x;
    if (t < world) {
        put(&pads[rank][START + t], 0);
        __threadfence_system();
        put(&pads[t][END + rank], 1);
        while (get(&pads[rank][END + t]) == 0) {
        }
    }
    __syncthreads();
}

extern "C" __global__ void all_reduce(float* const* data, unsigned* const* pads, float* out, int rank, int world, int n)
{
    start_sync(pads, rank, world);
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float s = 0.0f;
        for (int r = 0; r < world; ++r)
            s += data[r][i];
        out[i] = s;
    }
    end_sync(pads, rank, world);
}
