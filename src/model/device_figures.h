// What a report's own device attributes say of its GPU (device__attribute_*, as ncu recorded them
// with every result: `kprof inspect REPORT -m device__attribute`), in base units. They describe
// the very part that ran, where a datasheet describes a product name that several parts share
// (an RTX 3080 of 10 or 12 GB, an H100 NVL of 94 GB on a 6016-bit bus).
#pragma once

#include <optional>

#include "model/report.h"

namespace kprof::model {

struct DeviceFigures {
  std::optional<double> sm_count;               // device__attribute_multiprocessor_count
  std::optional<double> sm_clock_hz;            // device__attribute_clock_rate (kHz) x 1e3
  std::optional<double> memory_clock_hz;        // device__attribute_memory_clock_rate (kHz) x 1e3
  std::optional<double> memory_bus_width_bits;  // device__attribute_global_memory_bus_width
  // memory clock x bus width x 2 (double data rate) / 8: the DRAM peak CUDA's own deviceQuery
  // sample prints. On the public reports checked it is the datasheet figure to 0.3 %: 616 GB/s
  // for an RTX 2080 Ti (7000 MHz x 352 bits), 448 GB/s for an RTX 3070, 600 GB/s for an A10G,
  // 696 GB/s for an A40, 898 GB/s for a V100-SXM2 (900), and 4.81 TB/s for the H200 (6016 bits x
  // 3201 MHz: ncu's own dram__bytes.sum.peak_sustained x dram__cycles_elapsed, 1504 B/cycle x
  // 3.2 GHz, agrees).
  std::optional<double> dram_peak_bytes_per_second;
  std::optional<double> l2_bytes;      // device__attribute_l2_cache_size
  std::optional<double> memory_bytes;  // device__attribute_total_memory
};

// Each figure the attributes allow; nullopt where the report did not record (or recorded 0 for)
// what it derives from: a details-page CSV records no device attributes at all.
DeviceFigures device_figures(const Device& device);

}  // namespace kprof::model
