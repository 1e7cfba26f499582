// What `kprof capture` and `kprof k8s` share: progress notes on stderr, command lines shown
// the way a shell would need them, diagnoses as text, --env parsing, refusals as usage errors.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "capture/attach_targets.h"
#include "capture/bundle_manifest.h"  // diagnoses_json
#include "capture/latency_guard.h"
#include "capture/ncu_command.h"
#include "capture/ncu_diagnosis.h"
#include "capture/verbs.h"
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

// The plan's inputs that `kprof plan`, `capture --plan` and `k8s plan` share (issue 41): the
// trace, its steps, the limits and the ncu version the passes are for.
struct PlanCliOptions {
  std::string trace, step;
  std::string liveness_probe, readiness_probe;  // PERIOD:FAILURE_THRESHOLD
  std::optional<double> slo_p99_ms, budget_s, device_gb, resident_gb, memory_fraction;
  std::string ncu_version;
};
// Defines --trace, --step, --slo-p99-ms, --budget, --device-memory-gb, --resident-gb,
// --gpu-memory-utilization, --ncu-version; with probes, --liveness-probe and --readiness-probe
// (k8s plan reads them from the Deployment instead).
void add_plan_options(CLI::App* command, PlanCliOptions& options, bool probes);
// The options into a plan request over `spec` (its ncu version set from --ncu-version); usage
// errors for values CLI11 does not check.
capture::PlanOptions to_plan_options(const PlanCliOptions& options, capture::CaptureSpec spec,
                                     bool json);
// The latency guard's options (issue 41), shared by `capture` and `k8s sister`: armed when
// --guard-p99-ms or --guard-factor is given; with a serving URL but no limit, the bill alone.
struct GuardCliOptions {
  std::string url;
  std::optional<double> p99_ms, factor;
  double error_rate = 0.5, interval_s = 1;
  int baseline = 5;
};
// Defines --guard-url, --guard-p99-ms, --guard-factor, --guard-error-rate, --guard-interval and
// --guard-baseline; load_url_option names the option whose URL the guard probes by default.
void add_guard_options(CLI::App* command, GuardCliOptions& options,
                       const std::string& load_url_option);
// The options into the guard's spec: unarmed (the bill alone) when a URL is known but no limit is
// given; nullopt when no URL is known (no --guard-url, no load URL). Usage errors for a limit
// without a URL to probe (--guard-url, or the warm sequence's load URL when has_load_url) and for
// values out of range. `load` is the shape of the operator's requests; the spec's URL is
// --guard-url, or empty for the load's.
std::optional<capture::GuardSpec> guard_spec(const GuardCliOptions& options, bool has_load_url,
                                             const load::LoadSpec& load);

// The model's words for --help footers: the formula and where its figures come from.
extern const char* const kPlanModelHelp;

}  // namespace kprof::cli
