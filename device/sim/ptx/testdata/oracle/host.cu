// host.cu runs the semantics oracle of the PTX interpreter on a GPU: every
// form's kernel of kernels.ptx (after each "//@@ form" line) is loaded with
// the CUDA driver API and launched once, one thread, over its input
// records (manifest.txt, in.bin: in.bin.gz gunzipped); the outputs go to
// OUTDIR/out.bin and a
// status line per form to OUTDIR/status.txt. A form the driver's JIT
// refuses is reported and skipped.
//
//	nvcc -o host host.cu -lcuda && ./host DIR OUTDIR
#include <cuda.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

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
  std::string kernels = slurp(dir + "/kernels.ptx");
  std::string manifest = slurp(dir + "/manifest.txt");
  std::string in = slurp(dir + "/in.bin");
  const std::string marker = "//@@ form\n";
  std::vector<std::string> srcs;
  for (size_t at = kernels.find(marker); at != std::string::npos;) {
    size_t next = kernels.find(marker, at + marker.size());
    srcs.push_back(kernels.substr(at + marker.size(), next == std::string::npos ? std::string::npos : next - at - marker.size()));
    at = next;
  }
  struct Rec { unsigned n; size_t in, out; };
  std::vector<Rec> recs;
  std::istringstream ms(manifest);
  std::string line;
  size_t outSize = 0;
  while (std::getline(ms, line)) {
    Rec r;
    if (sscanf(line.c_str(), "%u\t%zu\t%zu", &r.n, &r.in, &r.out) != 3) {
      fprintf(stderr, "bad manifest line %s\n", line.c_str());
      return 1;
    }
    recs.push_back(r);
    outSize = r.out + 16 * (size_t)r.n;
  }
  if (recs.size() != srcs.size()) {
    fprintf(stderr, "%zu kernels, %zu manifest lines\n", srcs.size(), recs.size());
    return 1;
  }
  check(cuInit(0), "cuInit");
  CUdevice dev;
  check(cuDeviceGet(&dev, 0), "cuDeviceGet");
  CUcontext ctx;
  check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  CUdeviceptr din, dout;
  check(cuMemAlloc(&din, in.size()), "cuMemAlloc in");
  check(cuMemcpyHtoD(din, in.data(), in.size()), "copy in");
  check(cuMemAlloc(&dout, outSize), "cuMemAlloc out");
  check(cuMemsetD8(dout, 0, outSize), "memset out");
  std::string status;
  for (size_t i = 0; i < srcs.size(); i++) {
    static char log[16384];
    log[0] = 0;
    CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void* vals[] = {log, (void*)(size_t)sizeof(log)};
    CUmodule mod;
    CUresult r = cuModuleLoadDataEx(&mod, srcs[i].c_str(), 2, opts, vals);
    if (r != CUDA_SUCCESS) {
      for (char* p = log; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' ';
      status += std::to_string(i) + " error: jit: " + log + "\n";
      continue;
    }
    CUfunction fn;
    check(cuModuleGetFunction(&fn, mod, "oracle"), "cuModuleGetFunction");
    CUdeviceptr pin = din + recs[i].in, pout = dout + recs[i].out;
    unsigned n = recs[i].n;
    void* args[] = {&pin, &pout, &n};
    check(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, 0, args, 0), "cuLaunchKernel");
    check(cuCtxSynchronize(), "launch");
    check(cuModuleUnload(mod), "cuModuleUnload");
    status += std::to_string(i) + " ok\n";
  }
  std::vector<char> out(outSize);
  check(cuMemcpyDtoH(out.data(), dout, outSize), "copy out");
  std::ofstream(outdir + "/out.bin", std::ios::binary).write(out.data(), out.size());
  std::ofstream(outdir + "/status.txt") << status;
  int drv = 0;
  cuDriverGetVersion(&drv);
  char name[256];
  cuDeviceGetName(name, sizeof(name), dev);
  std::ofstream(outdir + "/device.txt") << name << ", CUDA driver " << drv << "\n";
  return 0;
}
