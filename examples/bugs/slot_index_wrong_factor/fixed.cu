// slot_index_wrong_factor, the fix: channels are strided by world, the
// number of flags the host gave each channel, so every slot lies in the
// pad.
//
// data[r] is rank r's symmetric buffer of n floats; flags[r] is rank r's
// signal pad of gridDim.x * world flags: slot c * world + p holds the flag
// rank p raised for channel c.

// The flag's store and load are macros, so that each access carries the
// line of its use.
#define PUT_FLAG(p, v) asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory")
#define GET_FLAG(p) \
    ({ \
        unsigned v_; \
        asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v_) : "l"(p) : "memory"); \
        v_; \
    })

extern "C" __global__ void gather_sum(float* const* data, unsigned* const* flags, const float* in, float* out,
                                      int rank, int world, int n, unsigned epoch)
{
    float* mine = data[rank];
    int first = blockIdx.x * blockDim.x + threadIdx.x;
    int stride = gridDim.x * blockDim.x;
    for (int i = first; i < n; i += stride)
        mine[i] = in[i];
    __syncthreads();
    int t = threadIdx.x;
    if (t < world) {
        int base = blockIdx.x * world; // FIX: world flags per channel, as the host sized the pad
        PUT_FLAG(&flags[t][base + rank], epoch);
        while (GET_FLAG(&flags[rank][base + t]) != epoch) {
        }
    }
    __syncthreads();
    for (int i = first; i < n; i += stride) {
        float s = 0.0f;
        for (int r = 0; r < world; ++r)
            s += data[r][i];
        out[i] = s;
    }
}
