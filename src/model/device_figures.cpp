#include "model/device_figures.h"

namespace kprof::model {

DeviceFigures device_figures(const Device& device) {
  auto positive = [&](const char* name, double scale) -> std::optional<double> {
    auto value = device.number(name);
    if (!value || !(*value > 0)) return std::nullopt;  // absent, 0 or NaN: not a figure
    return *value * scale;
  };
  DeviceFigures figures;
  figures.sm_count = positive("device__attribute_multiprocessor_count", 1);
  figures.sm_clock_hz = positive("device__attribute_clock_rate", 1e3);
  figures.memory_clock_hz = positive("device__attribute_memory_clock_rate", 1e3);
  figures.memory_bus_width_bits = positive("device__attribute_global_memory_bus_width", 1);
  if (figures.memory_clock_hz && figures.memory_bus_width_bits) {
    figures.dram_peak_bytes_per_second =
        *figures.memory_clock_hz * *figures.memory_bus_width_bits * 2 / 8;
  }
  figures.l2_bytes = positive("device__attribute_l2_cache_size", 1);
  figures.memory_bytes = positive("device__attribute_total_memory", 1);
  return figures;
}

}  // namespace kprof::model
