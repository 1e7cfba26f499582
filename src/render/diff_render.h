// `kprof diff`: two captures' kernels compared, as a table and as JSON (kprof.diff/1,
// docs/kprof.diff.schema.json).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/capture_diff.h"

namespace kprof::render {

// baseline and candidate: how the user named the two sides (paths, or run ids).
std::string diff_text(const analysis::CaptureDiff& diff, const std::string& baseline,
                      const std::string& candidate, const analysis::DiffOptions& options,
                      size_t name_width);
nlohmann::json diff_json(const analysis::CaptureDiff& diff, const std::string& baseline,
                         const std::string& candidate, const analysis::DiffOptions& options,
                         const std::vector<std::string>& argv);
// Why a diff that compared nothing must not pass: what each side holds (a wrong file or a
// renamed kernel shows at once).
std::string nothing_in_common(const analysis::CaptureDiff& diff, const std::string& baseline,
                              const std::string& candidate);

}  // namespace kprof::render
