// Issue 43, "GPU identity", the device attributes: a report records the device that ran
// (device__attribute_*: SM count, memory clock, bus width, …), a datasheet the product name it
// shares with other parts. Where the two disagree by more than a few percent the report's figure
// is the one to use, saying so (analysis::gpu_figures, over model::device_figures). The devices
// here carry the attributes ncu records, with the values of the parts named.
#include "analysis/gpu_figures.h"

#include <gtest/gtest.h>

#include "hardware/gpu_specs.h"
#include "model/device_figures.h"

namespace kprof::analysis {
namespace {

const hardware::GpuDatabase& builtin() {
  static const hardware::GpuDatabase db = hardware::load_gpu_database();
  return db;
}

model::Device device(const std::string& name, double memory_khz, double bus_bits, double sms) {
  model::Device d;
  d.name = name;
  auto add = [&](const char* attribute, double value) {
    model::Metric metric;
    metric.name = attribute;
    metric.value = model::MetricValue::of_uint(static_cast<std::uint64_t>(value));
    d.attributes.push_back(std::move(metric));
  };
  if (memory_khz > 0) add("device__attribute_memory_clock_rate", memory_khz);
  if (bus_bits > 0) add("device__attribute_global_memory_bus_width", bus_bits);
  if (sms > 0) add("device__attribute_multiprocessor_count", sms);
  model::sort_metrics(d.attributes);
  return d;
}

TEST(GpuIdentityFromDeviceAttributes, DeviceAttributesGiveTheDramPeakAsMemoryClockTimesBusWidth) {
  // The H200 of data/h200: 3,201,000 kHz x 6,016 bits x 2 / 8.
  model::DeviceFigures h200 = model::device_figures(device("NVIDIA H200", 3201000, 6016, 132));
  ASSERT_TRUE(h200.dram_peak_bytes_per_second);
  EXPECT_DOUBLE_EQ(*h200.dram_peak_bytes_per_second, 3201000e3 * 6016 * 2 / 8);
  EXPECT_EQ(h200.sm_count, 132);
  // A details-page CSV records no attributes; a 0 is no figure either.
  model::DeviceFigures none = model::device_figures(device("NVIDIA H200", 0, 6016, 0));
  EXPECT_FALSE(none.dram_peak_bytes_per_second);
  EXPECT_FALSE(none.sm_count);
}

TEST(GpuIdentityFromDeviceAttributes,
     TheReportsDeviceAttributesWinWhereTheyDisagreeWithTheTableSayingSo) {
  // The 12 GB RTX 3080 reports the 10 GB card's name: 70 SMs, 9501 MHz x 384 bits = 912 GB/s.
  GpuFigures rtx3080 = gpu_figures(device("NVIDIA GeForce RTX 3080", 9501000, 384, 70), &builtin());
  ASSERT_NE(rtx3080.entry, nullptr);
  EXPECT_EQ(rtx3080.entry->name, "RTX 3080");
  ASSERT_TRUE(rtx3080.dram_peak);
  EXPECT_NEAR(rtx3080.dram_peak->value, 912.1e9, 0.1e9);
  EXPECT_EQ(rtx3080.dram_peak->source.rfind("report device attributes: memory clock 9.50 GHz x "
                                            "384-bit bus x 2 / 8 = 0.912 TB/s",
                                            0),
            0u)
      << rtx3080.dram_peak->source;
  ASSERT_EQ(rtx3080.notes.size(), 1u);  // 70 SMs against 68 is within a few percent
  EXPECT_NE(rtx3080.notes[0].find("0.912 TB/s"), std::string::npos) << rtx3080.notes[0];
  EXPECT_NE(rtx3080.notes[0].find("RTX 3080 0.76 TB/s"), std::string::npos) << rtx3080.notes[0];
  // An H100 PCIe's attributes given an H100 SXM's name: SMs and DRAM both disagree.
  GpuFigures renamed = gpu_figures(device("NVIDIA H100 80GB HBM3", 1593000, 5120, 114), &builtin());
  EXPECT_EQ(renamed.sm_count->value, 114);
  EXPECT_EQ(renamed.notes.size(), 2u);
  // Within a few percent the datasheet figure stays, as the verdicts have always said it.
  GpuFigures h200 = gpu_figures(device("NVIDIA H200", 3201000, 6016, 132), &builtin());
  EXPECT_EQ(h200.dram_peak->value, 4.8e12);
  EXPECT_EQ(h200.dram_peak->source, "hardware database: H200 SXM 4.8 TB/s (S10, H200-measured)");
  EXPECT_TRUE(h200.notes.empty());
  // No entry: the report's, without a note; no attributes: the entry's; neither: none.
  GpuFigures unknown =
      gpu_figures(device("NVIDIA GeForce GTX 1660 Ti", 6001000, 192, 24), &builtin());
  EXPECT_EQ(unknown.entry, nullptr);
  EXPECT_NEAR(unknown.dram_peak->value, 288.0e9, 0.1e9);
  EXPECT_TRUE(unknown.notes.empty());
  GpuFigures bare = gpu_figures(device("NVIDIA GH200 480GB", 0, 0, 0), &builtin());
  EXPECT_EQ(bare.dram_peak->value, 4.0e12);
  EXPECT_FALSE(gpu_figures(device("NVIDIA Z100", 0, 0, 0), &builtin()).dram_peak);
  EXPECT_FALSE(gpu_figures(device("NVIDIA H200", 0, 0, 0), nullptr).dram_peak);
}

}  // namespace
}  // namespace kprof::analysis
