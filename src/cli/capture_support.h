// What `kprof capture` and `kprof k8s` share: progress notes on stderr, command lines shown
// the way a shell would need them, diagnoses as text, --env parsing, refusals as usage errors.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "capture/attach_targets.h"
#include "capture/bundle_manifest.h"  // diagnoses_json
#include "capture/ncu_command.h"
#include "capture/ncu_diagnosis.h"
#include "capture/warm_capture.h"
#include "common/text.h"  // quoted_command, shared with kprof k8s's kubectl messages

namespace kprof::cli {

using capture::diagnoses_json;  // explain's JSON lists diagnoses as the bundle manifest does

// "kprof: TEXT" on stderr at once (progress must not wait for the command to end).
void note(const std::string& text);
// TEXT on stderr (stdout) at once, as it is: for what a long operation prints while it runs.
// Both redacted (common/redact.h), as everything kprof prints.
void print_now_to_stderr(const std::string& text);
void print_now_to_stdout(const std::string& text);
// build_ncu_command, a refused capture (std::invalid_argument) turned into a usage error.
capture::NcuCommand build_or_refuse(const capture::CaptureSpec& spec);

// --env NAME=VALUE entries (capture, trace) as pairs; a malformed one is a usage error.
std::vector<std::pair<std::string, std::string>> parse_env(const std::vector<std::string>& list);

// The warm sequence's options that `kprof capture --attach … --load-url` and `kprof k8s sister`
// share (where the server is and how readiness is told differ: each command has its own).
struct WarmOptions {
  std::string attach_process;
  double attach_timeout_s = 120;
  std::string ready_log_line;
  double warmup_timeout_s = 600;
  int warmup_requests = 16, load_concurrency = 1, prompt_len = 128, output_len = 64;
  std::string load_api = "completions", model;
};
// Defines --attach-process, --attach-timeout, --ready-log-line, --warmup-requests,
// --warmup-timeout, --load-concurrency, --prompt-len, --output-len, --load-api and --model;
// log_line_help says where --ready-log-line looks.
void add_warm_options(CLI::App* command, WarmOptions& options, const std::string& log_line_help);
// Usage errors for values CLI11 does not check; the --attach-process selector when given.
std::optional<capture::ProcessSelector> check_warm_options(const WarmOptions& options);
// The options into the sequence's spec (process, timeouts, warm-up, the load but its URL; the
// API key from KPROF_API_KEY).
void apply_warm_options(const WarmOptions& options, capture::WarmCaptureSpec& spec);

// KPROF_API_KEY, or "": the key the request driver sends ("Authorization: Bearer KEY") to a
// server started with --api-key. An environment variable, not an option: the command line shows
// in ps, shell history and the bundle's manifest. A usage error when it holds control characters.
std::string api_key_from_environment();

}  // namespace kprof::cli
