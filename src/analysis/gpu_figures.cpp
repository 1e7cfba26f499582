#include "analysis/gpu_figures.h"

#include <fmt/format.h>

#include <cmath>

#include "common/text.h"
#include "model/device_figures.h"

namespace kprof::analysis {
namespace {

std::string entry_source(const hardware::GpuSpec& entry, const char* group) {
  auto it = entry.sources.find(group);
  return it == entry.sources.end() ? "" : it->second;
}

bool disagree(double report, double table) {
  return std::abs(report - table) > kFigureDisagreement * table;
}

}  // namespace

GpuFigures gpu_figures(const model::Device& device, const hardware::GpuDatabase* database) {
  GpuFigures figures;
  figures.entry = database ? database->find_for_device(device.name) : nullptr;
  const hardware::GpuSpec* entry = figures.entry;
  const model::DeviceFigures report = model::device_figures(device);

  std::optional<ChosenFigure> table_dram;
  if (entry && entry->memory_bandwidth_tbs) {
    table_dram =
        ChosenFigure{*entry->memory_bandwidth_tbs * 1e12,
                     fmt::format("hardware database: {} {} TB/s ({})", entry->name,
                                 *entry->memory_bandwidth_tbs, entry_source(*entry, "memory"))};
  }
  if (report.dram_peak_bytes_per_second) {
    const double peak = *report.dram_peak_bytes_per_second;
    std::string how =
        fmt::format("memory clock {} GHz x {}-bit bus x 2 / 8 = {} TB/s",
                    format_number(*report.memory_clock_hz / 1e9),
                    format_number(*report.memory_bus_width_bits), format_number(peak / 1e12));
    if (!table_dram) {
      figures.dram_peak = ChosenFigure{peak, "report device attributes: " + how};
    } else if (disagree(peak, table_dram->value)) {
      figures.dram_peak = ChosenFigure{
          peak, fmt::format("report device attributes: {} (the hardware database's {} says {} "
                            "TB/s)",
                            how, entry->name, *entry->memory_bandwidth_tbs)};
      figures.notes.push_back(fmt::format(
          "DRAM peak: the report's device attributes give {} TB/s ({}), the hardware database's "
          "{} {} TB/s ({}): the report's is used",
          format_number(peak / 1e12), how, entry->name, *entry->memory_bandwidth_tbs,
          entry_source(*entry, "memory")));
    }
  }
  if (!figures.dram_peak) figures.dram_peak = table_dram;

  if (report.sm_count) {
    if (!entry || !entry->sms) {
      figures.sm_count =
          ChosenFigure{*report.sm_count, "report device attributes: multiprocessor_count"};
    } else if (disagree(*report.sm_count, *entry->sms)) {
      figures.sm_count = ChosenFigure{
          *report.sm_count, fmt::format("report device attributes: multiprocessor_count (the "
                                        "hardware database's {} says {})",
                                        entry->name, format_number(*entry->sms))};
      figures.notes.push_back(fmt::format(
          "SMs: the report's device attributes give {}, the hardware database's {} {}: the "
          "report's is used",
          format_number(*report.sm_count), entry->name, format_number(*entry->sms)));
    }
  }
  if (!figures.sm_count && entry && entry->sms) {
    figures.sm_count = ChosenFigure{*entry->sms, "hardware database: " + entry->name};
  }
  return figures;
}

}  // namespace kprof::analysis
