// `kprof diff BEFORE AFTER` on two traces: per kernel, per stage and per step, as a table and as
// JSON (kprof.trace-diff/1, docs/kprof.trace-diff.schema.json). Names are shown literally.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "timeline/prediction_check.h"
#include "timeline/trace_diff.h"

namespace kprof::render {

std::string trace_diff_text(const timeline::TraceDiff& diff, const std::string& before,
                            const std::string& after, const timeline::TraceDiffOptions& options,
                            size_t top, size_t name_width);
nlohmann::json trace_diff_json(const timeline::TraceDiff& diff, const std::string& before,
                               const std::string& after, const timeline::TraceDiffOptions& options,
                               const std::vector<std::string>& argv);

// `kprof diff BEFORE AFTER --predicted REPORT.json`: what the fix list predicted per kernel group
// and per step against what the traces show (at most `top` groups; 0: all).
std::string prediction_text(const timeline::PredictionCheck& check,
                            const timeline::Prediction& prediction, size_t top, size_t name_width);
nlohmann::json prediction_json(const timeline::PredictionCheck& check,
                               const timeline::Prediction& prediction);

}  // namespace kprof::render
