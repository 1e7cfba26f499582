// `kprof explain` and `kprof doctor` as pipelines: a request struct in, a pipeline::Answer out
// (what is printed, the notes for stderr, the exit code), so the CLI and the MCP server (mcp/)
// call the same code and print the same numbers.
#pragma once

#include <string>
#include <vector>

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
  bool json = false;
};

// Gate 0 on this machine: runs `ncu --version` and `nvidia-smi --query-gpu` (queries only, no
// GPU work). code kNotReady (9) when a check failed.
pipeline::Answer doctor(const DoctorOptions& options, const std::vector<std::string>& argv);

}  // namespace kprof::capture
