// What kprof says about the tools it drives: an ncu run read back from its console output
// (`kprof explain`, kprof.explain/1) and whether this machine can capture (`kprof doctor`,
// kprof.doctor/1) — each worked out here and shown as text or JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "capture/doctor.h"
#include "capture/ncu_diagnosis.h"
#include "capture/ncu_progress.h"

namespace kprof::capture {

// An ncu run read back from its console output, exit status and command line.
struct ExplainedRun {
  int exit_code = 0;
  NcuProgress progress;
  std::vector<Diagnosis> diagnoses;
  bool failed() const;  // a diagnosis says the run failed
};
// `ncu` stands in for an empty command line.
ExplainedRun explain_ncu_run(std::vector<std::string> ncu_argv, std::string output, int exit_code);

std::string explain_text(const ExplainedRun& run);
nlohmann::json explain_json(const ExplainedRun& run, const std::vector<std::string>& argv);

// Gate 0 on this machine (or under `root`): ncu found, then every check.
struct DoctorReport {
  std::vector<Check> checks;
  std::string ncu_version;  // `ncu --version`'s line ("" when ncu was not found)
  bool ready() const;       // no check failed
};
DoctorReport check_this_machine(const std::string& ncu_option, const std::string& root);

const char* check_status_text(Check::Status status);  // ok, warning, FAILED, info
std::string doctor_text(const DoctorReport& report);
nlohmann::json doctor_json(const DoctorReport& report, const std::vector<std::string>& argv);

}  // namespace kprof::capture
