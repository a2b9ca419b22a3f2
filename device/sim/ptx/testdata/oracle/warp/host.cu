// host.cu runs the warp oracle of the PTX interpreter on a GPU: the entry
// warp of warp.ptx is loaded with the CUDA driver API and launched over
// the input records of in.bin (in.bin.gz gunzipped), once with one block
// of 32 threads and once with one block of 64; the outputs of both go, in
// that order, to OUTDIR/out.bin, and the device to OUTDIR/device.txt.
// Each launch runs twice; the program fails if the runs differ.
//
//	nvcc -o host host.cu -lcuda && ./host DIR OUTDIR
#include <cuda.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

static const size_t kInRecord = 800, kOutRecord = 96;

static std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    fprintf(stderr, "cannot read %s\n", path.c_str());
    exit(1);
  }
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

static void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) {
    const char* msg = "";
    cuGetErrorString(r, &msg);
    fprintf(stderr, "%s: %s\n", what, msg);
    exit(1);
  }
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: host DIR OUTDIR\n");
    return 2;
  }
  std::string dir = argv[1], outdir = argv[2];
  std::string ptx = slurp(dir + "/warp.ptx");
  std::string in = slurp(dir + "/in.bin");
  if (in.size() % kInRecord != 0) {
    fprintf(stderr, "in.bin: %zu bytes, not whole records\n", in.size());
    return 1;
  }
  unsigned n = in.size() / kInRecord;
  check(cuInit(0), "cuInit");
  CUdevice dev;
  check(cuDeviceGet(&dev, 0), "cuDeviceGet");
  CUcontext ctx;
  check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  static char log[16384];
  CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* vals[] = {log, (void*)(size_t)sizeof(log)};
  CUmodule mod;
  if (cuModuleLoadDataEx(&mod, ptx.c_str(), 2, opts, vals) != CUDA_SUCCESS) {
    fprintf(stderr, "jit: %s\n", log);
    return 1;
  }
  CUfunction fn;
  check(cuModuleGetFunction(&fn, mod, "warp"), "cuModuleGetFunction");
  CUdeviceptr din;
  check(cuMemAlloc(&din, in.size()), "cuMemAlloc in");
  check(cuMemcpyHtoD(din, in.data(), in.size()), "copy in");
  std::vector<char> all;
  for (unsigned threads : {32u, 64u}) {
    size_t size = kOutRecord * threads * n;
    std::vector<char> runs[2];
    for (auto& out : runs) {
      CUdeviceptr dout;
      check(cuMemAlloc(&dout, size), "cuMemAlloc out");
      check(cuMemsetD8(dout, 0, size), "memset out");
      void* args[] = {&din, &dout, &n};
      check(cuLaunchKernel(fn, 1, 1, 1, threads, 1, 1, 0, 0, args, 0), "cuLaunchKernel");
      check(cuCtxSynchronize(), "launch");
      out.resize(size);
      check(cuMemcpyDtoH(out.data(), dout, size), "copy out");
      check(cuMemFree(dout), "cuMemFree");
    }
    if (runs[0] != runs[1]) {
      fprintf(stderr, "block of %u: two runs differ\n", threads);
      return 1;
    }
    all.insert(all.end(), runs[0].begin(), runs[0].end());
  }
  std::ofstream(outdir + "/out.bin", std::ios::binary).write(all.data(), all.size());
  int drv = 0;
  cuDriverGetVersion(&drv);
  char name[256];
  cuDeviceGetName(name, sizeof(name), dev);
  std::ofstream(outdir + "/device.txt") << name << ", CUDA driver " << drv << "\n";
  printf("%u records, blocks of 32 and 64: %zu output bytes\n", n, all.size());
  return 0;
}
