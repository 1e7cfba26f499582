// Kernels with known bottlenecks, one launch each, for checking kprof's verdicts against a real
// `ncu --set full` capture (data/h200/bottleneck_suite_full.ncu-rep.zst).
//
//   nvcc -O3 -arch=sm_90 -o suite tools/bottleneck_suite/suite.cu
//   ncu --set full --clock-control none -k regex:^k_ -o bottleneck_suite_full ./suite
//
// The expected verdict of each kernel is stated next to it and asserted by
// tests/analysis/verdict_test.cpp; the numbers are sized so each runs well past launch latency.
#include <cuda_fp16.h>
#include <mma.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CHECK(call)                                                                         \
  do {                                                                                      \
    cudaError_t status_ = (call);                                                           \
    if (status_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(status_)); \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

// memory-bound, DRAM: a streaming copy of 1 GiB, far larger than the 60 MB L2.
__global__ void k_dram_stream(const float4* __restrict__ in, float4* __restrict__ out, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    out[i] = in[i];
  }
}

// memory-bound, L2: re-reads a 16 MB buffer that stays resident in the L2.
__global__ void k_l2_resident(const float4* __restrict__ in, float4* __restrict__ out, size_t n,
                              int rounds) {
  float4 acc = make_float4(0, 0, 0, 0);
  for (int r = 0; r < rounds; ++r) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
      float4 v = __ldcg(&in[i]);  // cache in L2 only, bypass L1
      acc.x += v.x;
      acc.y += v.y;
      acc.z += v.z;
      acc.w += v.w;
    }
  }
  if (acc.x == 12345.f) out[0] = acc;  // keep the loads alive
}

// compute-bound, FP32 pipe: independent FMA chains in registers, no memory traffic.
__global__ void k_fp32_fma(float* out, int iterations) {
  float a = threadIdx.x, b = a + 1, c = a + 2, d = a + 3;
  for (int i = 0; i < iterations; ++i) {
    a = fmaf(a, 1.0001f, 0.5f);
    b = fmaf(b, 0.9999f, 0.25f);
    c = fmaf(c, 1.0002f, 0.125f);
    d = fmaf(d, 0.9998f, 0.0625f);
  }
  if (a + b + c + d == 12345.f) out[0] = a;
}

// compute-bound, FP64 pipe.
__global__ void k_fp64_fma(double* out, int iterations) {
  double a = threadIdx.x, b = a + 1, c = a + 2, d = a + 3;
  for (int i = 0; i < iterations; ++i) {
    a = fma(a, 1.0001, 0.5);
    b = fma(b, 0.9999, 0.25);
    c = fma(c, 1.0002, 0.125);
    d = fma(d, 0.9998, 0.0625);
  }
  if (a + b + c + d == 12345.0) out[0] = a;
}

// compute-bound, tensor pipe: WMMA fp16 fragments multiplied in registers over and over.
__global__ void k_tensor_wmma(half* out, int iterations) {
  using namespace nvcuda;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, half> c;
  wmma::fill_fragment(a, __float2half(0.001f));
  wmma::fill_fragment(b, __float2half(0.001f));
  wmma::fill_fragment(c, __float2half(0.0f));
  for (int i = 0; i < iterations; ++i) wmma::mma_sync(c, a, b, c);
  if (threadIdx.x == 0 && blockIdx.x == 0 && __half2float(c.x[0]) == 12345.f) {
    wmma::store_matrix_sync(out, c, 16, wmma::mem_row_major);
  }
}

// latency-bound: one thread chasing a random cycle of pointers through 256 MB.
__global__ void k_pointer_chase(const unsigned* __restrict__ next, unsigned* out, int steps) {
  unsigned at = 0;
  for (int i = 0; i < steps; ++i) at = next[at];
  out[0] = at;
}

// latency-bound, too few blocks: 4 blocks of FMA work on a 132-SM GPU.
__global__ void k_few_blocks(float* out, int iterations) {
  float a = threadIdx.x;
  for (int i = 0; i < iterations; ++i) a = fmaf(a, 1.0001f, 0.5f);
  if (a == 12345.f) out[0] = a;
}

// occupancy limited by registers: 128 live accumulators per thread (about 170 registers, so
// one 256-thread block fits an SM's 64K registers where warps alone would allow eight).
__global__ void k_register_limited(float* out, int iterations) {
  float acc[128];
#pragma unroll
  for (int j = 0; j < 128; ++j) acc[j] = threadIdx.x + j;
  for (int i = 0; i < iterations; ++i) {
#pragma unroll
    for (int j = 0; j < 128; ++j) acc[j] = fmaf(acc[j], acc[(j + 1) & 127], 0.5f);
  }
  float s = 0;
#pragma unroll
  for (int j = 0; j < 128; ++j) s += acc[j];
  if (s == 12345.f) out[0] = s;
}

// occupancy limited by shared memory: 200 KB of dynamic shared memory per block.
__global__ void k_smem_limited(float* out, int iterations) {
  extern __shared__ float tile[];
  const int n = 200 * 1024 / sizeof(float);
  for (int i = threadIdx.x; i < n; i += blockDim.x) tile[i] = i;
  __syncthreads();
  float a = 0;
  for (int i = 0; i < iterations; ++i) a += tile[(threadIdx.x * 33 + i) % n];
  if (a == 12345.f) out[0] = a;
}

// latency-bound on atomics: every thread adds to the same address.
__global__ void k_atomic_one_address(unsigned long long* counter, int iterations) {
  for (int i = 0; i < iterations; ++i) atomicAdd(counter, 1ull);
}

int main() {
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const size_t big = (size_t(1) << 30) / sizeof(float4);  // 1 GiB
  const size_t l2 = (size_t(16) << 20) / sizeof(float4);  // 16 MB
  float4 *in = nullptr, *out = nullptr;
  CHECK(cudaMalloc(&in, big * sizeof(float4)));
  CHECK(cudaMalloc(&out, big * sizeof(float4)));
  CHECK(cudaMemset(in, 0, big * sizeof(float4)));
  float* scratch = nullptr;
  double* scratch64 = nullptr;
  half* scratch16 = nullptr;
  unsigned long long* counter = nullptr;
  CHECK(cudaMalloc(&scratch, 1 << 20));
  CHECK(cudaMalloc(&scratch64, 1 << 20));
  CHECK(cudaMalloc(&scratch16, 1 << 20));
  CHECK(cudaMalloc(&counter, sizeof(unsigned long long)));

  // A random single cycle over 64 M entries (256 MB) for the pointer chase.
  const unsigned chase_n = 64u << 20;
  unsigned* host_next = static_cast<unsigned*>(std::malloc(chase_n * sizeof(unsigned)));
  unsigned* order = static_cast<unsigned*>(std::malloc(chase_n * sizeof(unsigned)));
  for (unsigned i = 0; i < chase_n; ++i) order[i] = i;
  unsigned long long state = 88172645463325252ull;
  for (unsigned i = chase_n - 1; i > 0; --i) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    unsigned j = static_cast<unsigned>(state % (i + 1));
    unsigned t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  for (unsigned i = 0; i < chase_n; ++i) host_next[order[i]] = order[(i + 1) % chase_n];
  unsigned* next = nullptr;
  unsigned* chase_out = nullptr;
  CHECK(cudaMalloc(&next, chase_n * sizeof(unsigned)));
  CHECK(cudaMalloc(&chase_out, sizeof(unsigned)));
  CHECK(cudaMemcpy(next, host_next, chase_n * sizeof(unsigned), cudaMemcpyHostToDevice));

  CHECK(cudaFuncSetAttribute(k_smem_limited, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             200 * 1024));

  // SUITE_REPEAT=N launches every kernel N times (repeated launches let kprof diff estimate
  // run-to-run noise); SUITE_SLOW=k_name doubles that kernel's work (a regression on purpose).
  const char* repeat_env = std::getenv("SUITE_REPEAT");
  const char* slow_env = std::getenv("SUITE_SLOW");
  int repeat = repeat_env ? std::atoi(repeat_env) : 1;
  auto slow = [&](const char* name) {
    return slow_env && std::strcmp(slow_env, name) == 0 ? 2 : 1;
  };
  for (int r = 0; r < repeat; ++r) {
    k_dram_stream<<<sms * 8, 512>>>(in, out, big);
    k_l2_resident<<<sms * 8, 512>>>(in, out, l2, 64);
    k_fp32_fma<<<sms * 16, 256>>>(scratch, (1 << 16) * slow("k_fp32_fma"));
    k_fp64_fma<<<sms * 16, 256>>>(scratch64, (1 << 13) * slow("k_fp64_fma"));
    k_tensor_wmma<<<sms * 16, 256>>>(scratch16, (1 << 14) * slow("k_tensor_wmma"));
    k_pointer_chase<<<1, 1>>>(next, chase_out, (1 << 14) * slow("k_pointer_chase"));
    k_few_blocks<<<4, 128>>>(scratch, (1 << 20) * slow("k_few_blocks"));
    k_register_limited<<<sms * 4, 256>>>(scratch, (1 << 10) * slow("k_register_limited"));
    k_smem_limited<<<sms * 4, 256, 200 * 1024>>>(scratch, (1 << 14) * slow("k_smem_limited"));
    k_atomic_one_address<<<sms * 4, 256>>>(counter, (1 << 6) * slow("k_atomic_one_address"));
  }
  CHECK(cudaDeviceSynchronize());
  std::printf("suite done\n");
  return 0;
}
