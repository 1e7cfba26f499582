// Joining a capture to the trace of the same workload (big_full, decode_eager_full and trace_eager
// were recorded from one eager PyTorch program), checked against shares computed here from the
// trace JSON: a captured kernel's trace events are those whose name is exactly the kernel's
// mangled name demangled by libstdc++ (PyTorch's demangler; checked against c++filt in
// tests/model/kernel_names_test.cpp), or its function name for an extern "C" kernel.
#include "timeline/trace_join.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "importers/chrome_trace/chrome_trace_reader.h"
#include "importers/importer.h"
#include "model/kernel_names.h"
#include "support/test_data.h"

namespace kprof::timeline {
namespace {

using testing::data_path;

nlohmann::json load_trace(const std::string& file) {
  return nlohmann::json::parse(testing::read_gzip_text(data_path(file)));
}

// Every kernel of the capture must be found in the trace, with its grid and block.
void expect_every_kernel_joined(const std::string& capture) {
  model::Report report = importers::import_report(data_path(capture));
  TraceTimeIndex index;
  importers::read_chrome_trace(data_path("h200/trace_eager.json.gz"), index);
  auto trace = load_trace("h200/trace_eager.json.gz");
  double first = 1e300, last = -1e300;
  for (const auto& e : trace["traceEvents"]) {
    std::string cat = e.value("cat", "");
    if (cat != "kernel" && cat != "gpu_memcpy" && cat != "gpu_memset") continue;
    first = std::min(first, e["ts"].get<double>());
    last = std::max(last, e["ts"].get<double>() + e["dur"].get<double>());
  }
  EXPECT_NEAR(index.gpu_span_us(), last - first, 1e-6);
  size_t matched = 0;
  for (const model::Kernel& kernel : report.kernels) {
    std::string traced_name = model::demangle(kernel.mangled_name).value_or(kernel.function_name);
    double expected = 0;
    std::uint64_t launches = 0;
    for (const auto& e : trace["traceEvents"]) {
      if (e.value("cat", "") != "kernel" || e["name"] != traced_name) continue;
      const auto& grid = e["args"]["grid"];
      const auto& block = e["args"]["block"];
      if (grid[0] != kernel.grid.x || grid[1] != kernel.grid.y || grid[2] != kernel.grid.z ||
          block[0] != kernel.block.x || block[1] != kernel.block.y || block[2] != kernel.block.z) {
        continue;
      }
      expected += e["dur"].get<double>();
      ++launches;
    }
    ASSERT_GT(launches, 0u) << traced_name;  // the same program ran them all, so configured
    auto share = index.share_of(kernel);
    ASSERT_TRUE(share.has_value()) << kernel.id << " " << traced_name;
    if (!share->matched_launch_config) continue;
    ++matched;
    EXPECT_EQ(share->time.count, launches) << traced_name;
    EXPECT_NEAR(share->time.total_us, expected, 1e-6) << traced_name;
    double fraction = expected / (last - first);
    EXPECT_NEAR(share->fraction_of_pipeline, fraction, 1e-12);
    EXPECT_NEAR(share->max_e2e_speedup, 1 / (1 - fraction), 1e-12);
  }
  EXPECT_EQ(matched, report.kernels.size());  // every capture found with its launch config
}

// extern "C" kernels (nvjet, cuDNN): their names are spelled alike everywhere.
TEST(TraceJoin, SharesAndAmdahlBoundsMatchTheTrace) {
  expect_every_kernel_joined("h200/big_full.ncu-rep.zst");
}

// Templated C++ kernels (CUB, PyTorch's elementwise/index/reduce kernels with lambdas and
// anonymous namespaces, cuBLASLt's split-K reduce): ncu spells them `<(int)4, ...>`,
// `<unnamed>`, `[lambda() (instance 1)]`, the trace `<4, ...>`, `(anonymous namespace)`,
// `{lambda()#1}`. Before the join used one spelling, 6 of these 40 were found (the nvjet ones).
TEST(TraceJoin, TemplatedKernelsAreFoundWhateverTheDemanglerSpelling) {
  expect_every_kernel_joined("h200/decode_eager_full.ncu-rep.zst");
}

TEST(TraceJoin, KernelsTheTraceNeverRanAreNotInIt) {
  model::Report suite =
      importers::import_report(data_path("h200/bottleneck_suite_full.ncu-rep.zst"));
  TraceTimeIndex index;
  importers::read_chrome_trace(data_path("h200/trace_eager.json.gz"), index);
  for (const model::Kernel& kernel : suite.kernels)
    EXPECT_FALSE(index.share_of(kernel).has_value());
}

}  // namespace
}  // namespace kprof::timeline
