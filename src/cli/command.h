// How subcommands plug into the CLI: each one is a file defining one `define_*` function, listed
// once in cli.cpp. A command writes its whole output into Output; main prints it only when the
// command succeeded, so a failure never leaves partial output behind.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "common/error.h"
#include "pipeline/answer.h"

namespace kprof::cli {

struct Output {
  std::vector<std::string> argv;  // for JSON envelopes
  std::string stdout_text;
  std::string stderr_text;  // notes and warnings, printed even on success
};

using Runner = std::function<ExitCode(Output&)>;

// A pipeline's answer into the command's output; its exit code returned.
inline ExitCode answer(pipeline::Answer answer, Output& output) {
  output.stdout_text += std::move(answer.out);
  output.stderr_text += std::move(answer.notes);
  return answer.code;
}

// Adds the subcommand to parent; sets runner when the subcommand is chosen.
using DefineCommand = void (*)(CLI::App& parent, Runner& runner);

// The failures every verb reports the same way (common/error.h), thrown by the libraries'
// pipelines and by the commands alike.
using kprof::K8sFailed;
using kprof::NothingSelected;
using kprof::NotReady;
using kprof::UsageError;

void define_analyze(CLI::App& parent, Runner& runner);
void define_inspect(CLI::App& parent, Runner& runner);
void define_gpus(CLI::App& parent, Runner& runner);
void define_rank(CLI::App& parent, Runner& runner);
void define_budget(CLI::App& parent, Runner& runner);
void define_report(CLI::App& parent, Runner& runner);
void define_source(CLI::App& parent, Runner& runner);
void define_diff(CLI::App& parent, Runner& runner);
void define_db(CLI::App& parent, Runner& runner);
void define_explain(CLI::App& parent, Runner& runner);
void define_capture(CLI::App& parent, Runner& runner);
void define_plan(CLI::App& parent, Runner& runner);
void define_trace(CLI::App& parent, Runner& runner);
void define_doctor(CLI::App& parent, Runner& runner);
void define_k8s(CLI::App& parent, Runner& runner);
void define_selftest(CLI::App& parent, Runner& runner);
void define_calibrate(CLI::App& parent, Runner& runner);
void define_load(CLI::App& parent, Runner& runner);
void define_mcp(CLI::App& parent, Runner& runner);
// Hidden: `completion bash|zsh` and `manpage`, generated from the commands defined before it.
void define_completion(CLI::App& parent, Runner& runner);

}  // namespace kprof::cli
