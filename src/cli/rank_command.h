// kprof rank's table for one trace, shared with kprof trace (which ranks what it recorded).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace kprof::cli {

struct RankText {
  std::string table;     // what `kprof rank TRACE --top N` prints
  std::string warnings;  // the reader's warnings (skipped events), for stderr
};

// Throws InputError like kprof rank (unreadable trace, no GPU events).
RankText rank_trace_text(const std::string& path, const std::vector<std::string>& argv, size_t top,
                         size_t name_width);

}  // namespace kprof::cli
