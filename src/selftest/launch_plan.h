// From a kernel's launch spec and a device's attributes to the exact launch: grid, block, shared
// memory, the buffers it needs and its arguments, and the work one launch does (bytes moved or
// FLOPs) for calibration. Pure, so the plans can be checked without a GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gpu/cuda_driver.h"
#include "selftest/selftest_table.h"

namespace kprof::selftest {

struct BufferPlan {
  enum class Init { kZero, kPointerCycle };
  std::string role;  // "in", "out", "next", "counter", "scratch"
  std::uint64_t bytes = 0;
  Init init = Init::kZero;
};

struct ArgPlan {
  enum class Kind { kBuffer, kU32, kU64 };
  Kind kind = Kind::kU32;
  std::size_t buffer = 0;   // kBuffer: index into LaunchPlan::buffers
  std::uint64_t value = 0;  // kU32, kU64
  std::size_t size() const { return kind == Kind::kU32 ? 4 : 8; }
};

struct LaunchPlan {
  std::string kernel;
  unsigned grid = 1;
  unsigned block = 1;
  unsigned shared_bytes = 0;  // dynamic
  std::vector<BufferPlan> buffers;
  std::vector<ArgPlan> args;
  double work = 0;           // per launch, in work_unit
  std::string work_unit;     // "byte", "flop", "" (not a throughput kernel)
  std::string work_formula;  // how work was counted, for the calibration's method text
  std::string caveat;        // why this launch may not show what it is meant to on this device
};

// Throws std::invalid_argument for a kernel the planner does not know or a spec it cannot
// satisfy on this device (e.g. more shared memory than the device allows).
LaunchPlan plan_launch(const KernelSpec& spec, const gpu::DeviceInfo& device);

// The blocks of `block` threads an SM holds by its thread and block limits alone.
unsigned resident_blocks_per_sm(unsigned block, const gpu::DeviceInfo& device);

// A single random cycle through all `entries` indices (entry i holds the next index), from a
// fixed seed: the same cycle as tools/bottleneck_suite/suite.cu's pointer chase.
std::vector<std::uint32_t> pointer_cycle(std::uint32_t entries);

}  // namespace kprof::selftest
