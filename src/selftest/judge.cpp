#include "selftest/judge.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <sstream>

namespace kprof::selftest {
namespace {

std::set<std::string> split_plus(const std::string& text) {
  std::set<std::string> parts;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, '+')) {
    if (!part.empty()) parts.insert(part);
  }
  return parts;
}

}  // namespace

bool KernelJudgement::passed() const {
  return in_report && std::all_of(fields.begin(), fields.end(),
                                  [](const FieldJudgement& f) { return f.matches; });
}

std::vector<std::string> KernelJudgement::mismatches() const {
  std::vector<std::string> out;
  if (!in_report) out.push_back("not in the report");
  for (const FieldJudgement& f : fields) {
    if (f.matches) continue;
    out.push_back(fmt::format("{}: expected {}, measured {}", f.field,
                              f.expected.empty() ? "nothing" : f.expected,
                              f.measured.empty() ? "nothing" : f.measured));
  }
  return out;
}

FieldJudgement judge_field(const std::string& field, const std::string& expected,
                           const std::string& measured) {
  FieldJudgement f{field, expected, measured, false};
  if (field == "occupancy_limiter" && expected != "none") {
    f.matches = split_plus(measured).contains(expected);
  } else {
    f.matches = expected == measured;
  }
  return f;
}

std::vector<KernelJudgement> judge_report(const SelftestTable& table, const model::Report& report,
                                          const analysis::AnalysisConfig& config) {
  std::vector<KernelJudgement> judgements;
  std::set<std::string> seen;
  for (const model::Kernel& kernel : report.kernels) {
    const KernelSpec* spec = table.find(kernel.function_name);
    if (!spec || !spec->expected) continue;
    seen.insert(spec->kernel);
    analysis::KernelVerdict v = analysis::analyze_kernel(report, kernel, config);
    KernelJudgement j;
    j.kernel = spec->kernel;
    j.in_report = true;
    j.report_id = kernel.id;
    if (v.duration_ns) j.duration_us = *v.duration_ns / 1000;
    const Expectation& e = *spec->expected;
    j.fields.push_back(judge_field("roofline", e.roofline, analysis::roofline_name(v.roofline)));
    j.fields.push_back(judge_field("bound_by", e.bound_by, v.bound_by));
    j.fields.push_back(judge_field("occupancy_limiter", e.occupancy_limiter, v.occupancy_limiter));
    if (j.duration_us && *j.duration_us < kMinimumTrustedDurationUs) {
      j.notes.push_back(
          fmt::format("ran {:.1f} us, under the {:.0f} us the selftest sizes kernels for",
                      *j.duration_us, kMinimumTrustedDurationUs));
    }
    if (!v.missing.empty()) {
      for (const std::string& missing : v.missing) {
        if (missing.rfind("roofline", 0) == 0 || missing.rfind("bound_by", 0) == 0 ||
            missing.rfind("occupancy_limiter", 0) == 0) {
          j.notes.push_back("the capture lacks " + missing);
        }
      }
    }
    judgements.push_back(std::move(j));
  }
  for (const KernelSpec& spec : table.kernels) {
    if (!spec.expected || seen.contains(spec.kernel)) continue;
    KernelJudgement j;
    j.kernel = spec.kernel;
    judgements.push_back(std::move(j));
  }
  return judgements;
}

}  // namespace kprof::selftest
