// kprof-selftest-runner: the developer's entry point to the selftest library until `kprof
// selftest` and `kprof calibrate` exist. It runs the selftest kernels (for ncu to capture around
// it), measures the calibration, and judges a capture against data/selftest_expectations.json.
// tools/selftest/gpu-check.sh drives it on a GPU machine.
//
// Exit: 0 done (judge: every kernel as expected), 2 bad command line, 3/4 an unreadable or invalid
// report, 6 judge found a mismatch, 9 no usable GPU (no driver, no device, too old a device),
// 11 the output could not be written, 1 anything else (a driver call that failed included).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "analysis/analysis_tables.h"
#include "common/error.h"
#include "common/file_bytes.h"
#include "gpu/cuda_driver.h"
#include "importers/importer.h"
#include "render/table.h"
#include "selftest/calibration_json.h"
#include "selftest/judge.h"
#include "selftest/ptx_table.h"
#include "selftest/runner.h"

namespace {

using namespace kprof;
using nlohmann::json;

constexpr int kMismatch = 6;

json device_json(const gpu::DeviceInfo& d) {
  return {{"name", d.name},
          {"cc", d.compute_capability()},
          {"sms", d.sms},
          {"max_threads_per_sm", d.max_threads_per_sm},
          {"max_blocks_per_sm", d.max_blocks_per_sm},
          {"l2_bytes", d.l2_bytes},
          {"shared_per_sm_bytes", d.shared_per_sm_bytes},
          {"shared_per_block_optin_bytes", d.shared_per_block_optin_bytes},
          {"memory_bytes", d.memory_bytes},
          {"driver_cuda", d.driver_cuda_version()}};
}

void print_json(const json& document) { std::fputs((document.dump(1) + "\n").c_str(), stdout); }

int run_info(const selftest::RunOptions& options) {
  auto driver = gpu::CudaDriver::load(options.driver_library);
  gpu::DeviceInfo device = gpu::query_device(*driver, options.device);
  // Which module would be chosen: the run itself says which one the driver accepted.
  json candidates = json::array();
  for (const selftest::PtxModule* module :
       selftest::ptx_candidates(device.cc_major, device.cc_minor)) {
    candidates.push_back(fmt::format("sm_{}", module->arch));
  }
  print_json({{"device", device_json(device)}, {"ptx_candidates", candidates}});
  return 0;
}

int run_run(const selftest::RunOptions& options, const std::vector<std::string>& kernels,
            int repeat) {
  selftest::RunResult result = selftest::run_kernels(kernels, repeat, options);
  json runs = json::array();
  for (const selftest::KernelRun& run : result.kernels) {
    double best = *std::min_element(run.seconds.begin(), run.seconds.end());
    runs.push_back({{"kernel", run.plan.kernel},
                    {"grid", run.plan.grid},
                    {"block", run.plan.block},
                    {"shared_bytes", run.plan.shared_bytes},
                    {"registers", run.registers},
                    {"seconds", run.seconds},
                    {"best_us", best * 1e6},
                    {"work", run.plan.work},
                    {"work_unit", run.plan.work_unit}});
  }
  print_json({{"device", device_json(result.device)},
              {"ptx_arch", fmt::format("sm_{}", result.ptx_arch)},
              {"kernels", runs},
              {"notes", result.notes}});
  return 0;
}

int run_calibrate(const selftest::RunOptions& options, int repeats, const std::string& output) {
  selftest::Calibration calibration = selftest::calibrate(repeats, options);
  std::string text = selftest::calibration_to_json(calibration).dump(1) + "\n";
  if (output.empty()) {
    std::fputs(text.c_str(), stdout);
  } else {
    write_file_atomically(output, text);
  }
  return 0;
}

int run_judge(const std::string& report_path, bool as_json) {
  model::Report report = importers::import_report(report_path);
  analysis::AnalysisTables tables = analysis::load_analysis_tables();
  selftest::SelftestTable table = selftest::load_selftest_table();
  std::vector<selftest::KernelJudgement> judgements =
      selftest::judge_report(table, report, tables.config());
  bool all_passed = true;
  for (const auto& j : judgements) all_passed &= j.passed();
  if (as_json) {
    json list = json::array();
    for (const auto& j : judgements) {
      json fields = json::array();
      for (const auto& f : j.fields) {
        fields.push_back({{"field", f.field},
                          {"expected", f.expected},
                          {"measured", f.measured},
                          {"matches", f.matches}});
      }
      list.push_back({{"kernel", j.kernel},
                      {"in_report", j.in_report},
                      {"report_id", j.report_id ? json(*j.report_id) : json(nullptr)},
                      {"duration_us", j.duration_us ? json(*j.duration_us) : json(nullptr)},
                      {"passed", j.passed()},
                      {"fields", fields},
                      {"mismatches", j.mismatches()},
                      {"notes", j.notes}});
    }
    print_json({{"report", report_path}, {"passed", all_passed}, {"kernels", list}});
  } else {
    using render::TextTable;
    TextTable table_out({{"id", TextTable::Align::kRight},
                         {"kernel"},
                         {"us", TextTable::Align::kRight},
                         {"verdict expected/measured"},
                         {"bound by"},
                         {"limiter"},
                         {"result"}});
    for (const auto& j : judgements) {
      auto cell = [&](std::size_t i) {
        if (i >= j.fields.size()) return std::string("—");
        const auto& f = j.fields[i];
        std::string expected = f.expected.empty() ? "—" : f.expected;
        std::string measured = f.measured.empty() ? "—" : f.measured;
        return f.matches ? measured : expected + " / " + measured + " (!)";
      };
      table_out.add_row({j.report_id ? std::to_string(*j.report_id) : "", j.kernel,
                         j.duration_us ? fmt::format("{:.1f}", *j.duration_us) : "—", cell(0),
                         cell(1), cell(2),
                         !j.in_report ? "not in report"
                         : j.passed() ? "ok"
                                      : "MISMATCH"});
    }
    std::string out = table_out.to_string();
    for (const auto& j : judgements) {
      for (const auto& note : j.notes) out += fmt::format("note: {}: {}\n", j.kernel, note);
    }
    std::size_t passed = 0, missing = 0;
    for (const auto& j : judgements) {
      passed += j.passed();
      missing += !j.in_report;
    }
    out += fmt::format(
        "{} of {} judged launches as expected; {} mismatched (marked (!)); {} selftest kernel{} "
        "not in the report\n",
        passed, judgements.size() - missing, judgements.size() - missing - passed, missing,
        missing == 1 ? "" : "s");
    std::fputs(out.c_str(), stdout);
  }
  return all_passed ? 0 : kMismatch;
}

int fail(int code, const std::string& message) {
  std::fprintf(stderr, "kprof-selftest-runner: %s\n", message.c_str());
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "kprof's selftest kernels on this GPU: run them (for ncu), calibrate, judge a capture"};
  app.require_subcommand(1);
  selftest::RunOptions options;
  auto add_gpu_options = [&](CLI::App* command) {
    command->add_option("--driver", options.driver_library,
                        "The CUDA driver library to load (default libcuda.so.1)");
    command->add_option("--device", options.device, "The GPU's ordinal (default 0)");
  };
  CLI::App* info = app.add_subcommand("info", "The device and the PTX modules it can JIT (JSON)");
  add_gpu_options(info);

  std::vector<std::string> kernels;
  int repeat = 1;
  CLI::App* run = app.add_subcommand(
      "run", "Launch the selftest kernels (all, or --kernels), each --repeat times; JSON timings");
  add_gpu_options(run);
  run->add_option("--kernels", kernels, "Kernel names (comma-separated)")->delimiter(',');
  run->add_option("--repeat", repeat, "Launches per kernel")->check(CLI::PositiveNumber);

  int repeats = 20;
  std::string output;
  CLI::App* calibrate = app.add_subcommand(
      "calibrate", "Measure this GPU's ceilings; kprof.calibration/1 JSON to stdout or -o FILE");
  add_gpu_options(calibrate);
  calibrate->add_option("--repeats", repeats, "Runs per measurement (the best counts)")
      ->check(CLI::PositiveNumber);
  calibrate->add_option("-o,--output", output, "Write the JSON to this file");

  std::string report_path;
  bool as_json = false;
  CLI::App* judge = app.add_subcommand(
      "judge", "Judge an ncu capture of the selftest kernels against their expectations");
  judge->add_option("REPORT", report_path, "The .ncu-rep (or ncu CSV export)")->required();
  judge->add_flag("--json", as_json, "Print JSON");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error);
  }
  try {
    if (*info) return run_info(options);
    if (*run) return run_run(options, kernels, repeat);
    if (*calibrate) return run_calibrate(options, repeats, output);
    if (*judge) return run_judge(report_path, as_json);
  } catch (const gpu::GpuUnavailable& error) {
    return fail(static_cast<int>(ExitCode::kNotReady), error.what());
  } catch (const InputError& error) {
    return fail(static_cast<int>(error.code()), error.what());
  } catch (const std::invalid_argument& error) {
    return fail(static_cast<int>(ExitCode::kUsage), error.what());
  } catch (const std::exception& error) {
    return fail(static_cast<int>(ExitCode::kInternal), error.what());
  }
  return fail(static_cast<int>(ExitCode::kUsage), "no command given");
}
