#include "cli/capture_support.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <cstdio>
#include <cstdlib>

#include "capture/capture_render.h"
#include "cli/command.h"
#include "common/redact.h"

namespace kprof::cli {

std::vector<std::pair<std::string, std::string>> parse_env(const std::vector<std::string>& list) {
  static const RE2 kName("[A-Za-z_][A-Za-z0-9_]*");
  std::vector<std::pair<std::string, std::string>> env;
  for (const std::string& entry : list) {
    size_t eq = entry.find('=');
    std::string name = entry.substr(0, eq);
    if (eq == std::string::npos || !RE2::FullMatch(name, kName)) {
      throw UsageError(fmt::format("--env \"{}\": expected NAME=VALUE", entry));
    }
    env.emplace_back(name, entry.substr(eq + 1));
  }
  return env;
}

void note(const std::string& text) {
  std::fprintf(stderr, "kprof: %s\n", redact_secrets(text).c_str());
  std::fflush(stderr);
}

void print_now_to_stderr(const std::string& text) {
  std::fputs(redact_secrets(text).c_str(), stderr);
  std::fflush(stderr);
}

void print_now_to_stdout(const std::string& text) {
  std::fputs(redact_secrets(text).c_str(), stdout);
  std::fflush(stdout);
}

capture::NcuCommand build_or_refuse(const capture::CaptureSpec& spec) {
  try {
    return capture::build_ncu_command(spec);
  } catch (const std::invalid_argument& error) {
    throw UsageError(error.what());
  }
}

void add_warm_options(CLI::App* command, WarmOptions& options, const std::string& log_line_help) {
  command->add_option("--attach-process", options.attach_process,
                      "The process of a tree to capture, NAME (part of its command line or a "
                      "thread name, e.g. VLLM::EngineCore) or PID; the others are held "
                      "unprofiled, and new ones followed as they appear");
  command->add_option("--attach-timeout", options.attach_timeout_s,
                      "Seconds to wait for the process to wait for a profiler (default 120)");
  command->add_option("--ready-log-line", options.ready_log_line, log_line_help);
  command->add_option("--warmup-requests", options.warmup_requests,
                      "Requests that must complete before capturing (default 16)");
  command->add_option("--warmup-timeout", options.warmup_timeout_s, "Seconds (default 600)");
  command->add_option("--load-concurrency", options.load_concurrency,
                      "Requests kept in flight during each capture (default 1: kernels "
                      "isolated; 64-128 for the serving mix)");
  command->add_option("--prompt-len", options.prompt_len, "Prompt length in tokens (default 128)");
  command->add_option("--output-len", options.output_len, "Output tokens per request (default 64)");
  command->add_option("--load-api", options.load_api, "completions (default) or chat")
      ->check(CLI::IsMember({"completions", "chat"}));
  command->add_option("--model", options.model,
                      "The model name requests carry (default: the first of /v1/models)");
}

std::optional<capture::ProcessSelector> check_warm_options(const WarmOptions& options) {
  if (options.warmup_requests < 0) throw UsageError("--warmup-requests must be 0 or more");
  if (options.load_concurrency < 1) throw UsageError("--load-concurrency must be at least 1");
  if (options.prompt_len < 1 || options.output_len < 1)
    throw UsageError("--prompt-len and --output-len must be at least 1");
  for (double seconds : {options.warmup_timeout_s, options.attach_timeout_s}) {
    if (!(seconds > 0 && seconds <= 1e6))
      throw UsageError("--warmup-timeout and --attach-timeout are seconds between 0 and 1000000");
  }
  if (!options.ready_log_line.empty()) {
    RE2 check(options.ready_log_line, RE2::Quiet);
    if (!check.ok())
      throw UsageError(
          fmt::format("--ready-log-line \"{}\": {}", options.ready_log_line, check.error()));
  }
  if (options.attach_process.empty()) return std::nullopt;
  try {
    return capture::parse_process_selector(options.attach_process);
  } catch (const std::invalid_argument& error) {
    throw UsageError(error.what());
  }
}

std::string api_key_from_environment() {
  const char* key = std::getenv("KPROF_API_KEY");
  if (!key) return "";
  std::string text = key;
  for (unsigned char c : text) {
    if (c < 0x20 || c == 0x7f)
      throw UsageError("KPROF_API_KEY holds a control character (a header cannot carry it)");
  }
  return text;
}

void apply_warm_options(const WarmOptions& options, capture::WarmCaptureSpec& spec) {
  spec.process = check_warm_options(options);
  spec.load.api_key = api_key_from_environment();
  spec.attach_timeout_s = options.attach_timeout_s;
  spec.ready_log_regex = options.ready_log_line;
  spec.load.model = options.model;
  spec.load.api = options.load_api;
  spec.load.concurrency = options.load_concurrency;
  spec.load.prompt_tokens = options.prompt_len;
  spec.load.output_tokens = options.output_len;
  spec.warmup_requests = options.warmup_requests;
  spec.warmup_timeout_s = options.warmup_timeout_s;
}

namespace {

// "10:3" → a probe of period 10 s, failure threshold 3.
capture::ProbeBudget parse_probe(const std::string& option, const std::string& probe,
                                 const std::string& text) {
  double period = 0, failures = 0;
  size_t colon = text.find(':');
  try {
    size_t used = 0;
    if (colon == std::string::npos) throw std::invalid_argument(text);
    period = std::stod(text.substr(0, colon), &used);
    if (used != colon) throw std::invalid_argument(text);
    failures = std::stod(text.substr(colon + 1), &used);
    if (used != text.size() - colon - 1) throw std::invalid_argument(text);
  } catch (const std::exception&) {
    throw UsageError(
        fmt::format("{} \"{}\": expected PERIOD:FAILURE_THRESHOLD (10:3)", option, text));
  }
  if (!(period > 0 && period <= 1e6 && failures >= 1 && failures <= 1e6))
    throw UsageError(
        fmt::format("{} \"{}\": a period above 0 s and a threshold of at least 1", option, text));
  capture::ProbeBudget budget;
  budget.probe = probe;
  budget.period_s = period;
  budget.failure_threshold = failures;
  budget.from = option;
  return budget;
}

void check_positive(const std::optional<double>& value, const char* option, double most) {
  if (value && !(*value > 0 && *value <= most))
    throw UsageError(
        fmt::format("{} {}: expected a number above 0 and at most {}", option, *value, most));
}

}  // namespace

const char* const kPlanModelHelp =
    "The plan, per profiled launch (ncu replays one kernel at a time and holds the process):\n"
    "  replay = passes x (duration + 0.09 s + resident GB x 0.0013 s/GB)\n"
    "  (the save and restore of the memory ncu saves, per pass: a fit of bench/capture-cost.sh\n"
    "  on an H200), or passes x duration + resident GB x 0.4 s/GB when the resident memory is\n"
    "  more than is free (ncu backs it up in host memory); the capture's wall time = 3 s\n"
    "  (attach and report) + every profiled launch's replay + the steps the program runs\n"
    "  until the last one; the engine's longest stall = the replays that fall in one step.\n"
    "  Passes: triage 14, basic 10, full 38 (measured on an H200, ncu 2025.3.1; estimated for\n"
    "  another version, and for --section/--metrics lists: full's 38). The launches come from\n"
    "  --trace (kprof's tracer or the PyTorch profiler, of the same program): the filter's\n"
    "  launches per step, their durations, the step's wall time.\n"
    "Limits: a probe's budget (period x failure threshold), --slo-p99-ms (the longest stall),\n"
    "the device memory left (the resident memory must fit in what is free), --budget (the\n"
    "capture's wall time). Over a limit the plan names it and proposes the largest capture\n"
    "that fits: fewer launches, fewer kernels, a lighter preset, or the sister deployment\n"
    "(k8s); --budget makes it the choice.\n";

void add_plan_options(CLI::App* command, PlanCliOptions& options, bool probes) {
  command->add_option("--trace", options.trace,
                      "A trace of the same program (kprof trace, the PyTorch profiler): the "
                      "filter's launches per step and their durations");
  command->add_option("--step", options.step,
                      "Regex (RE2) over the trace's annotation names that delimit steps (as "
                      "kprof budget)");
  command
      ->add_option("--slo-p99-ms", options.slo_p99_ms,
                   "The serving SLO: no stall may be longer than this p99 latency")
      ->check(CLI::Range(0.0, 1e9));
  command->add_option("--budget", options.budget_s,
                      "Seconds the whole capture may take; kprof chooses the largest capture "
                      "that fits");
  command->add_option("--device-memory-gb", options.device_gb, "The device's memory (GB)")
      ->check(CLI::Range(0.0, 1e6));
  command
      ->add_option("--resident-gb", options.resident_gb,
                   "Device memory the engine holds (GB): what ncu saves and restores")
      ->check(CLI::Range(0.0, 1e6));
  command->add_option("--gpu-memory-utilization", options.memory_fraction,
                      "The engine's memory fraction (vLLM --gpu-memory-utilization, SGLang "
                      "--mem-fraction-static): with --device-memory-gb, the resident memory");
  command->add_option("--ncu-version", options.ncu_version,
                      "The ncu the capture will run (2025.3.1): the passes' figures are "
                      "measured for this one");
  if (probes) {
    command->add_option("--liveness-probe", options.liveness_probe,
                        "PERIOD:FAILURE_THRESHOLD of the server's liveness probe (10:3)");
    command->add_option("--readiness-probe", options.readiness_probe,
                        "PERIOD:FAILURE_THRESHOLD of the server's readiness probe");
  }
}

capture::PlanOptions to_plan_options(const PlanCliOptions& options, capture::CaptureSpec spec,
                                     bool json) {
  capture::PlanOptions plan;
  if (!options.ncu_version.empty()) {
    spec.ncu_version = capture::parse_ncu_version(options.ncu_version);
    if (!spec.ncu_version)
      throw UsageError(fmt::format("--ncu-version \"{}\": expected a version such as 2025.3.1",
                                   options.ncu_version));
  }
  check_positive(options.slo_p99_ms, "--slo-p99-ms", 1e9);
  check_positive(options.budget_s, "--budget", 1e9);
  check_positive(options.device_gb, "--device-memory-gb", 1e6);
  // --resident-gb may be 0 (an idle GPU: nvidia-smi's memory.used); its CLI::Range checks it.
  if (options.memory_fraction && !(*options.memory_fraction > 0 && *options.memory_fraction <= 1))
    throw UsageError(fmt::format("--gpu-memory-utilization {}: expected a fraction in (0, 1]",
                                 *options.memory_fraction));
  plan.capture = std::move(spec);
  plan.trace = options.trace;
  plan.step_regex = options.step;
  plan.json = json;
  plan.memory_fraction = options.memory_fraction;
  plan.limits.slo_p99_ms = options.slo_p99_ms;
  plan.limits.budget_s = options.budget_s;
  plan.limits.device_gb = options.device_gb;
  plan.limits.resident_gb = options.resident_gb;
  if (!options.liveness_probe.empty())
    plan.limits.probes.push_back(
        parse_probe("--liveness-probe", "liveness", options.liveness_probe));
  if (!options.readiness_probe.empty())
    plan.limits.probes.push_back(
        parse_probe("--readiness-probe", "readiness", options.readiness_probe));
  return plan;
}

void add_guard_options(CLI::App* command, GuardCliOptions& options,
                       const std::string& load_url_option) {
  command->add_option("--guard-url", options.url,
                      "Latency guard: the serving URL to probe (default: " + load_url_option +
                          "); only this URL gets the guard's requests, one at a time");
  command->add_option("--guard-p99-ms", options.p99_ms,
                      "Latency guard: stop ncu (detach) when the probes' p99 passes this");
  command->add_option("--guard-factor", options.factor,
                      "Latency guard: stop ncu when the probes' p99 passes the baseline's p99 "
                      "times this");
  command
      ->add_option("--guard-error-rate", options.error_rate,
                   "Latency guard: stop ncu when more than this fraction of the latest probes fail")
      ->capture_default_str();
  command
      ->add_option("--guard-interval", options.interval_s,
                   "Latency guard: seconds between probes while ncu runs")
      ->capture_default_str();
  command
      ->add_option("--guard-baseline", options.baseline,
                   "Latency guard: requests measured before the capture (the baseline)")
      ->capture_default_str();
}

std::optional<capture::GuardSpec> guard_spec(const GuardCliOptions& options, bool has_load_url,
                                             const load::LoadSpec& load) {
  bool asked = options.p99_ms || options.factor;
  if (options.url.empty() && !has_load_url) {
    if (!asked) return std::nullopt;  // no URL to measure: no bill either
    throw UsageError(
        "the latency guard needs a serving URL to probe: --guard-url URL (or the "
        "warm sequence's --load-url); it sends no request to any other");
  }
  if (options.p99_ms && !(*options.p99_ms > 0)) throw UsageError("--guard-p99-ms must be above 0");
  if (options.factor && !(*options.factor > 1))
    throw UsageError("--guard-factor must be above 1 (a multiple of the baseline's p99)");
  if (!(options.error_rate >= 0 && options.error_rate < 1))
    throw UsageError("--guard-error-rate is a fraction in [0, 1)");
  if (!(options.interval_s >= 0.1 && options.interval_s <= 3600))
    throw UsageError("--guard-interval is seconds between 0.1 and 3600");
  if (options.baseline < 1 || options.baseline > 1000)
    throw UsageError("--guard-baseline is a number of requests between 1 and 1000");
  capture::GuardSpec spec;
  spec.probe = load;
  if (!options.url.empty()) {
    try {
      spec.probe.base_url = load::normalize_base_url(options.url);
    } catch (const load::LoadError& error) {
      throw UsageError(std::string("--guard-url: ") + error.what());
    }
  } else {
    spec.probe.base_url.clear();  // the warm sequence's load URL
  }
  spec.p99_ms = options.p99_ms;
  spec.factor = options.factor;
  spec.max_error_rate = options.error_rate;
  spec.interval_s = options.interval_s;
  spec.baseline_requests = options.baseline;
  spec.probe.request_timeout_s = 120;
  return spec;
}

}  // namespace kprof::cli
