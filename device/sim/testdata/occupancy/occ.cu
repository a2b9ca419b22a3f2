// The source of h200.txt: what cudaOccupancyMaxActiveBlocksPerMultiprocessor
// reports on an H200 for kernels of several register counts and static and
// dynamic shared memory sizes, with the device's limits. Occupancy queries
// only: no kernel is launched. Built with a copy of
// examples/bugs/grid_barrier_not_resident/bug.cu beside it:
//
//     nvcc -O3 -arch=sm_90 occ.cu -o occ && ./occ > h200.txt
#include <cstdio>
#include "bug.cu"

__global__ void k_plain(float* p) { p[threadIdx.x] += 1.0f; }

__global__ void k_static40k(float* p)
{
    __shared__ float t[10240];
    t[threadIdx.x] = p[threadIdx.x];
    __syncthreads();
    p[threadIdx.x] = t[(threadIdx.x + 1) % blockDim.x];
}

__global__ void k_static12k(float* p)
{
    __shared__ float t[3072];
    t[threadIdx.x] = p[threadIdx.x];
    __syncthreads();
    p[threadIdx.x] = t[(threadIdx.x + 1) % blockDim.x];
}

__global__ void k_dyn(float* p)
{
    extern __shared__ float t[];
    t[threadIdx.x] = p[threadIdx.x];
    __syncthreads();
    p[threadIdx.x] = t[(threadIdx.x + 1) % blockDim.x];
}

// Many live values: ptxas allocates many registers.
__global__ void k_regs(const float* __restrict__ in, float* out, int n)
{
    float acc[96];
#pragma unroll
    for (int k = 0; k < 96; ++k)
        acc[k] = in[threadIdx.x + k * n];
#pragma unroll
    for (int r = 0; r < 8; ++r)
#pragma unroll
        for (int k = 0; k < 96; ++k)
            acc[k] = acc[k] * acc[(k + r + 1) % 96] + in[k];
    float s = 0;
#pragma unroll
    for (int k = 0; k < 96; ++k)
        s += acc[k] * (k + 1);
    out[threadIdx.x] = s;
}

template <typename K> void q(const char* name, K k, int block, size_t dyn)
{
    cudaFuncAttributes a;
    cudaFuncGetAttributes(&a, k);
    int blocks = -1;
    cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, k, block, dyn);
    printf("%s block=%d dyn=%zu regs=%d static=%zu -> %d (%s)\n", name, block, dyn, a.numRegs, a.sharedSizeBytes, blocks,
           cudaGetErrorString(e));
}

int main()
{
    cudaDeviceProp p;
    cudaGetDeviceProperties(&p, 0);
    printf("%s sms=%d threads/sm=%d blocks/sm=%d regs/sm=%d regs/block=%d smem/sm=%zu smem/block optin=%zu reserved/block=%zu\n",
           p.name, p.multiProcessorCount, p.maxThreadsPerMultiProcessor, p.maxBlocksPerMultiProcessor, p.regsPerMultiprocessor,
           p.regsPerBlock, p.sharedMemPerMultiprocessor, p.sharedMemPerBlockOptin, p.reservedSharedMemPerBlock);
    cudaFuncSetAttribute(k_dyn, cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024);
    int bs[] = {32, 64, 96, 128, 192, 256, 384, 512, 640, 768, 1024};
    for (int b : bs)
        q("plain", k_plain, b, 0);
    for (int b : bs)
        q("regs", k_regs, b, 0);
    int b3[] = {64, 256, 1024};
    for (int b : b3)
        q("static40k", k_static40k, b, 0);
    int b2[] = {64, 256};
    for (int b : b2)
        q("static12k", k_static12k, b, 0);
    size_t dyns[] = {0, 1, 1024, 8192, 32768, 48 * 1024, 65536, 100 * 1024, 113 * 1024, 114 * 1024, 200 * 1024, 226 * 1024, 227 * 1024};
    for (size_t d : dyns)
        q("dyn", k_dyn, 128, d);
    q("allreduce_normalize(bug)", allreduce_normalize, 64, 0);
    q("allreduce_normalize(bug)", allreduce_normalize, 1024, 0);
    return 0;
}
