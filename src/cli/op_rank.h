// kprof rank --by op|module: GPU time per PyTorch operator or nn.Module path.
#pragma once

#include <cstddef>
#include <string>

#include "cli/command.h"

namespace kprof::cli {

struct OpRankOptions {
  std::string path;
  std::string by;  // "op" or "module"
  bool json = false;
  size_t top = 20;
  size_t name_width = 70;
};

// Throws InputError like kprof rank (unreadable trace, no GPU events).
ExitCode run_rank_by_op(const OpRankOptions& options, Output& output);

}  // namespace kprof::cli
