// kprof rank's table for one trace, shared with kprof trace (which ranks what it recorded).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "analysis/stages.h"
#include "render/trace_render.h"
#include "timeline/kernel_ranking.h"

namespace kprof::cli {

struct RankText {
  std::string table;     // what `kprof rank TRACE --top N` prints
  std::string warnings;  // the reader's warnings (skipped events), for stderr
};

// One trace read and ranked with a stage table; InputError when it is unreadable or has no GPU
// events (kprof rank of one trace, and of each rank's trace).
struct RankedTrace {
  render::TraceSource source;
  timeline::Ranking ranking;
};
RankedTrace rank_trace(const std::string& path, const std::vector<std::string>& argv,
                       const analysis::StageTable& stages, bool raw_names);

// Throws InputError like kprof rank (unreadable trace, no GPU events).
RankText rank_trace_text(const std::string& path, const std::vector<std::string>& argv, size_t top,
                         size_t name_width);

}  // namespace kprof::cli
