// What a capture plan needs from a trace of the program it will capture (kprof's tracer or the
// PyTorch profiler): the launches a kernel filter matches, per step and in the order the program
// made them, with their durations. The steps are `kprof budget`'s (the engine's step markers, a
// --step regex, a repeated annotation, or the whole trace as one step).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kprof::pipeline {

struct PlanTraceKernel {
  std::string name;           // normalised (return type and parameters dropped)
  std::string function_name;  // ncu's "function" name base: what a regex matches by default
  std::uint64_t launches = 0;
  std::uint64_t most_in_a_step = 0;
  double launches_per_step = 0;
  double mean_us = 0, max_us = 0;
};

// One matched launch, in the order the program launched them within its step.
struct PlanTraceLaunch {
  std::size_t kernel = 0;  // index into PlanTrace::kernels
  std::size_t step = 0;
  double duration_us = 0;
};

struct PlanTrace {
  std::string path;
  std::string step_selector;  // how the steps were found (kprof budget's words)
  std::size_t steps = 0;
  double mean_step_wall_us = 0;
  std::uint64_t kernel_launches = 0;       // every kernel launch in the steps
  std::vector<PlanTraceKernel> kernels;    // those the filter matched, by launches then name
  std::vector<PlanTraceLaunch> launches;   // matched launches, step by step
  std::vector<std::string> closest_names;  // when nothing matched: the most launched names
  std::string warnings;                    // the reader's "kprof: warning: …" lines
};

// name_base: ncu's --kernel-name-base ("" or "function": the function name; "demangled": the
// whole demangled name; "mangled": the trace's own name, which is demangled already, so the same
// as demangled). An empty regex matches every kernel. UsageError for a regex or --step that does
// not compile; InputError for a trace that cannot be read or holds no GPU work in its steps.
PlanTrace read_plan_trace(const std::string& path, const std::vector<std::string>& argv,
                          const std::string& kernel_regex, const std::string& name_base,
                          const std::string& step_regex);

}  // namespace kprof::pipeline
