// sentinel_negative_zero, the bug: a one-shot all-reduce with Lamport-style
// polling. Every slot of the receive buffers starts as -0.0, which means
// "empty"; a rank stores its values straight into its slot of every peer's
// buffer, and a reader polls each element until it is no longer empty, so
// the value is its own flag and no barrier is needed. But real data can be
// -0.0: here the input is scaled in flush-to-zero arithmetic (as a kernel
// built with fast math is), which turns a tiny negative value into -0.0.
// The writer stores that -0.0 as it is, and the reader, which compares
// floats (+0.0 == -0.0), takes it for an empty slot and waits forever.
//
// lamport[r] is rank r's receive buffer: world slots of n floats, slot p
// written by rank p. One call: a real kernel rotates three such buffers
// and clears the one it used two calls ago.

__device__ __forceinline__ float scale_ftz(float x, float s)
{
    float y;
    asm("mul.ftz.f32 %0, %1, %2;" : "=f"(y) : "f"(x), "f"(s));
    return y;
}

__device__ __forceinline__ void put_value(float* p, float v)
{
    asm volatile("st.volatile.global.f32 [%0], %1;" ::"l"(p), "f"(v) : "memory");
}

__device__ __forceinline__ float get_value(const float* p)
{
    float v;
    asm volatile("ld.volatile.global.f32 %0, [%1];" : "=f"(v) : "l"(p) : "memory");
    return v;
}

extern "C" __global__ void lamport_sum(float* const* lamport, const float* in, float* out, float scale, int rank,
                                       int world, int n)
{
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float v = scale_ftz(in[i], scale); // a negative subnormal becomes -0.0
        for (int p = 0; p < world; ++p)
            put_value(&lamport[p][rank * n + i], v); // BUG: -0.0 is stored as it is
    }
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float s = 0.0f;
        for (int r = 0; r < world; ++r) {
            float v;
            while ((v = get_value(&lamport[rank][r * n + i])) == -0.0f) { // BUG: also true of +0.0
            }
            s += v;
        }
        out[i] = s;
    }
}
