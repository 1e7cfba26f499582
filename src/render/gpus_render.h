// `kprof gpus`: the hardware database as a table (all GPUs, or one with its sources and
// measured ceilings) and as JSON (kprof.gpus/1, docs/kprof.gpus-listing.schema.json).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hardware/gpu_specs.h"

namespace kprof::render {

std::string gpus_text(const hardware::GpuDatabase& db,
                      const std::vector<const hardware::GpuSpec*>& shown);
nlohmann::json gpus_json(const hardware::GpuDatabase& db,
                         const std::vector<const hardware::GpuSpec*>& shown,
                         const std::vector<std::string>& argv);

}  // namespace kprof::render
