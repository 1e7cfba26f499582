// Judging a capture against the selftest table, on the real H200 capture of the bottleneck suite:
// the kernels the selftest keeps from it (same code) must pass; each redesigned kernel's
// expectation, applied to its suite counterpart, must fail in exactly the fields the table says
// it did — the reason the design changed — and nowhere else.
#include "selftest/judge.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "analysis/analysis_tables.h"
#include "importers/importer.h"
#include "support/test_data.h"

namespace kprof::selftest {
namespace {

using testing::data_path;

const model::Report& suite() {
  static const model::Report report =
      importers::import_report(data_path("h200/bottleneck_suite_full.ncu-rep.zst"));
  return report;
}

const analysis::AnalysisTables& tables() {
  static const analysis::AnalysisTables t = analysis::load_analysis_tables();
  return t;
}

const KernelJudgement* find(const std::vector<KernelJudgement>& judgements,
                            const std::string& kernel) {
  for (const KernelJudgement& j : judgements) {
    if (j.kernel == kernel) return &j;
  }
  return nullptr;
}

std::set<std::string> mismatched_fields(const KernelJudgement& j) {
  std::set<std::string> fields;
  for (const FieldJudgement& f : j.fields) {
    if (!f.matches) fields.insert(f.field);
  }
  return fields;
}

TEST(SelftestJudge, KernelsKeptFromTheSuitePassOnItsH200Capture) {
  SelftestTable table = load_selftest_table();
  std::vector<KernelJudgement> judgements = judge_report(table, suite(), tables().config());
  std::size_t kept = 0;
  for (const KernelSpec& spec : table.kernels) {
    if (!spec.expected || !spec.bottleneck_suite || !spec.bottleneck_suite->same_design) continue;
    ++kept;
    SCOPED_TRACE(spec.kernel);
    EXPECT_EQ(spec.bottleneck_suite->kernel, spec.kernel);  // kept designs keep their names
    EXPECT_TRUE(spec.bottleneck_suite->differs_in.empty());
    const KernelJudgement* j = find(judgements, spec.kernel);
    ASSERT_NE(j, nullptr);
    EXPECT_TRUE(j->in_report);
    EXPECT_TRUE(j->passed()) << ::testing::PrintToString(j->mismatches());
    EXPECT_GE(*j->duration_us, kMinimumTrustedDurationUs);
    EXPECT_TRUE(j->notes.empty());
  }
  EXPECT_EQ(kept, 7u);
  // The kernels new to the selftest are not in that capture, and say so.
  for (const char* name : {"k_l2_reread", "k_tensor_mma_bf16", "k_tiny_blocks", "k_smem_chase"}) {
    const KernelJudgement* j = find(judgements, name);
    ASSERT_NE(j, nullptr) << name;
    EXPECT_FALSE(j->in_report);
    EXPECT_FALSE(j->passed());
    EXPECT_EQ(j->mismatches(), std::vector<std::string>{"not in the report"});
  }
  EXPECT_EQ(judgements.size(), table.selftest_kernels().size());
}

TEST(SelftestJudge, RedesignedKernelsDifferFromTheSuiteExactlyWhereTheTableSays) {
  SelftestTable table = load_selftest_table();
  std::size_t checked = 0;
  for (const KernelSpec& spec : table.kernels) {
    if (!spec.expected || !spec.bottleneck_suite || spec.bottleneck_suite->same_design) continue;
    SCOPED_TRACE(spec.kernel + " vs the suite's " + spec.bottleneck_suite->kernel);
    // This kernel's expectation, applied to the suite's kernel of the same purpose.
    SelftestTable one;
    KernelSpec renamed = spec;
    renamed.kernel = spec.bottleneck_suite->kernel;
    one.kernels.push_back(renamed);
    std::vector<KernelJudgement> judgements = judge_report(one, suite(), tables().config());
    ASSERT_EQ(judgements.size(), 1u);
    ASSERT_TRUE(judgements[0].in_report);
    const std::vector<std::string>& differs = spec.bottleneck_suite->differs_in;
    EXPECT_EQ(mismatched_fields(judgements[0]),
              std::set<std::string>(differs.begin(), differs.end()))
        << ::testing::PrintToString(judgements[0].mismatches());
    ++checked;
  }
  EXPECT_EQ(checked, 3u);  // L2 re-read, shared-memory chase, tensor MMA
}

TEST(SelftestJudge, TheSuitesL2KernelMissesByItsFractionOfAPercent) {
  // k_l2_resident reached 79.7% of the L2 peak: latency-bound at the default 80% threshold,
  // memory-bound at 79% — the judge applies the thresholds it is given.
  SelftestTable one;
  KernelSpec spec = *load_selftest_table().find("k_l2_reread");
  spec.kernel = "k_l2_resident";
  spec.expected->occupancy_limiter = "none";  // the suite's design ran at full occupancy
  one.kernels.push_back(spec);
  auto strict = judge_report(one, suite(), tables().config());
  EXPECT_EQ(strict[0].mismatches(),
            std::vector<std::string>{"roofline: expected memory-bound, measured latency-bound"});
  auto relaxed = judge_report(one, suite(), tables().config({80, 79}));
  EXPECT_TRUE(relaxed[0].passed()) << ::testing::PrintToString(relaxed[0].mismatches());
}

TEST(SelftestJudge, FieldsMatchExactlyAndLimitersByMembership) {
  EXPECT_TRUE(judge_field("roofline", "memory-bound", "memory-bound").matches);
  EXPECT_FALSE(judge_field("roofline", "memory-bound", "at the ridge").matches);
  EXPECT_TRUE(judge_field("bound_by", "", "").matches);
  EXPECT_FALSE(judge_field("bound_by", "", "fp32").matches);  // "nothing binds" is a claim too
  EXPECT_FALSE(judge_field("bound_by", "dram", "l2").matches);
  // ncu names every limit at the minimum: one-warp blocks tie blocks, shared memory, barriers.
  EXPECT_TRUE(judge_field("occupancy_limiter", "blocks", "shared_memory+blocks+barriers").matches);
  EXPECT_TRUE(judge_field("occupancy_limiter", "registers", "registers").matches);
  EXPECT_FALSE(judge_field("occupancy_limiter", "registers", "shared_memory").matches);
  EXPECT_FALSE(judge_field("occupancy_limiter", "blocks", "blocks_extra").matches);
  EXPECT_TRUE(judge_field("occupancy_limiter", "none", "none").matches);
  EXPECT_FALSE(judge_field("occupancy_limiter", "none", "registers").matches);
  EXPECT_FALSE(judge_field("occupancy_limiter", "registers", "").matches);
}

TEST(SelftestJudge, EveryLaunchIsJudgedAndShortKernelsAreFlagged) {
  // Two launches of the suite's FP32 loop, the second one made 20 us long.
  model::Report report = suite();
  model::Kernel copy;
  for (const model::Kernel& k : report.kernels) {
    if (k.function_name == "k_fp32_fma") copy = k;
  }
  for (model::Metric& m : copy.metrics) {
    if (m.name == "gpu__time_duration.sum") m.value = model::MetricValue::of_double(20000);
  }
  copy.id = report.kernels.size();
  report.kernels.push_back(copy);
  SelftestTable table = load_selftest_table();
  std::vector<KernelJudgement> judgements = judge_report(table, report, tables().config());
  std::vector<const KernelJudgement*> fp32;
  for (const KernelJudgement& j : judgements) {
    if (j.kernel == "k_fp32_fma") fp32.push_back(&j);
  }
  ASSERT_EQ(fp32.size(), 2u);
  EXPECT_TRUE(fp32[0]->notes.empty());
  ASSERT_EQ(fp32[1]->notes.size(), 1u);
  EXPECT_EQ(fp32[1]->notes[0], "ran 20.0 us, under the 50 us the selftest sizes kernels for");
  EXPECT_EQ(*fp32[1]->report_id, report.kernels.size() - 1);
}

}  // namespace
}  // namespace kprof::selftest
