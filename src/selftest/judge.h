// Judging a capture of the selftest kernels: kprof's own analysis of each kernel the report holds
// against what the selftest table says that kernel must show. Pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/verdict.h"
#include "model/report.h"
#include "selftest/selftest_table.h"

namespace kprof::selftest {

struct FieldJudgement {
  std::string field;  // "roofline", "bound_by", "occupancy_limiter"
  std::string expected;
  std::string measured;
  bool matches = false;
};

struct KernelJudgement {
  std::string kernel;
  bool in_report = false;
  std::optional<std::size_t> report_id;  // the kernel's id in the report (one per launch)
  std::optional<double> duration_us;
  std::vector<FieldJudgement> fields;  // roofline, bound_by, occupancy_limiter
  std::vector<std::string> notes;      // e.g. too short to trust

  bool passed() const;  // in the report and every field matches
  std::vector<std::string> mismatches()
      const;  // "roofline: expected memory-bound, measured latency-bound"
};

// Kernels shorter than this are flagged: their counters cover little more than launch overhead.
inline constexpr double kMinimumTrustedDurationUs = 50;

// One judgement per launch of a selftest kernel in the report (kernels matched by function name),
// in report order, then one (not in_report) for each selftest kernel the report lacks.
// Matching: roofline and binding unit exactly ("" = nothing binds); the occupancy limiter
// "none" only by "none", any other when it is among the limiters ncu names (a 32-block limit
// ties with the shared-memory and barrier limits on one-warp blocks, and all three are named).
std::vector<KernelJudgement> judge_report(const SelftestTable& table, const model::Report& report,
                                          const analysis::AnalysisConfig& config);

// One field's judgement, as judge_report makes it.
FieldJudgement judge_field(const std::string& field, const std::string& expected,
                           const std::string& measured);

}  // namespace kprof::selftest
