// sentinel_negative_zero, the fix: a one-shot all-reduce with Lamport-style
// polling, where -0.0 in a slot means "empty". The writer replaces a -0.0
// of the data by +0.0 before storing it (the sum is the same), and the
// reader tests the bits of the sentinel, so +0.0 is data.
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

__device__ __forceinline__ bool is_empty(float v)
{
    return __float_as_uint(v) == 0x80000000u; // FIX: the bits of -0.0, not a float compare
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
        if (is_empty(v))
            v = 0.0f; // FIX: data never takes the sentinel's value
        for (int p = 0; p < world; ++p)
            put_value(&lamport[p][rank * n + i], v);
    }
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float s = 0.0f;
        for (int r = 0; r < world; ++r) {
            float v;
            while (is_empty(v = get_value(&lamport[rank][r * n + i]))) {
            }
            s += v;
        }
        out[i] = s;
    }
}
