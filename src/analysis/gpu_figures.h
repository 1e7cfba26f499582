// The figures of the GPU a report ran on that the analyses use, for one device: its database entry
// (hardware::GpuDatabase::find_for_device) and, where the report's own device attributes
// (model::device_figures) disagree with that entry by more than a few percent, the report's,
// saying so. The attributes describe the part that ran; a datasheet, the product name it shares
// with other parts (issue 43: "NVIDIA GH200 480GB" was taken for an H200 SXM, 4.8 TB/s instead of
// 4.0, and an A100 40 GB for the 80 GB part).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hardware/gpu_specs.h"
#include "model/report.h"

namespace kprof::analysis {

// Beyond this relative difference the report's figure replaces the database's. The H200's
// attributes give 4.81 TB/s against its datasheet's 4.8 (0.3 %); every public report checked is
// within 0.3 % of its own datasheet, while the parts a name confuses differ by 20 % or more
// (A100 40 GB 1.555 TB/s against 80 GB 2.039; RTX 3080 10 GB 760 GB/s against 12 GB 912).
inline constexpr double kFigureDisagreement = 0.05;

struct ChosenFigure {
  double value = 0;
  std::string source;  // where it came from, for the output ("report device attributes: …")
};

struct GpuFigures {
  const hardware::GpuSpec* entry = nullptr;  // the database's entry for the device name, or null
  std::optional<ChosenFigure> dram_peak;     // bytes/s
  std::optional<ChosenFigure> sm_count;
  // One line per figure on which the report and the entry disagree (more than
  // kFigureDisagreement), naming both and saying that the report's is used.
  std::vector<std::string> notes;
};

// Contract: with `database` null only the report's figures are used. A figure is the entry's
// when the report does not record it or agrees with it within kFigureDisagreement (the entry's
// `source` then is "hardware database: ENTRY X TB/s (SOURCES)", as the verdicts have always
// said); the report's when the entry lacks it, there is no entry, or the two disagree (then a
// note). nullopt when neither has it.
GpuFigures gpu_figures(const model::Device& device, const hardware::GpuDatabase* database);

}  // namespace kprof::analysis
