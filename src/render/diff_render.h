// `kprof diff`: two captures' kernels compared, as a table and as JSON (kprof.diff/1,
// docs/kprof.diff.schema.json).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/capture_diff.h"
#include "common/error.h"

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
// The one line on standard error of a diff whose compared kernels cover too little of a side's
// GPU time: both coverages, the unmatched kernels of each side with their shares, and a --pair
// to try. code: the command's exit — 13 is said, 0 (--no-fail) makes the line a warning, 6 (a
// regression, said on its own line) neither.
std::string coverage_note(const analysis::CaptureDiff& diff, const std::string& baseline,
                          const std::string& candidate, ExitCode code);

}  // namespace kprof::render
