// `kprof selftest` and `kprof calibrate` as text and JSON: the judgements per kernel (expected
// vs measured verdict, binding unit, occupancy limiter), and the measured ceilings beside the
// datasheet's figures. Presentation only.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hardware/gpu_specs.h"
#include "selftest/runner.h"
#include "selftest/selftest_commands.h"

namespace kprof::selftest {

std::string selftest_text(const selftest::SelftestOutcome& outcome);
// kprof.selftest/1, its fields listed in docs/selftest.md.
nlohmann::json selftest_json(const selftest::SelftestOutcome& outcome,
                             const std::vector<std::string>& argv);

// The datasheet figure a measured ceiling compares with (byte/s or flop/s), where the database
// entry has one: dram_bandwidth, fp32_flops, fp64_flops, bf16_tensor_flops, fp16_tensor_flops,
// fp8_tensor_flops.
std::optional<double> datasheet_figure(const hardware::GpuSpec& spec, const std::string& ceiling);

std::string calibration_text(const selftest::CalibrateOutcome& outcome,
                             const hardware::GpuSpec* datasheet);

// `kprof selftest-kernels`: one line per kernel launched (grid, block, shared memory, registers,
// first launch's time) on stdout, the runner's notes for stderr.
std::string launches_text(const selftest::RunResult& result);
std::string launch_notes_text(const selftest::RunResult& result);

}  // namespace kprof::selftest
