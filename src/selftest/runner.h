// Running the selftest kernels on a GPU through the CUDA driver API: the PTX for the device is
// JIT-compiled, each kernel launched as its plan says and timed with CUDA events — so that ncu,
// wrapped around the process, profiles real launches — and the calibration measurements built on
// them (DRAM and L2 bandwidth, FP32/FP64/tensor rates, launch latency), each the best of repeated
// runs with the clocks as found.
#pragma once

#include <string>
#include <vector>

#include "gpu/cuda_driver.h"
#include "selftest/launch_plan.h"
#include "selftest/selftest_table.h"

namespace kprof::selftest {

struct RunOptions {
  std::string driver_library = gpu::kDefaultDriverLibrary;
  int device = 0;
  const SelftestTable* table = nullptr;  // null: the built-in table
  // calibrate: the cuBLASLt to time the vendor's GEMMs with ("": the usual places,
  // gpu::cublaslt_candidates(); "none": kprof's own kernels only).
  std::string cublaslt;
};

struct KernelRun {
  LaunchPlan plan;
  int registers = 0;            // per thread, as the driver's JIT compiled it
  std::vector<double> seconds;  // one per launch, CUDA-event timed
};

struct RunResult {
  gpu::DeviceInfo device;
  int ptx_arch = 0;  // the module loaded (90: sm_90)
  std::vector<KernelRun> kernels;
  std::vector<std::string> notes;  // fallbacks taken, kernels skipped and why, plan caveats
};

// Launches each named kernel `repeat` times (all selftest kernels when names is empty), in the
// order given. Throws gpu::GpuUnavailable (no driver, no device, too old a device),
// gpu::DriverError (a driver call failed), std::invalid_argument (an unknown kernel, repeat < 1).
RunResult run_kernels(const std::vector<std::string>& names, int repeat,
                      const RunOptions& options = {});

// One code measured for a ceiling: the figure it reached and how.
struct CeilingCandidate {
  std::string code;    // "kprof" (its own PTX kernel), "cublasLt", "driver copy"
  std::string kernel;  // k_tensor_mma_bf16, "cublasLt matmul", cuMemcpyDtoD
  double figure = 0;
  std::string method;
};

struct Ceiling {
  std::string
      name;  // dram_bandwidth, l2_bandwidth, fp32_flops, fp64_flops, bf16_tensor_flops,
             // fp16_tensor_flops, fp8_tensor_flops, launch_back_to_back, launch_to_completion
  double figure = 0;   // in unit
  std::string unit;    // "byte/s", "flop/s", "s"
  std::string method;  // what ran and how the figure was computed
  std::string kernel;
  int repeats = 0;            // measured runs; the figure is the best of them
  double best_seconds = 0;    // the run the figure comes from
  double median_seconds = 0;  // of all runs: how far the best stands from the typical
  double work = 0;            // per run, in work_unit ("byte", "flop", "launch")
  std::string work_unit;
  unsigned grid = 0, block = 0, shared_bytes = 0;
  // Which code reached the figure ("kprof", "cublasLt", "driver copy"), and every code measured
  // for this ceiling in the run, the fastest first (one entry when only kprof's kernel ran).
  std::string code = "kprof";
  std::vector<CeilingCandidate> candidates;
};

struct Calibration {
  gpu::DeviceInfo device;
  std::string nvidia_driver;  // /sys/module/nvidia/version, where readable
  int ptx_arch = 0;
  std::string date;  // UTC, ISO 8601
  std::string kprof_version;
  std::vector<Ceiling> ceilings;
  std::vector<std::string> notes;
};

// Adds a measurement of a ceiling by other code: the ceiling becomes the faster of the two (a
// ceiling is what the best code reaches), both kept among its candidates. A throughput ceiling
// only: higher is better.
void adopt_faster(std::vector<Ceiling>& ceilings, Ceiling measured);

// The calibration measurements, each the best of `repeats` runs after one warm-up.
Calibration calibrate(int repeats, const RunOptions& options = {});

// How many empty-kernel launches one launch-latency run averages over.
inline constexpr int kLaunchesPerLatencyRun = 200;

}  // namespace kprof::selftest
