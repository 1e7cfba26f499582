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

struct Ceiling {
  std::string name;    // dram_bandwidth, l2_bandwidth, fp32_flops, fp64_flops, bf16_tensor_flops,
                       // fp8_tensor_flops, launch_back_to_back, launch_to_completion
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

// The calibration measurements, each the best of `repeats` runs after one warm-up.
Calibration calibrate(int repeats, const RunOptions& options = {});

// How many empty-kernel launches one launch-latency run averages over.
inline constexpr int kLaunchesPerLatencyRun = 200;

}  // namespace kprof::selftest
