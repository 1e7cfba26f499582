// Trace diff on real H200 traces: an 8-layer decode step eager and as a CUDA-graph replay
// (budget_eager_decode, budget_graph_decode: same kernels, the graph's steps much shorter), a
// trace against itself, and the eager/torch.compile traces without step markers. Expected
// statistics were computed offline with Debian 12's python3-scipy 1.10.1 from the traces' own
// events (json + scipy.stats.ttest_ind(after, before, equal_var=False)) and, for the steps, from
// the GPU spans `kprof budget --json` reports per ProfilerStep#N.
#include "timeline/trace_diff.h"

#include <gtest/gtest.h>

#include "importers/common/read_trace.h"
#include "support/test_data.h"

namespace kprof::timeline {
namespace {

using testing::data_path;

TraceProfile profile_of(const std::string& file, const std::string& step_regex = "") {
  static const analysis::StageTable stages = analysis::load_stage_table();
  TraceProfileBuilder builder(stages);
  importers::read_trace(data_path(file), builder);
  return builder.finish(step_regex);
}

const Comparison* find(const std::vector<Comparison>& list, const std::string& name) {
  for (const Comparison& c : list) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

TEST(TraceDiff, TheGraphReplayImprovesTheStep) {
  TraceDiff diff = diff_traces(profile_of("h200/budget_eager_decode.json.gz"),
                               profile_of("h200/budget_graph_decode.json.gz"), {});
  EXPECT_EQ(diff.step.change, TraceChange::kImproved);
  EXPECT_FALSE(diff.regressed());
  ASSERT_EQ(diff.before_steps_us.size(), 5u);
  ASSERT_EQ(diff.after_steps_us.size(), 5u);
  ASSERT_TRUE(diff.step.p_value);
  // scipy: t = -28.76722145178203, p = 8.613817688096046e-06
  EXPECT_NEAR(*diff.step.p_value, 8.613817688096046e-06, 1e-9);
  EXPECT_EQ(diff.before_gpu_events, 240u);
  EXPECT_EQ(diff.after_gpu_events, 240u);
  // The same GEMM in both: 40 launches a side, no significant change.
  const Comparison* gemm = find(diff.kernels, "nvjet_sm90_tst_128x8_64x12_2x1_v_bz_TNT");
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->before.count, 40u);
  EXPECT_EQ(gemm->after.count, 40u);
  EXPECT_NEAR(gemm->before.total_us, 1350.622, 1e-6);
  EXPECT_NEAR(gemm->after.total_us, 1356.771, 1e-6);
  EXPECT_NEAR(*gemm->before.median_us, 33.6, 1e-9);
  EXPECT_NEAR(*gemm->after.median_us, 33.84, 1e-9);
  EXPECT_NEAR(*gemm->p_value, 0.12962083355599033, 1e-9);
  EXPECT_EQ(gemm->change, TraceChange::kNeutral);
}

TEST(TraceDiff, TheOtherWayRoundTheStepRegressed) {
  TraceDiff diff = diff_traces(profile_of("h200/budget_graph_decode.json.gz"),
                               profile_of("h200/budget_eager_decode.json.gz"), {});
  EXPECT_EQ(diff.step.change, TraceChange::kRegressed);
  EXPECT_TRUE(diff.regressed());
}

TEST(TraceDiff, ATraceAgainstItselfIsNeutralEverywhere) {
  TraceProfile profile = profile_of("h200/budget_eager_decode.json.gz");
  TraceDiff diff = diff_traces(profile, profile, {});
  EXPECT_EQ(diff.step.change, TraceChange::kNeutral);
  EXPECT_EQ(*diff.step.p_value, 1);
  for (const auto* list : {&diff.kernels, &diff.stages}) {
    for (const Comparison& c : *list) {
      EXPECT_EQ(c.change, TraceChange::kNeutral) << c.name;
      EXPECT_EQ(*c.change_pct, 0) << c.name;
    }
  }
}

// No step markers: the whole trace is one step a side, which gives no noise estimate — no step
// verdict, no failed gate; kernels that only one side launched are named as such.
TEST(TraceDiff, WithoutStepsThereIsNoStepVerdict) {
  TraceDiff diff = diff_traces(profile_of("h200/trace_eager.json.gz"),
                               profile_of("h200/trace_compile.json.gz"), {});
  EXPECT_EQ(diff.step.change, TraceChange::kNotEnoughSamples);
  EXPECT_FALSE(diff.regressed());
  size_t only_after = 0;
  for (const Comparison& c : diff.kernels) {
    if (c.change == TraceChange::kOnlyAfter) {
      ++only_after;
      EXPECT_EQ(c.name.rfind("triton_", 0), 0u) << c.name;  // torch.compile's generated kernels
    }
  }
  EXPECT_GT(only_after, 0u);
}

}  // namespace
}  // namespace kprof::timeline
