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

}  // namespace kprof::cli
