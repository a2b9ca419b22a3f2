// launch_floor measures the launch floor of this GPU machine: the host time
// per kernel launch and the device time per kernel of a loop of back-to-back
// launches of an empty kernel with a 112-byte argument (the size of
// symmem's all-reduce arguments), from T host threads in this process, each
// driving its own GPU. Run several copies at once to see one process per GPU.
//
//   nvcc -O2 -o launch_floor scripts/launch_floor.cu -lcuda && ./launch_floor 1 && ./launch_floor 4
#include <cuda.h>
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

struct Args {
  unsigned long long w[14];
};

__global__ void empty(const __grid_constant__ Args a) {
  if (a.w[0] == 12345 && threadIdx.x == 1000) printf("never\n");
}

// graph_us is the device time per kernel when iters launches are captured
// into one CUDA graph and replayed.
static double graph_us(cudaStream_t s, const Args& a, int iters) {
  cudaGraph_t g;
  cudaGraphExec_t ge;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
  for (int i = 0; i < iters; i++) empty<<<1, 32, 0, s>>>(a);
  cudaStreamEndCapture(s, &g);
  cudaGraphInstantiate(&ge, g, 0);
  cudaGraphLaunch(ge, s);
  cudaStreamSynchronize(s);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  cudaEventRecord(e0, s);
  for (int r = 0; r < 10; r++) cudaGraphLaunch(ge, s);
  cudaEventRecord(e1, s);
  cudaEventSynchronize(e1);
  float ms;
  cudaEventElapsedTime(&ms, e0, e1);
  return ms * 1000.0 / (10.0 * iters);
}

static void run(int dev, int iters, double* host_us, double* dev_us, double* short_us, double* g_us) {
  cudaSetDevice(dev);
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  Args a{};
  for (int i = 0; i < 200; i++) empty<<<1, 32, 0, s>>>(a);
  cudaStreamSynchronize(s);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  auto t0 = std::chrono::steady_clock::now();
  cudaEventRecord(e0, s);
  for (int i = 0; i < iters; i++) empty<<<1, 32, 0, s>>>(a);
  cudaEventRecord(e1, s);
  auto t1 = std::chrono::steady_clock::now();
  cudaEventSynchronize(e1);
  float ms;
  cudaEventElapsedTime(&ms, e0, e1);
  *host_us = std::chrono::duration<double, std::micro>(t1 - t0).count() / iters;
  *dev_us = ms * 1000.0 / iters;
  // A short loop fits in the launch queue: its host time is the host's own cost.
  t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 256; i++) empty<<<1, 32, 0, s>>>(a);
  t1 = std::chrono::steady_clock::now();
  cudaStreamSynchronize(s);
  *short_us = std::chrono::duration<double, std::micro>(t1 - t0).count() / 256;
  *g_us = graph_us(s, a, 1000);
}

int main(int argc, char** argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  int first = argc > 2 ? atoi(argv[2]) : 0;
  const int iters = 20000;
  std::vector<double> h(threads), d(threads), sh(threads), g(threads);
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; t++) ts.emplace_back(run, first + t, iters, &h[t], &d[t], &sh[t], &g[t]);
  for (auto& t : ts) t.join();
  for (int t = 0; t < threads; t++)
    printf("threads %d gpu %d: long loop host %.2f us/launch, device %.2f us/kernel; short loop host %.2f us/launch; graph %.2f us/kernel\n",
           threads, first + t, h[t], d[t], sh[t], g[t]);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) { printf("error: %s\n", cudaGetErrorString(err)); return 1; }
  return 0;
}
