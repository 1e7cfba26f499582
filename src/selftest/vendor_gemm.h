// The vendor's own GEMMs, timed: cuBLASLt's best heuristics for large square matrix products in
// BF16, FP16 and FP8 (E4M3), so that calibrate's tensor-core ceilings are what the best code on
// this GPU reaches. kprof's own mma.sync kernels cannot use Hopper's wgmma and read about 80 % of
// cuBLAS there; a kernel that beats its "ceiling" would otherwise read over 100 %.
#pragma once

#include <string>
#include <vector>

#include "gpu/cublaslt.h"
#include "gpu/cuda_driver.h"

namespace kprof::selftest {

// One cuBLASLt algorithm timed on one shape.
struct GemmRun {
  std::string dtype;  // "bf16", "fp16", "fp8_e4m3"
  int m = 0, n = 0, k = 0;
  int heuristic_rank = 0;      // 0: the heuristic's first choice (what a framework would run)
  int heuristics_offered = 0;  // how many algorithms the heuristic returned for the shape
  int algo_id = -1, tile_id = -1, stages_id = -1;  // CUBLASLT_ALGO_CONFIG_*; -1 unread
  std::size_t workspace_bytes = 0;
  int repeats = 0;
  double best_seconds = 0;
  double median_seconds = 0;
  double flop() const { return 2.0 * m * n * k; }
  double flops_per_second() const { return best_seconds > 0 ? flop() / best_seconds : 0; }
};

struct VendorGemms {
  std::string library;  // the file loaded
  std::string version;  // cublasLtGetVersion, "13.1.0"
  std::vector<GemmRun> runs;
  std::vector<std::string> notes;  // a dtype or shape that could not run, and why
};

struct VendorGemmPlan {
  std::vector<std::string> dtypes = {"bf16", "fp16", "fp8_e4m3"};
  std::vector<int> sizes = {4096, 8192, 16384};  // m = n = k
  int heuristics = 8;                            // algorithms asked of the heuristic per shape
  int repeats = 10;                              // timed launches per algorithm; the best counts
  std::size_t workspace_bytes = 64ull << 20;
};

// Runs the plan in the current context (the caller's session holds it). FP8 is skipped below
// compute capability 8.9. A shape or dtype cuBLASLt refuses is a note, not an error; a driver
// failure throws DriverError.
VendorGemms measure_vendor_gemms(const gpu::CudaDriver& driver, const gpu::CublasLt& lt,
                                 const gpu::DeviceInfo& device, const VendorGemmPlan& plan);

// The fastest run of a dtype, or null.
const GemmRun* fastest(const VendorGemms& gemms, const std::string& dtype);

// "cuBLASLt 13.1.0 (libcublasLt.so.13): 8192x8192x8192 BF16 TN, FP32 accumulate, heuristic
// choice 2 of 8 (algo 66, tile 24, stages 12), best of 10 launches after 2 warm-ups"
std::string describe(const GemmRun& run, const VendorGemms& gemms);

}  // namespace kprof::selftest
