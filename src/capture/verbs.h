// `kprof explain` and `kprof doctor` as pipelines: a request struct in, a pipeline::Answer out
// (what is printed, the notes for stderr, the exit code), so the CLI and the MCP server (mcp/)
// call the same code and print the same numbers.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "capture/capture_plan.h"
#include "capture/doctor.h"
#include "capture/ncu_command.h"
#include "pipeline/answer.h"

namespace kprof::capture {

struct ExplainOptions {
  std::string log_path;  // ncu's saved console output
  int exit_code = 0;     // ncu's exit status
  std::vector<std::string> ncu_argv;
  bool json = false;
};

// out: the run's summary, or kprof.explain/1 with its diagnoses; notes: the diagnoses as text
// (in every mode, failed or not, as capture prints them); code kCaptureFailed (7) when the run
// failed. InputError when the log cannot be read.
pipeline::Answer explain(const ExplainOptions& options, const std::vector<std::string>& argv);

struct DoctorOptions {
  std::string ncu;   // ncu to check ("": $KPROF_NCU, PATH, /usr/local/cuda/bin/ncu)
  std::string root;  // read /proc, /sys, /dev and the CUDA install under this folder
  // A running process: the route ncu can reach it by (attach_route.h), as one more check.
  std::optional<int> attach_process;
  bool json = false;
};

// Gate 0 on this machine: runs `ncu --version` and `nvidia-smi --query-gpu` (queries only, no
// GPU work). code kNotReady (9) when a check failed. With attach_process, an "attach route" check
// says which route that process allows with this ncu (a warning when only the sister does).
Check attach_route_check(int pid, const std::string& ncu_version_line,
                         const std::string& proc_root);
pipeline::Answer doctor(const DoctorOptions& options, const std::vector<std::string>& argv);

struct PlanOptions {
  CaptureSpec capture;  // preset, sections, metrics, filter, name base, skip, count, safety
  std::string trace, step_regex;
  PlanLimits limits;
  // --gpu-memory-utilization: with limits.device_gb, the resident memory (when --resident-gb
  // does not say it).
  std::optional<double> memory_fraction;
  bool json = false;
};

// `kprof plan` and `capture --plan`: the plan of a capture (capture_plan.h), nothing run. code
// kPlanOverLimit (14) when the capture asked for is over a limit and --budget did not choose
// one that fits (the answer proposes it); kNothingSelected (5) when the filter matches no
// launch of the trace. UsageError for limits that do not combine, InputError for the trace.
pipeline::Answer plan(const PlanOptions& options, const std::vector<std::string>& argv);
// The plan alone, for capture --budget and the bundle (the same checks and errors).
CapturePlan make_plan(const PlanOptions& options, const std::vector<std::string>& argv);

}  // namespace kprof::capture
