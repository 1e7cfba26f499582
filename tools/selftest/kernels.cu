// Kernels with known bottlenecks, for kprof's selftest (does kprof's verdict match what each
// kernel was written to do, on this GPU?) and calibration (what this GPU reaches). No compiler is
// needed where kprof runs: scripts/gen-selftest-ptx compiles this file to PTX for each
// architecture into src/selftest/generated/, which is committed and embedded in the binary; the
// CUDA driver JIT-compiles it at run time (src/gpu/cuda_driver.h, src/selftest/runner.h).
//
// extern "C" keeps the entry names plain: `.entry k_dram_stream` is the name ncu shows and the one
// data/selftest_expectations.json lists, with each kernel's launch configuration and the verdict,
// binding unit and occupancy limiter kprof must find. Kernels that keep a design of
// tools/bottleneck_suite/suite.cu (captured on an H200: data/h200/bottleneck_suite_full.*) keep
// its name and its code; the others say why they differ.
//
// Every loop result feeds a store that never happens (a comparison with 12345) so the compiler
// keeps the work without the kernel writing anything that matters.

// memory-bound, DRAM (suite design): a streaming copy of 1 GiB, far larger than any L2.
extern "C" __global__ void k_dram_stream(const float4* __restrict__ in, float4* __restrict__ out,
                                         size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    out[i] = in[i];
  }
}

// memory-bound, L2: each thread re-reads its own four 16-byte vectors of a buffer of exactly four
// per thread (17 MB on an H200, resident in its L2), `rounds` times, bypassing L1 (ld.global.cg).
// Differs from the suite's k_l2_resident, which kept one or two loads in flight per thread and
// reached 79.7% of the L2 peak on the H200 — just under the 80% threshold, so it read as
// latency-bound. A first redesign (four loads per round, 512-thread blocks at full occupancy)
// reached only 75.0% there; of the variants tried on the H200
// (tools/selftest/experiments/l2_variants.cu), eight independent loads per round in 256-thread
// blocks, four blocks per SM (register-limited) reached 81.7% (sixteen loads: 82.0%, with twice
// the footprint): more bytes in flight per warp beat more warps. The vector each load takes rotates
// with the round so that no load is loop-invariant (hoisted out of the loop, it would leave L2
// idle); four accumulators keep the adds off the loads' critical path.
extern "C" __global__ void __launch_bounds__(256, 4)
    k_l2_reread(const float4* __restrict__ in, float4* __restrict__ out, int rounds) {
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  const size_t first = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  float sum[4] = {};
#pragma unroll 1
  for (int r = 0; r < rounds; ++r) {
    float4 v[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) v[k] = __ldcg(&in[first + ((k + r) & 7) * stride]);
#pragma unroll
    for (int k = 0; k < 8; ++k) sum[k & 3] += (v[k].x + v[k].y) + (v[k].z + v[k].w);
  }
  float total = (sum[0] + sum[1]) + (sum[2] + sum[3]);
  if (total == 12345.f) out[first] = make_float4(total, total, total, total);
}

// compute-bound, FP32 pipe (suite design): four independent FMA chains in registers, no memory.
extern "C" __global__ void k_fp32_fma(float* out, int iterations) {
  float a = threadIdx.x, b = a + 1, c = a + 2, d = a + 3;
  for (int i = 0; i < iterations; ++i) {
    a = fmaf(a, 1.0001f, 0.5f);
    b = fmaf(b, 0.9999f, 0.25f);
    c = fmaf(c, 1.0002f, 0.125f);
    d = fmaf(d, 0.9998f, 0.0625f);
  }
  if (a + b + c + d == 12345.f) out[0] = a;
}

// compute-bound, FP64 pipe (suite design).
extern "C" __global__ void k_fp64_fma(double* out, int iterations) {
  double a = threadIdx.x, b = a + 1, c = a + 2, d = a + 3;
  for (int i = 0; i < iterations; ++i) {
    a = fma(a, 1.0001, 0.5);
    b = fma(b, 0.9999, 0.25);
    c = fma(c, 1.0002, 0.125);
    d = fma(d, 0.9998, 0.0625);
  }
  if (a + b + c + d == 12345.0) out[0] = a;
}

// One warp-level MMA from registers into one of four accumulators. mma.sync is the tensor-core
// instruction every architecture from sm_80 on executes; Hopper's full tensor rate needs wgmma
// (sm_90a) and Blackwell's tcgen05 (sm_100a), both architecture-specific PTX that cannot be
// JIT-compiled for other GPUs — not covered here.
#define KPROF_MMA(shape_types, acc)                                     \
  asm volatile("mma.sync.aligned." shape_types                          \
               " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};" \
               : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3]) \
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1))

// compute-bound, tensor pipe: BF16 inputs, FP32 accumulators, m16n8k16 (4096 FLOP per MMA), four
// independent accumulator chains per warp. The suite's k_tensor_wmma did the same with WMMA
// FP16 16x16x16 fragments (two such MMAs each); BF16 is what inference runs.
extern "C" __global__ void k_tensor_mma_bf16(float* out, int iterations) {
  // Small distinct BF16 pairs (0x3A83 is 0.001): finite for any iteration count used here.
  const unsigned a0 = 0x3A833A83u, a1 = 0x3A853A85u, a2 = 0x3A873A87u, a3 = 0x3A893A89u;
  const unsigned b0 = 0x3A833A85u, b1 = 0x3A873A89u;
  float c0[4] = {}, c1[4] = {}, c2[4] = {}, c3[4] = {};
  for (int i = 0; i < iterations; ++i) {
    KPROF_MMA("m16n8k16.row.col.f32.bf16.bf16.f32", c0);
    KPROF_MMA("m16n8k16.row.col.f32.bf16.bf16.f32", c1);
    KPROF_MMA("m16n8k16.row.col.f32.bf16.bf16.f32", c2);
    KPROF_MMA("m16n8k16.row.col.f32.bf16.bf16.f32", c3);
  }
  if (c0[0] + c1[1] + c2[2] + c3[3] == 12345.f) out[0] = c0[0];
}

#if __CUDA_ARCH__ >= 890
// Calibration only: FP8 (E4M3) inputs, FP32 accumulators, m16n8k32 (8192 FLOP per MMA); mma.sync
// takes FP8 from sm_89 on. ptxas accepts it for sm_90 and sm_100 too, but those GPUs reach their
// datasheet FP8 rate only through wgmma/tcgen05: the figure is what mma.sync gets.
extern "C" __global__ void k_tensor_mma_fp8(float* out, int iterations) {
  // 0x20 is 0.125 in E4M3.
  const unsigned a0 = 0x20202020u, a1 = 0x20202021u, a2 = 0x20202120u, a3 = 0x20212020u;
  const unsigned b0 = 0x21202020u, b1 = 0x20212021u;
  float c0[4] = {}, c1[4] = {}, c2[4] = {}, c3[4] = {};
  for (int i = 0; i < iterations; ++i) {
    KPROF_MMA("m16n8k32.row.col.f32.e4m3.e4m3.f32", c0);
    KPROF_MMA("m16n8k32.row.col.f32.e4m3.e4m3.f32", c1);
    KPROF_MMA("m16n8k32.row.col.f32.e4m3.e4m3.f32", c2);
    KPROF_MMA("m16n8k32.row.col.f32.e4m3.e4m3.f32", c3);
  }
  if (c0[0] + c1[1] + c2[2] + c3[3] == 12345.f) out[0] = c0[0];
}
#endif

// latency-bound (suite design): one thread chasing a random cycle of pointers through 256 MB.
extern "C" __global__ void k_pointer_chase(const unsigned* __restrict__ next, unsigned* out,
                                           int steps) {
  unsigned at = 0;
  for (int i = 0; i < steps; ++i) at = next[at];
  out[0] = at;
}

// latency-bound, too few blocks (suite design): 4 blocks of one FMA chain for far more SMs.
extern "C" __global__ void k_few_blocks(float* out, int iterations) {
  float a = threadIdx.x;
  for (int i = 0; i < iterations; ++i) a = fmaf(a, 1.0001f, 0.5f);
  if (a == 12345.f) out[0] = a;
}

// occupancy limited by blocks: 32-thread blocks, so an SM holds its maximum number of blocks
// (32 on sm_80/sm_90/sm_100, 16 or 24 on sm_86/sm_89/sm_120) with half or fewer of its warps.
// The work is k_fp32_fma's: four independent FMA chains per thread keep the FP32 pipe busy even
// so, so the verdict stays compute-bound on fp32 and only the limiter changes.
extern "C" __global__ void k_tiny_blocks(float* out, int iterations) {
  float a = threadIdx.x, b = a + 1, c = a + 2, d = a + 3;
  for (int i = 0; i < iterations; ++i) {
    a = fmaf(a, 1.0001f, 0.5f);
    b = fmaf(b, 0.9999f, 0.25f);
    c = fmaf(c, 1.0002f, 0.125f);
    d = fmaf(d, 0.9998f, 0.0625f);
  }
  if (a + b + c + d == 12345.f) out[0] = a;
}

// occupancy limited by registers (suite design): 128 live accumulators per thread (about 130
// registers), so one 256-thread block fills an SM's 64K registers where warps alone would allow
// eight; 128 independent chains still keep the FP32 pipe busy.
extern "C" __global__ void k_register_limited(float* out, int iterations) {
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

// occupancy limited by shared memory, latency-bound: the largest dynamic shared allocation a
// block may have (so one block per SM), 256 threads each following a dependent chain of
// shared-memory loads (conflict-free: a warp's lanes read consecutive words). Eight warps per SM
// cannot cover the load latency, and nothing is near a roof. Differs from the suite's
// k_smem_limited, whose index arithmetic (an integer modulo per load) kept the FMA pipe 65%
// busy: between ncu's 60% and 80% bands, so what it leaned on depended on the GPU.
extern "C" __global__ void k_smem_chase(unsigned* out, int steps, unsigned words) {
  extern __shared__ unsigned ring[];
  for (unsigned i = threadIdx.x; i < words; i += blockDim.x) ring[i] = (i + blockDim.x) % words;
  __syncthreads();
  unsigned at = threadIdx.x;
  for (int s = 0; s < steps; ++s) at = ring[at];
  if (at == 0xffffffffu) out[0] = at;
}

// latency-bound on atomics (suite design): every thread adds to the same address.
extern "C" __global__ void k_atomic_one_address(unsigned long long* counter, int iterations) {
  for (int i = 0; i < iterations; ++i) atomicAdd(counter, 1ull);
}

// Calibration only: nothing, for launch latency.
extern "C" __global__ void k_empty() {}
