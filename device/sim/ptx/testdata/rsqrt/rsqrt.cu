// rsqrt.cu measures rsqrt.approx.f32 on a GPU: the result for every f32
// in [1, 4) (2^24 inputs, both exponent parities), as its difference in
// units of the last place from the reference (float)(1.0/sqrt((double)x)),
// written to OUTDIR/table.bin (one signed byte per input, index
// (x's unbiased exponent & 1) << 23 | x's mantissa bits); then it checks
// the model the interpreter implements against the GPU for all 2^32
// inputs, with and without .ftz, and writes what it found to
// OUTDIR/verify.txt. The table, gzipped, is ../../rsqrt_table.bin.gz,
// which the interpreter embeds (rsqrt.go).
//
// The model: NaN gives the canonical NaN; a negative nonzero input (-inf
// too) gives it as well; +0 gives +inf, -0 -inf, +inf +0; a positive
// finite x = x' * 4^k with x' in [1, 4) (subnormals normalized first;
// .ftz flushes them to zero of their sign) gives the table's result for
// x' scaled by 2^-k, which is exact (the result of x' lies in (0.5, 1]).
//
//	nvcc -O2 -o rsqrt rsqrt.cu && ./rsqrt OUTDIR
#include <cstdint>
#include <cstdio>
#include <cmath>
#include <string>
#include <vector>

__device__ __forceinline__ float rsq(float x) { float r; asm("rsqrt.approx.f32 %0, %1;" : "=f"(r) : "f"(x)); return r; }
__device__ __forceinline__ float rsqFtz(float x) { float r; asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x)); return r; }

__device__ __forceinline__ uint32_t refBits(uint32_t xb) {
  return __float_as_uint(__double2float_rn(1.0 / sqrt((double)__uint_as_float(xb))));
}

__global__ void table(int8_t* d, unsigned* wide) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (1u << 24)) return;
  uint32_t xb = ((127u + (i >> 23)) << 23) | (i & 0x7fffff);
  int32_t delta = (int32_t)__float_as_uint(rsq(__uint_as_float(xb))) - (int32_t)refBits(xb);
  if (delta < -127 || delta > 127) atomicAdd(wide, 1u);
  d[i] = (int8_t)delta;
}

__device__ uint32_t model(uint32_t u, const int8_t* d, bool ftz) {
  uint32_t sign = u >> 31, exp = (u >> 23) & 255, man = u & 0x7fffff;
  if (exp == 255 && man != 0) return 0x7fffffffu;
  if (ftz && exp == 0) man = 0;
  if (exp == 0 && man == 0) return sign ? 0xff800000u : 0x7f800000u;
  if (sign) return 0x7fffffffu;
  if (exp == 255) return 0;
  int e = (int)exp - 127;
  if (exp == 0) {
    e = -126;
    while (!(man & 0x800000)) { man <<= 1; e--; }
    man &= 0x7fffff;
  }
  int par = e & 1;
  int k = (e - par) / 2;
  uint32_t idx = ((uint32_t)par << 23) | man;
  uint32_t xb = ((127u + par) << 23) | man;
  uint32_t r = (uint32_t)((int32_t)refBits(xb) + d[idx]);
  return r - ((uint32_t)k << 23);
}

__global__ void verify(const int8_t* d, unsigned long long* bad, uint32_t* ex, uint64_t base, bool ftz) {
  uint64_t i = base + (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  uint32_t u = (uint32_t)i;
  float x = __uint_as_float(u);
  uint32_t got = __float_as_uint(ftz ? rsqFtz(x) : rsq(x));
  uint32_t want = model(u, d, ftz);
  if (got != want) {
    unsigned long long n = atomicAdd(bad, 1ull);
    if (n < 16) { ex[3 * n] = u; ex[3 * n + 1] = got; ex[3 * n + 2] = want; }
  }
}

int main(int argc, char** argv) {
  if (argc != 2) { fprintf(stderr, "usage: rsqrt OUTDIR\n"); return 2; }
  std::string out = argv[1];
  int8_t* d; unsigned* wide; unsigned long long* bad; uint32_t* ex;
  cudaMalloc(&d, 1 << 24); cudaMalloc(&wide, 4); cudaMalloc(&bad, 8); cudaMalloc(&ex, 16 * 3 * 4);
  cudaMemset(wide, 0, 4);
  table<<<(1 << 24) / 256, 256>>>(d, wide);
  cudaDeviceSynchronize();
  std::vector<int8_t> h(1 << 24);
  unsigned hw = 0;
  cudaMemcpy(h.data(), d, 1 << 24, cudaMemcpyDeviceToHost);
  cudaMemcpy(&hw, wide, 4, cudaMemcpyDeviceToHost);
  FILE* f = fopen((out + "/table.bin").c_str(), "wb"); fwrite(h.data(), 1, h.size(), f); fclose(f);
  FILE* v = fopen((out + "/verify.txt").c_str(), "w");
  cudaDeviceProp p; cudaGetDeviceProperties(&p, 0);
  fprintf(v, "device %s sm_%d%d\ntable entries off by more than 127 ulp: %u\n", p.name, p.major, p.minor, hw);
  int hist[256] = {0};
  for (int8_t x : h) hist[(uint8_t)x]++;
  for (int i = -128; i < 128; i++) if (hist[(uint8_t)i]) fprintf(v, "delta %d: %d\n", i, hist[(uint8_t)i]);
  for (int ftz = 0; ftz < 2; ftz++) {
    cudaMemset(bad, 0, 8);
    for (uint64_t base = 0; base < (1ull << 32); base += 1ull << 30)
      verify<<<(1u << 30) / 256, 256>>>(d, bad, ex, base, ftz);
    cudaDeviceSynchronize();
    unsigned long long hb = 0; uint32_t he[48];
    cudaMemcpy(&hb, bad, 8, cudaMemcpyDeviceToHost);
    cudaMemcpy(he, ex, sizeof he, cudaMemcpyDeviceToHost);
    fprintf(v, "rsqrt.approx%s.f32: %llu of 2^32 inputs differ from the model\n", ftz ? ".ftz" : "", hb);
    for (unsigned long long i = 0; i < hb && i < 16; i++) fprintf(v, "  x %08x gpu %08x model %08x\n", he[3 * i], he[3 * i + 1], he[3 * i + 2]);
  }
  fclose(v);
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
