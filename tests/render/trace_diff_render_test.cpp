// kprof.trace-diff/1's p-values as written: rounded to 10 significant digits, and a p below
// DBL_MIN (a subnormal: thousands of launches with a large t) written as itself, not an error.
#include "render/trace_diff_render.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>

namespace kprof::render {
namespace {

timeline::Comparison comparison(const std::string& name, double p) {
  timeline::Comparison c;
  c.name = name;
  c.stage = "gemm";
  c.before = {2000, 2000.0, 1.0, 1.0};
  c.after = {2000, 4000.0, 2.0, 2.0};
  c.change_pct = 100;
  c.p_value = p;
  c.change = timeline::TraceChange::kRegressed;
  return c;
}

TEST(TraceDiffJson, SubnormalPValuesAreWrittenNotThrown) {
  timeline::TraceDiff diff;
  diff.step = comparison("step", 1e-310);
  diff.kernels = {comparison("k_subnormal", 4.9406564584124654e-324),
                  comparison("k_rounded", 0.012345678901234)};
  nlohmann::json out;
  ASSERT_NO_THROW(out = trace_diff_json(diff, "before.json", "after.json", {}, {"kprof", "diff"}));
  std::string text = out.dump();
  nlohmann::json back = nlohmann::json::parse(text);
  double step_p = back["step"]["comparison"]["p_value"].get<double>();
  EXPECT_GT(step_p, 0);
  EXPECT_LT(step_p, DBL_MIN);
  EXPECT_NEAR(step_p / 1e-310, 1, 1e-9);
  EXPECT_GT(back["kernels"][0]["p_value"].get<double>(), 0);
  EXPECT_EQ(back["kernels"][1]["p_value"].get<double>(), 0.0123456789);
}

}  // namespace
}  // namespace kprof::render
