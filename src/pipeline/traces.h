// The pipelines over profiler traces: `kprof rank` (which kernels, operators, modules and stages
// carry the GPU time; per step; over several ranks' traces) and `kprof budget` (per step, whether
// the GPU is kept busy or waits on the host; over several ranks). Each trace is streamed once into
// the timeline analyses; several ranks' traces are read one after the other, what is kept between
// them being each rank's finished ranking or budget.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "pipeline/answer.h"

namespace kprof::pipeline {

struct RankOptions {
  std::vector<std::string> paths;  // several: one trace per tensor-parallel rank
  std::size_t top = 20;
  bool json = false;
  bool text_too = false;  // with json: the text answer too (Answer::text), from one run
  bool raw_names = false;
  std::size_t name_width = 70;
  std::string stages_path;
  bool per_step = false;
  std::string step_regex;
  std::string by = "kernel";  // kernel, op, module, range
  // With --by op|module: the trace of the graphs' capture, through which a graph replay's
  // kernels take the operators that launched them at capture time.
  std::string graph_capture;
};
// UsageError for options that do not combine; InputError for a trace that cannot be read or has
// no GPU events.
Answer rank(const RankOptions& options, const std::vector<std::string>& argv);

struct BudgetOptions {
  std::vector<std::string> paths;  // several: one trace per tensor-parallel rank
  std::string step_regex;
  double host_bound_below_pct = 60;
  double kernel_bound_from_pct = 90;
  bool json = false;
  bool text_too = false;  // with json: the text answer too (Answer::text), from one run
};
// Also InputError (exit 4) for a rank's trace whose step count differs from the first's.
Answer budget(const BudgetOptions& options, const std::vector<std::string>& argv);

// kprof rank's table for one trace and the reader's warnings: what `kprof trace` and
// `k8s sister --trace` print for each trace they wrote.
struct RankText {
  std::string table;
  std::string warnings;
};
RankText rank_trace_text(const std::string& path, const std::vector<std::string>& argv,
                         std::size_t top, std::size_t name_width);

}  // namespace kprof::pipeline
