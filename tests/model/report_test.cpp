#include "model/report.h"

#include <gtest/gtest.h>

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
  EXPECT_EQ(metrics[1].value.real, 1);
  EXPECT_EQ(metrics[2].name, "c");
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
