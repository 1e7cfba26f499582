// How subcommands plug into the CLI: each one is a file defining one `define_*` function, listed
// once in cli.cpp. A command writes its whole output into Output; main prints it only when the
// command succeeded, so a failure never leaves partial output behind.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "common/error.h"

namespace kprof::cli {

struct Output {
  std::vector<std::string> argv;  // for JSON envelopes
  std::string stdout_text;
  std::string stderr_text;  // notes and warnings, printed even on success
};

using Runner = std::function<ExitCode(Output&)>;

// Adds the subcommand to parent; sets runner when the subcommand is chosen.
using DefineCommand = void (*)(CLI::App& parent, Runner& runner);

// Thrown by commands for bad option values that CLI11 cannot check (e.g. an invalid regex).
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Thrown when inputs were valid but the filters selected nothing.
struct NothingSelected : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Thrown when a tool kprof needs (ncu, kubectl) is missing or cannot work here.
struct NotReady : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Thrown when a Kubernetes call failed (not found, forbidden, a feature disabled): exit 10.
struct K8sFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void define_analyze(CLI::App& parent, Runner& runner);
void define_inspect(CLI::App& parent, Runner& runner);
void define_gpus(CLI::App& parent, Runner& runner);
void define_rank(CLI::App& parent, Runner& runner);
void define_budget(CLI::App& parent, Runner& runner);
void define_report(CLI::App& parent, Runner& runner);
void define_diff(CLI::App& parent, Runner& runner);
void define_db(CLI::App& parent, Runner& runner);
void define_explain(CLI::App& parent, Runner& runner);
void define_capture(CLI::App& parent, Runner& runner);
void define_trace(CLI::App& parent, Runner& runner);
void define_doctor(CLI::App& parent, Runner& runner);
void define_k8s(CLI::App& parent, Runner& runner);
void define_selftest(CLI::App& parent, Runner& runner);
void define_calibrate(CLI::App& parent, Runner& runner);
void define_load(CLI::App& parent, Runner& runner);
// Hidden: `completion bash|zsh` and `manpage`, generated from the commands defined before it.
void define_completion(CLI::App& parent, Runner& runner);

}  // namespace kprof::cli
