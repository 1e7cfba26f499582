#include "capture/tools_render.h"

#include <fmt/format.h>

#include <algorithm>

#include "capture/bundle_manifest.h"
#include "capture/ncu_locator.h"
#include "render/envelope.h"

namespace kprof::capture {

bool ExplainedRun::failed() const {
  return std::any_of(diagnoses.begin(), diagnoses.end(),
                     [](const Diagnosis& d) { return d.failure; });
}

ExplainedRun explain_ncu_run(std::vector<std::string> ncu_argv, std::string output, int exit_code) {
  NcuRun run{std::move(ncu_argv), std::move(output), exit_code};
  if (run.argv.empty()) run.argv.push_back("ncu");
  ExplainedRun explained;
  explained.exit_code = exit_code;
  explained.progress = parse_progress(run.output);
  explained.diagnoses = diagnose(run);
  return explained;
}

std::string explain_text(const ExplainedRun& run) {
  const NcuProgress& p = run.progress;
  std::string out = fmt::format(
      "ncu exited {}; {} process{} profiled, {} kernel launch{}{}; report{}: {}\n", run.exit_code,
      p.processes_connected, p.processes_connected == 1 ? "" : "es", p.kernels_profiled,
      p.kernels_profiled == 1 ? "" : "es",
      p.passes_per_kernel ? fmt::format(" at {} passes each", *p.passes_per_kernel) : "",
      p.report_paths.size() == 1 ? "" : "s",
      p.report_paths.empty() ? "none written" : p.report_paths.front());
  out += run.failed()            ? "the run failed: the diagnoses (stderr) say why and what to do\n"
         : run.diagnoses.empty() ? "nothing to report: the run looks healthy\n"
                                 : "the run worked, with warnings (stderr)\n";
  return out;
}

nlohmann::json explain_json(const ExplainedRun& run, const std::vector<std::string>& argv) {
  const NcuProgress& p = run.progress;
  return render::with_envelope(
      "kprof.explain/1", argv,
      {{"ncu_exit_code", run.exit_code},
       {"processes", p.processes_connected},
       {"kernels_profiled", p.kernels_profiled},
       {"passes_per_kernel",
        p.passes_per_kernel ? nlohmann::json(*p.passes_per_kernel) : nlohmann::json(nullptr)},
       {"reports", p.report_paths},
       {"failed", run.failed()},
       {"diagnoses", diagnoses_json(run.diagnoses)}});
}

bool DoctorReport::ready() const {
  return std::none_of(checks.begin(), checks.end(),
                      [](const Check& c) { return c.status == Check::Status::kFailed; });
}

DoctorReport check_this_machine(const std::string& ncu_option, const std::string& root) {
  NcuLocation ncu = locate_ncu(ncu_option);
  SystemFacts facts = gather_system_facts(root, ncu.path, ncu.searched);
  return {run_doctor_checks(facts), facts.ncu_version};
}

const char* check_status_text(Check::Status status) {
  switch (status) {
    case Check::Status::kOk:
      return "ok";
    case Check::Status::kWarning:
      return "warning";
    case Check::Status::kFailed:
      return "FAILED";
    case Check::Status::kInfo:
      return "info";
  }
  return "";
}

std::string doctor_text(const DoctorReport& report) {
  std::string text;
  for (const Check& c : report.checks) {
    text += fmt::format("{:<8} {:<22} {}\n", check_status_text(c.status), c.name, c.detail);
    if (!c.next.empty()) text += fmt::format("{:<31}→ {}\n", "", c.next);
  }
  text +=
      report.ready() ? "ready to capture\n" : "not ready to capture: fix the FAILED checks above\n";
  return text;
}

nlohmann::json doctor_json(const DoctorReport& report, const std::vector<std::string>& argv) {
  nlohmann::json list = nlohmann::json::array();
  for (const Check& c : report.checks) {
    list.push_back({{"check", c.name},
                    {"status", check_status_text(c.status)},
                    {"detail", c.detail},
                    {"next", c.next}});
  }
  return render::with_envelope("kprof.doctor/1", argv,
                               {{"ready", report.ready()}, {"checks", list}});
}

}  // namespace kprof::capture
