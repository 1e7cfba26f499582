// Small CUDA programs for capture checks on a GPU (tools/capture/gpu-check.sh).
// usage: capture_targets plain|stop|crash|random|long SECONDS|fork
//   plain   4 launches of k_work
//   stop    1 launch, cudaProfilerStop, then 4 more
//   crash   4 launches, then a segmentation fault
//   random  2..6 launches, different each run (breaks application replay)
//   long S  k_alpha and k_beta every 50 ms for S seconds (attach target)
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <thread>

__global__ void k_work(float* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = p[i] * 2.f + 1.f;
}
__global__ void k_alpha(float* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] += 1.f;
}
__global__ void k_beta(float* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] *= 0.5f;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "plain";
  int n = 1 << 20;
  float* p;
  cudaMalloc(&p, n * 4);
  if (!strcmp(mode, "long")) {
    double seconds = argc > 2 ? atof(argv[2]) : 45;
    auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    long rounds = 0;
    while (std::chrono::steady_clock::now() < end) {
      k_alpha<<<n / 256, 256>>>(p, n);
      k_beta<<<n / 256, 256>>>(p, n);
      cudaDeviceSynchronize();
      ++rounds;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    printf("long: %ld rounds\n", rounds);
    return 0;
  }
  if (!strcmp(mode, "stop")) {
    k_work<<<n / 256, 256>>>(p, n);
    cudaDeviceSynchronize();
    cudaProfilerStop();
  }
  int launches = 4;
  if (!strcmp(mode, "random")) {
    srand((unsigned)time(nullptr) ^ getpid());
    launches = 2 + rand() % 5;
  }
  for (int i = 0; i < launches; i++) k_work<<<n / 256, 256>>>(p, n);
  cudaDeviceSynchronize();
  if (!strcmp(mode, "crash")) {
    volatile int* bad = nullptr;
    *bad = 1;
  }
  printf("launched %d\n", launches);
  return 0;
}
