// `kprof diff BEFORE AFTER` on two traces: per kernel, per stage and per step, as a table and as
// JSON (kprof.trace-diff/1, docs/kprof.trace-diff.schema.json). Names are shown literally.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "timeline/trace_diff.h"

namespace kprof::render {

std::string trace_diff_text(const timeline::TraceDiff& diff, const std::string& before,
                            const std::string& after, const timeline::TraceDiffOptions& options,
                            size_t top, size_t name_width);
nlohmann::json trace_diff_json(const timeline::TraceDiff& diff, const std::string& before,
                               const std::string& after, const timeline::TraceDiffOptions& options,
                               const std::vector<std::string>& argv);

}  // namespace kprof::render
