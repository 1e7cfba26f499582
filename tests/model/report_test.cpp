#include "model/report.h"

#include <gtest/gtest.h>

#include <cmath>

namespace kprof::model {
namespace {

Metric named(std::string name, double value) {
  Metric metric;
  metric.name = std::move(name);
  metric.value = MetricValue::of_double(value);
  return metric;
}

TEST(SortMetrics, OrdersByNameAndKeepsTheFirstDuplicate) {
  std::vector<Metric> metrics{named("b", 1), named("a", 2), named("b", 3), named("c", 4)};
  sort_metrics(metrics);
  ASSERT_EQ(metrics.size(), 3u);
  EXPECT_EQ(metrics[0].name, "a");
  EXPECT_EQ(metrics[1].name, "b");
  EXPECT_EQ(metrics[1].value.real(), 1);
  EXPECT_EQ(metrics[2].name, "c");
}

// A report holds ~2,200 metrics per `--set full` kernel, a million in a 1 GB report: their size
// is most of what reading it needs (bench/README.md). Was 56 and 192 bytes.
static_assert(sizeof(MetricValue) == 16);
static_assert(sizeof(Metric) <= 72);

// Values own their strings: copies, moves and assignments between kinds keep each its own.
TEST(MetricValue, CopiesMovesAndComparesEveryKind) {
  MetricValue text = MetricValue::of_string("CachePreferNone");
  MetricValue copy = text;
  EXPECT_EQ(copy.text(), "CachePreferNone");
  EXPECT_EQ(copy, text);
  MetricValue moved = std::move(copy);
  EXPECT_EQ(moved.text(), "CachePreferNone");
  copy = MetricValue::of_uint(7);  // a moved-from value takes a new one
  EXPECT_EQ(copy.integer(), 7u);
  EXPECT_EQ(copy.text(), "");
  EXPECT_EQ(copy.mutable_text(), nullptr);
  moved = copy;  // a string replaced by a number
  EXPECT_EQ(moved.kind(), MetricValue::Kind::kUint64);
  EXPECT_EQ(moved, MetricValue::of_uint(7));
  copy = text;  // a number replaced by a string
  *copy.mutable_text() += "!";
  EXPECT_EQ(text.text(), "CachePreferNone");  // the original is its own
  EXPECT_EQ(copy.to_string(), "CachePreferNone!");
  EXPECT_NE(MetricValue::of_double(7), MetricValue::of_uint(7));  // kinds differ
  EXPECT_EQ(MetricValue::of_double(2.5).real(), 2.5);
  EXPECT_EQ(MetricValue::of_double(2.5).integer(), 0u);
  double nan = std::nan("");
  EXPECT_NE(MetricValue::of_double(nan), MetricValue::of_double(nan));
  MetricValue& self = text;
  text = self;
  EXPECT_EQ(text.text(), "CachePreferNone");
}

TEST(Kernel, FindsMetricsAndTreatsStringsAsNotNumbers) {
  Kernel kernel;
  kernel.metrics = {named("x", 1.5)};
  Metric text;
  text.name = "launch__func_cache_config";
  text.value = MetricValue::of_string("CachePreferNone");
  kernel.metrics.push_back(text);
  sort_metrics(kernel.metrics);
  EXPECT_EQ(kernel.number("x"), 1.5);
  EXPECT_FALSE(kernel.number("launch__func_cache_config").has_value());
  EXPECT_FALSE(kernel.number("absent").has_value());
  ASSERT_NE(kernel.find("launch__func_cache_config"), nullptr);
}

TEST(Report, FallsBackToDeviceAttributes) {
  Report report;
  Device device;
  device.id = 1;
  device.attributes = {named("device__attribute_multiprocessor_count", 132)};
  report.devices.push_back(device);
  Kernel kernel;
  kernel.device_id = 1;
  EXPECT_EQ(report.number(kernel, "device__attribute_multiprocessor_count"), 132);
  kernel.device_id = 0;
  EXPECT_FALSE(report.number(kernel, "device__attribute_multiprocessor_count").has_value());
}

TEST(Kernel, DisplayNamePrefersFunctionThenDemangledThenMangled) {
  Kernel kernel;
  kernel.mangled_name = "_Z1kv";
  EXPECT_EQ(kernel.display_name(), "_Z1kv");
  kernel.demangled_name = "k()";
  EXPECT_EQ(kernel.display_name(), "k()");
  kernel.function_name = "k";
  EXPECT_EQ(kernel.display_name(), "k");
}

}  // namespace
}  // namespace kprof::model
