// What kprof says about the tools it drives: an ncu run read back from its console output
// (`kprof explain`, kprof.explain/1) and whether this machine can capture (`kprof doctor`,
// kprof.doctor/1). Plain rows in, so that render needs nothing of capture/.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace kprof::render {

struct NcuRunSummary {
  int exit_code = 0;
  size_t processes = 0;
  size_t kernels_profiled = 0;
  std::optional<int> passes_per_kernel;
  std::vector<std::string> reports;
  bool failed = false;         // a diagnosis says the run failed
  bool has_diagnoses = false;  // warnings or failures
};

std::string explain_text(const NcuRunSummary& run);
// diagnoses: the run's diagnoses as capture's bundles record them.
nlohmann::json explain_json(const NcuRunSummary& run, nlohmann::json diagnoses,
                            const std::vector<std::string>& argv);

struct DoctorRow {
  std::string check;
  std::string status;  // ok, warning, FAILED, info
  std::string detail;
  std::string next;  // what to do; empty when nothing
};

std::string doctor_text(const std::vector<DoctorRow>& checks, bool ready);
nlohmann::json doctor_json(const std::vector<DoctorRow>& checks, bool ready,
                           const std::vector<std::string>& argv);

}  // namespace kprof::render
