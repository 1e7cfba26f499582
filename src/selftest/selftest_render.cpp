#include "selftest/selftest_render.h"

#include <fmt/format.h>

#include "common/text.h"
#include "common/utf8.h"
#include "render/envelope.h"
#include "render/table.h"

namespace kprof::selftest {

using render::TextTable;
using render::tool_json;

namespace {

using nlohmann::json;

std::string field_cell(const selftest::KernelJudgement& j, std::size_t i) {
  if (i >= j.fields.size()) return "—";
  const selftest::FieldJudgement& f = j.fields[i];
  std::string expected = f.expected.empty() ? "—" : f.expected;
  std::string measured = f.measured.empty() ? "—" : f.measured;
  return f.matches ? measured : expected + " / " + measured + " (!)";
}

std::string human(double figure, const std::string& unit) {
  if (unit == "byte/s") return fmt::format("{:.3f} TB/s", figure / 1e12);
  if (unit == "flop/s") return fmt::format("{:.1f} TFLOP/s", figure / 1e12);
  if (unit == "s") return fmt::format("{:.2f} us", figure * 1e6);
  return fmt::format("{} {}", format_number(figure), unit);
}

}  // namespace

std::string selftest_text(const selftest::SelftestOutcome& o) {
  std::string out;
  if (o.device) {
    out +=
        fmt::format("selftest on {} (compute capability {}, CUDA {}), ncu {}, clocks {}\n",
                    o.device->name, o.device->compute_capability(), o.device->driver_cuda_version(),
                    o.ncu_version.empty() ? o.ncu_path : o.ncu_version, o.clock_control);
  } else {
    out += fmt::format("selftest judged on the capture {}\n", o.report_path);
  }
  if (o.ncu_failed || o.interrupted) {
    out += o.interrupted ? "ncu was interrupted; nothing was judged\n"
                         : "the ncu run failed; nothing was judged\n";
    for (const std::string& d : o.ncu_diagnoses) out += "  " + d + "\n";
    return escape_for_terminal(out, true);
  }
  TextTable table({{"id", TextTable::Align::kRight},
                   {"kernel"},
                   {"us", TextTable::Align::kRight},
                   {"verdict"},
                   {"bound by"},
                   {"occupancy limiter"},
                   {"result"}});
  std::size_t passed = 0, missing = 0;
  for (const selftest::KernelJudgement& j : o.judgements) {
    passed += j.passed();
    missing += !j.in_report;
    table.add_row({j.report_id ? std::to_string(*j.report_id) : "", j.kernel,
                   j.duration_us ? fmt::format("{:.1f}", *j.duration_us) : "—", field_cell(j, 0),
                   field_cell(j, 1), field_cell(j, 2),
                   !j.in_report ? "not in capture"
                   : j.passed() ? "ok"
                                : "MISMATCH"});
  }
  out += table.to_string();
  out += "cells show what kprof measured; a mismatch shows expected / measured (!)\n";
  for (const selftest::KernelJudgement& j : o.judgements) {
    for (const std::string& note : j.notes) out += fmt::format("note: {}: {}\n", j.kernel, note);
  }
  std::size_t judged = o.judgements.size() - missing;
  out += fmt::format(
      "{} of {} launches as expected, {} mismatched, {} selftest kernel{} not in "
      "the capture: {}\n",
      passed, judged, judged - passed, missing, missing == 1 ? "" : "s",
      o.passed() ? "PASSED" : "FAILED");
  if (!o.report_path.empty() && o.device) out += "capture kept: " + o.report_path + "\n";
  return escape_for_terminal(out, true);
}

json selftest_json(const selftest::SelftestOutcome& o, const std::vector<std::string>& argv) {
  json kernels = json::array();
  for (const selftest::KernelJudgement& j : o.judgements) {
    json fields = json::object();
    for (const selftest::FieldJudgement& f : j.fields) {
      fields[f.field] = {
          {"expected", f.expected}, {"measured", f.measured}, {"matches", f.matches}};
    }
    kernels.push_back({{"kernel", j.kernel},
                       {"in_capture", j.in_report},
                       {"launch", j.report_id ? json(*j.report_id) : json(nullptr)},
                       {"duration_us", j.duration_us ? json(*j.duration_us) : json(nullptr)},
                       {"passed", j.passed()},
                       {"fields", fields},
                       {"mismatches", j.mismatches()},
                       {"notes", j.notes}});
  }
  json gpu = nullptr;
  if (o.device) {
    gpu = {{"name", o.device->name},
           {"cc", o.device->compute_capability()},
           {"driver_cuda", o.device->driver_cuda_version()},
           {"ordinal", o.device->ordinal}};
  }
  json ncu = nullptr;
  if (!o.ncu_argv.empty()) {
    ncu = {{"path", o.ncu_path},           {"version", o.ncu_version},
           {"argv", o.ncu_argv},           {"clock_control", o.clock_control},
           {"exit_code", o.ncu_exit},      {"failed", o.ncu_failed},
           {"interrupted", o.interrupted}, {"diagnoses", o.ncu_diagnoses}};
  }
  return {{"schema", "kprof.selftest/1"},
          {"tool", tool_json(argv)},
          {"gpu", gpu},
          {"ncu", ncu},
          {"capture", o.report_path.empty() ? json(nullptr) : json(o.report_path)},
          {"passed", o.passed()},
          {"kernels", kernels}};
}

std::optional<double> datasheet_figure(const hardware::GpuSpec& spec, const std::string& ceiling) {
  if (ceiling == "dram_bandwidth") {
    if (spec.memory_bandwidth_tbs) return *spec.memory_bandwidth_tbs * 1e12;
    return std::nullopt;
  }
  static const std::pair<const char*, const char*> kFlops[] = {{"fp32_flops", "fp32"},
                                                               {"fp64_flops", "fp64"},
                                                               {"bf16_tensor_flops", "bf16"},
                                                               {"fp16_tensor_flops", "bf16"},
                                                               {"fp8_tensor_flops", "fp8"}};
  for (const auto& [name, key] : kFlops) {
    if (ceiling != name) continue;
    auto it = spec.peak_tflops.find(key);
    if (it != spec.peak_tflops.end()) return it->second * 1e12;
  }
  return std::nullopt;
}

namespace {

// "cublasLt (kprof: 626.3 TFLOP/s)": the code that reached the figure, then the others measured.
std::string reached_by(const selftest::Ceiling& x) {
  std::string out = escape_for_terminal(x.code.empty() ? std::string("kprof") : x.code);
  std::string others;
  for (const selftest::CeilingCandidate& candidate : x.candidates) {
    if (candidate.code == x.code && candidate.figure == x.figure) continue;
    if (!others.empty()) others += ", ";
    others += escape_for_terminal(candidate.code) + ": " + human(candidate.figure, x.unit);
  }
  if (!others.empty()) out += " (" + others + ")";
  return out;
}

}  // namespace

std::string calibration_text(const selftest::CalibrateOutcome& o,
                             const hardware::GpuSpec* datasheet) {
  const selftest::Calibration& c = o.calibration;
  // Every string of a calibration read back is the file's: each escaped on its own, a line break
  // included, so "…\nPASSED: 8 of 8 ceilings" in a GPU name or a note is no line of kprof's.
  auto shown = [](const std::string& text) { return escape_for_terminal(text); };
  std::string out =
      fmt::format("{} (compute capability {}, {}), CUDA {}{}, {}{}\n", shown(c.device.name),
                  c.device.cc_major ? c.device.compute_capability() : "?",
                  c.ptx_arch ? fmt::format("sm_{} PTX", c.ptx_arch) : std::string("PTX unknown"),
                  c.device.driver_version ? c.device.driver_cuda_version() : "?",
                  c.nvidia_driver.empty() ? "" : ", driver " + shown(c.nvidia_driver),
                  shown(c.date), o.source == "measured" ? "" : " (from " + shown(o.source) + ")");
  TextTable table({{"ceiling"},
                   {"measured", TextTable::Align::kRight},
                   {"datasheet", TextTable::Align::kRight},
                   {"% of datasheet", TextTable::Align::kRight},
                   {"runs", TextTable::Align::kRight},
                   {"median/best", TextTable::Align::kRight},
                   {"reached by"}});
  for (const selftest::Ceiling& x : c.ceilings) {
    // value_or, not the optional itself: GCC 12 -O2 takes *sheet inside the row's initializer
    // list for "maybe uninitialized" (an error with KPROF_WERROR=ON).
    std::optional<double> found = datasheet ? datasheet_figure(*datasheet, x.name) : std::nullopt;
    const bool has_sheet = found.has_value();
    const double sheet = found.value_or(0);
    table.add_row({shown(x.name), human(x.figure, x.unit), has_sheet ? human(sheet, x.unit) : "—",
                   has_sheet ? fmt::format("{:.1f}", x.figure / sheet * 100) : "—",
                   std::to_string(x.repeats),
                   x.best_seconds > 0 && x.median_seconds > 0
                       ? fmt::format("{:.3f}", x.median_seconds / x.best_seconds)
                       : "—",
                   reached_by(x)});
  }
  out += table.to_string();
  out += fmt::format(
      "each figure is the best of its runs, clocks as found; datasheet: {}\n",
      datasheet ? "kprof's GPU database entry " + datasheet->name : "no entry for this GPU");
  for (const std::string& note : c.notes) out += "note: " + shown(note) + "\n";
  if (!o.written.empty()) {
    out += fmt::format("written: {} (give it to `kprof analyze --gpus`)\n", o.written);
  }
  if (o.stored) out += fmt::format("stored: {} ceilings in the findings database\n", o.stored);
  return escape_for_terminal(out, true);
}

std::string launches_text(const selftest::RunResult& result) {
  std::string out;
  for (const selftest::KernelRun& run : result.kernels) {
    out += fmt::format("{} grid {} block {} shared {} registers {}: {:.1f} us\n", run.plan.kernel,
                       run.plan.grid, run.plan.block, run.plan.shared_bytes, run.registers,
                       run.seconds.empty() ? 0.0 : run.seconds.front() * 1e6);
  }
  return out;
}

std::string launch_notes_text(const selftest::RunResult& result) {
  std::string out;
  for (const std::string& line : result.notes) out += "note: " + line + "\n";
  return out;
}

}  // namespace kprof::selftest
