#include "render/tools_render.h"

#include <fmt/format.h>

#include "render/envelope.h"

namespace kprof::render {

std::string explain_text(const NcuRunSummary& run) {
  std::string out = fmt::format(
      "ncu exited {}; {} process{} profiled, {} kernel launch{}{}; report{}: {}\n", run.exit_code,
      run.processes, run.processes == 1 ? "" : "es", run.kernels_profiled,
      run.kernels_profiled == 1 ? "" : "es",
      run.passes_per_kernel ? fmt::format(" at {} passes each", *run.passes_per_kernel) : "",
      run.reports.size() == 1 ? "" : "s",
      run.reports.empty() ? "none written" : run.reports.front());
  out += run.failed           ? "the run failed: the diagnoses (stderr) say why and what to do\n"
         : !run.has_diagnoses ? "nothing to report: the run looks healthy\n"
                              : "the run worked, with warnings (stderr)\n";
  return out;
}

nlohmann::json explain_json(const NcuRunSummary& run, nlohmann::json diagnoses,
                            const std::vector<std::string>& argv) {
  return with_envelope(
      "kprof.explain/1", argv,
      {{"ncu_exit_code", run.exit_code},
       {"processes", run.processes},
       {"kernels_profiled", run.kernels_profiled},
       {"passes_per_kernel",
        run.passes_per_kernel ? nlohmann::json(*run.passes_per_kernel) : nlohmann::json(nullptr)},
       {"reports", run.reports},
       {"failed", run.failed},
       {"diagnoses", std::move(diagnoses)}});
}

std::string doctor_text(const std::vector<DoctorRow>& checks, bool ready) {
  std::string text;
  for (const auto& c : checks) {
    text += fmt::format("{:<8} {:<22} {}\n", c.status, c.check, c.detail);
    if (!c.next.empty()) text += fmt::format("{:<31}→ {}\n", "", c.next);
  }
  text += ready ? "ready to capture\n" : "not ready to capture: fix the FAILED checks above\n";
  return text;
}

nlohmann::json doctor_json(const std::vector<DoctorRow>& checks, bool ready,
                           const std::vector<std::string>& argv) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& c : checks) {
    list.push_back(
        {{"check", c.check}, {"status", c.status}, {"detail", c.detail}, {"next", c.next}});
  }
  return with_envelope("kprof.doctor/1", argv, {{"ready", ready}, {"checks", list}});
}

}  // namespace kprof::render
