// A fix list's prediction against two traces. On the H200's 8-layer decode step, eager against
// its CUDA-graph replay (budget_eager_decode, budget_graph_decode: the same kernels, the graph's
// steps shorter): the GEMM's time per step is its trace total over the 5 steps, figures that
// trace_diff_test.cpp checks against the traces' own events (1,350.622 and 1,356.771 us). The
// flag's cases are built by hand.
#include "timeline/prediction_check.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "common/error.h"
#include "importers/common/read_trace.h"
#include "support/test_data.h"

namespace kprof::timeline {
namespace {

using testing::data_path;

TraceProfile profile_of(const std::string& file) {
  static const analysis::StageTable stages = analysis::load_stage_table();
  TraceProfileBuilder builder(stages);
  importers::read_trace(data_path(file), builder);
  return builder.finish("");
}

constexpr const char* kGemm = "nvjet_sm90_tst_128x8_64x12_2x1_v_bz_TNT";

std::string prediction_json(double gemm_saving_us, std::uint64_t steps) {
  return fmt::format(
      R"({{"schema": "kprof.analysis/1", "fix_list": {{"steps": {}, "step_us": 3000,
          "opportunities": [
            {{"kernel": "{}", "canonical_name": "{}", "grid": [1, 1, 1], "block": [128, 1, 1],
              "bound_by": "dram", "estimated_saving_us": {}}},
            {{"kernel": "gone_kernel", "canonical_name": "gone_kernel", "grid": [2, 1, 1],
              "block": [64, 1, 1], "bound_by": null, "estimated_saving_us": null}}]}}}})",
      steps, kGemm, kGemm, gemm_saving_us);
}

TEST(PredictionCheck, TheDecodeGemmBesideTheGraphReplaysStep) {
  TraceProfile before = profile_of("h200/budget_eager_decode.json.gz");
  TraceProfile after = profile_of("h200/budget_graph_decode.json.gz");
  TraceDiff diff = diff_traces(before, after, {});
  Prediction p = parse_prediction("fixes.json", prediction_json(500, 5));
  ASSERT_EQ(p.groups.size(), 2u);
  EXPECT_DOUBLE_EQ(*p.groups[0].saving_us_per_step, 100);
  EXPECT_EQ(p.groups[0].grid, "1,1,1");
  EXPECT_FALSE(p.groups[1].saving_us_per_step);
  EXPECT_DOUBLE_EQ(p.total_saving_us_per_step, 100);
  PredictionCheck check = check_prediction(p, before, after, diff);
  ASSERT_EQ(check.groups.size(), 2u);
  const GroupOutcome& gemm = check.groups[0];
  EXPECT_TRUE(gemm.in_before && gemm.in_after);
  EXPECT_NEAR(gemm.before_us_per_step, 1350.622 / 5, 1e-6);
  EXPECT_NEAR(gemm.after_us_per_step, 1356.771 / 5, 1e-6);
  EXPECT_NEAR(gemm.realised_us_per_step(), (1350.622 - 1356.771) / 5, 1e-6);
  EXPECT_FALSE(gemm.improved_step_did_not);  // it did not get faster
  EXPECT_FALSE(check.groups[1].in_before);
  EXPECT_EQ(check.before_steps, 5u);
  EXPECT_EQ(check.after_steps, 5u);
  // The median step: trace_diff_test's spans, 1,521 us eager and 647.9 us replayed.
  std::vector<double> b = diff.before_steps_us, a = diff.after_steps_us;
  std::sort(b.begin(), b.end());
  std::sort(a.begin(), a.end());
  EXPECT_DOUBLE_EQ(check.before_step_us, b[2]);
  EXPECT_DOUBLE_EQ(check.after_step_us, a[2]);
  EXPECT_TRUE(check.step_improved);
  EXPECT_GT(check.realised_step_saving_us(), 0);  // the replay's step is shorter
  EXPECT_FALSE(check.kernels_improved_step_did_not);
}

// A kernel 50 us a step faster; the step 5 us faster: flagged. The step 40 us faster and judged
// improved: kept. 40 us faster but not judged improved (noise): flagged.
TEST(PredictionCheck, AKernelFasterWhileTheStepIsNotIsFlagged) {
  TraceProfile before, after;
  before.names["void scale_rows<32>(float*)"].durations_us = {100, 100};
  after.names["void scale_rows<32>(float*)"].durations_us = {50, 50};
  TraceDiff diff;
  diff.before_steps_us = {1000, 1000};
  diff.after_steps_us = {995, 995};
  Prediction p =
      parse_prediction("fixes.json",
                       R"({"schema": "kprof.analysis/1", "fix_list": {"steps": 2, "step_us": 1000,
          "opportunities": [{"kernel": "scale_rows<32>", "grid": [8192, 1, 1],
          "block": [32, 1, 1], "estimated_saving_us": 120}]}})");
  // No canonical_name (an answer of an earlier kprof): the display name is canonicalised.
  EXPECT_EQ(p.groups[0].canonical, "scale_rows<32>");
  PredictionCheck check = check_prediction(p, before, after, diff);
  EXPECT_DOUBLE_EQ(check.groups[0].before_us_per_step, 100);
  EXPECT_DOUBLE_EQ(check.groups[0].after_us_per_step, 50);
  EXPECT_DOUBLE_EQ(check.predicted_step_saving_us, 60);
  EXPECT_DOUBLE_EQ(check.realised_step_saving_us(), 5);
  EXPECT_TRUE(check.groups[0].improved_step_did_not);
  EXPECT_TRUE(check.kernels_improved_step_did_not);
  diff.step.change = TraceChange::kImproved;
  EXPECT_TRUE(check_prediction(p, before, after, diff).kernels_improved_step_did_not);
  diff.after_steps_us = {960, 960};
  PredictionCheck kept = check_prediction(p, before, after, diff);
  EXPECT_FALSE(kept.groups[0].improved_step_did_not);
  EXPECT_FALSE(kept.kernels_improved_step_did_not);
  diff.step.change = TraceChange::kNeutral;
  EXPECT_TRUE(check_prediction(p, before, after, diff).kernels_improved_step_did_not);
}

// A group the fix list split per batch bucket (a kprof tracer trace's node table) is one group
// in the traces compared: its rows' savings add up, its time is looked up once.
TEST(PredictionCheck, AGroupsBatchBucketRowsAreOneGroup) {
  Prediction p = parse_prediction(
      "fixes.json", R"({"schema": "kprof.analysis/1", "fix_list": {"steps": 2, "step_us": 1000,
        "opportunities": [
          {"kernel": "k", "bucket": "batch 64", "grid": [8, 1, 1], "block": [32, 1, 1],
           "estimated_saving_us": 120},
          {"kernel": "other", "bucket": null, "grid": [8, 1, 1], "block": [32, 1, 1],
           "estimated_saving_us": 10},
          {"kernel": "k", "bucket": "batch 1", "grid": [8, 1, 1], "block": [32, 1, 1],
           "estimated_saving_us": 40},
          {"kernel": "k", "bucket": "batch 1", "grid": [16, 1, 1], "block": [32, 1, 1],
           "estimated_saving_us": 2}]}})");
  ASSERT_EQ(p.groups.size(), 3u);
  EXPECT_EQ(p.groups[0].kernel, "k");
  EXPECT_DOUBLE_EQ(*p.groups[0].saving_us_per_step, 80);  // (120 + 40) / 2 steps
  EXPECT_EQ(p.groups[2].grid, "16,1,1");                  // another configuration: its own
  EXPECT_DOUBLE_EQ(p.total_saving_us_per_step, 86);
}

TEST(PredictionCheck, AnswersWithoutAFixListAreRefusedNamingTheFile) {
  auto refused = [](const std::string& text) {
    try {
      parse_prediction("fixes.json", text);
    } catch (const InputError& error) {
      EXPECT_EQ(error.code(), ExitCode::kInputInvalid);
      return std::string(error.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_NE(refused("[1, 2").find("fixes.json"), std::string::npos);
  EXPECT_NE(refused(R"({"schema": "kprof.rank/1"})").find("not a kprof report --json answer"),
            std::string::npos);
  EXPECT_NE(refused(R"({"schema": "kprof.analysis/1", "kernels": []})").find("--trace"),
            std::string::npos);
  EXPECT_NE(refused(R"({"schema": "kprof.analysis/1", "fix_list": {"opportunities": [{}]}})")
                .find("opportunities[0] has no kernel name"),
            std::string::npos);
}

}  // namespace
}  // namespace kprof::timeline
