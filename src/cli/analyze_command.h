// The options kprof analyze and kprof report share (reports, filters, thresholds, outputs,
// tables), parsed into the verdict pipeline's request (pipeline/analyze.h).
#pragma once

#include <CLI/CLI.hpp>

#include "pipeline/analyze.h"

namespace kprof::cli {

void add_verdict_options(CLI::App& command, pipeline::AnalyzeOptions& options);

}  // namespace kprof::cli
