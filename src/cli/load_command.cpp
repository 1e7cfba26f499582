// kprof load --url URL: closed-loop OpenAI-compatible load against a serving engine, the same
// request driver the warm capture runs, so a user can check a server before capturing it.
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>
#include <optional>
#include <thread>

#include "cli/capture_support.h"
#include "cli/command.h"
#include "common/child_process.h"
#include "common/file_bytes.h"
#include "common/redact.h"
#include "load/request_driver.h"
#include "render/load_render.h"
#include "render/report_json.h"

namespace kprof::cli {
namespace {

struct LoadOptions {
  load::LoadSpec spec;
  std::optional<std::int64_t> requests;
  std::optional<double> duration_s;
  double wait_ready_s = 0;
  bool no_ignore_eos = false;
  std::string json_path;  // "-": stdout
};

// Sets `flag` once kprof gets SIGINT/SIGTERM (keep_interrupts), for the library's waits.
class InterruptWatch {
 public:
  InterruptWatch() {
    thread_ = std::thread([this] {
      while (!done_.load()) {
        if (interrupt_received()) flag_.store(true);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
  }
  ~InterruptWatch() {
    done_.store(true);
    thread_.join();
  }
  InterruptWatch(const InterruptWatch&) = delete;
  InterruptWatch& operator=(const InterruptWatch&) = delete;
  const std::atomic<bool>* flag() const { return &flag_; }
  bool interrupted() const { return flag_.load() || interrupt_received(); }

 private:
  std::atomic<bool> flag_{false}, done_{false};
  std::thread thread_;
};

ExitCode run_load(LoadOptions options, Output& output) {
  load::LoadSpec spec = options.spec;
  spec.max_requests = options.requests;
  spec.duration_s = options.duration_s;
  if (!spec.max_requests && !spec.duration_s) spec.max_requests = 32;
  spec.ignore_eos = !options.no_ignore_eos;
  spec.api_key = api_key_from_environment();
  // A connection the server closes while a request is written is a failed request, not a
  // SIGPIPE that ends kprof.
  std::signal(SIGPIPE, SIG_IGN);
  keep_interrupts();
  InterruptWatch interrupt;

  std::unique_ptr<load::RequestDriver> driver;
  try {
    driver = std::make_unique<load::RequestDriver>(spec);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  } catch (const load::LoadError& e) {
    throw UsageError(fmt::format("--url: {}", e.what()));
  }

  std::optional<load::Readiness> readiness;
  if (options.wait_ready_s > 0) {
    readiness = load::wait_ready(spec.base_url, "/health", options.wait_ready_s, interrupt.flag(),
                                 spec.api_key);
    if (!readiness->ready) {
      throw NotReady(fmt::format("{}/health did not answer 200 within {:g} s (last: {})",
                                 redact_url(spec.base_url), options.wait_ready_s,
                                 readiness->why_not));
    }
  }
  try {
    driver->start();
  } catch (const load::LoadError& e) {
    throw NotReady(fmt::format("cannot read the served model: {}", e.what()));
  }

  // Progress once a second on stderr while the load runs; Ctrl-C stops sending.
  const auto started = std::chrono::steady_clock::now();
  auto next_progress = started + std::chrono::seconds(1);
  while (!driver->finished() && !interrupt.interrupted()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const auto now = std::chrono::steady_clock::now();
    if (now >= next_progress) {
      next_progress += std::chrono::seconds(1);
      const std::string line = render::load_progress_line(
          std::chrono::duration<double>(now - started).count(), driver->sent(), driver->completed(),
          driver->failed(), driver->in_flight());
      std::fprintf(stderr, "%s\n", line.c_str());
    }
  }
  const bool interrupted = interrupt.interrupted() && !driver->finished();
  // Ctrl-C ends the run now: what is in flight is cut off (cancelled), not waited for.
  const load::LoadFigures figures = interrupted ? driver->abandon() : driver->stop();

  const std::string text = render::load_text(figures, interrupted);
  if (!options.json_path.empty()) {
    const std::string json =
        render::json_text(render::load_json(figures, readiness, interrupted, output.argv));
    if (options.json_path == "-") {
      output.stdout_text = json;
      output.stderr_text = text;
    } else {
      // The summary is printed even when the file cannot be written: the run is not lost.
      try {
        write_file_atomically(options.json_path, json);
      } catch (const std::exception&) {
        std::fputs(text.c_str(), stdout);
        std::fflush(stdout);
        throw;
      }
      output.stdout_text = text;
    }
  } else {
    output.stdout_text = text;
  }
  // Interrupted, the figures are those of a run cut short: exit 8, as capture and trace.
  if (interrupted) return ExitCode::kIncomplete;
  return figures.failed > 0 ? ExitCode::kRequestsFailed : ExitCode::kOk;
}

}  // namespace

void define_load(CLI::App& parent, Runner& runner) {
  auto options = std::make_shared<LoadOptions>();
  CLI::App* command = parent.add_subcommand(
      "load", "Closed-loop OpenAI-compatible load on a serving engine: req/s, latency, failures");
  command->footer(
      "C workers each keep one request in flight (a reply, then the next request) against\n"
      "/v1/completions or /v1/chat/completions of vLLM, SGLang, TensorRT-LLM or any\n"
      "OpenAI-compatible server, until -n requests are sent or --duration has passed; the ones\n"
      "in flight then finish. The model is the first /v1/models lists unless --model is given.\n"
      "ignore_eos and min_tokens are sent so every request generates --output-len tokens.\n"
      "Progress once a second on stderr; Ctrl-C stops sending, cuts off the requests in\n"
      "flight (counted as cancelled, within a second) and prints what was measured.\n"
      "This is the request driver kprof's warm capture runs while ncu profiles. A server\n"
      "started with --api-key: KPROF_API_KEY=KEY in the environment (sent as a Bearer token).\n\n"
      "Exit codes: 0 every request completed; 12 some failed (by cause: HTTP status,\n"
      "connection, timeout, bad response); 8 interrupted (Ctrl-C: the figures until then);\n"
      "2 usage; 9 the server not ready within --wait-ready, or /v1/models unreachable or\n"
      "listing no model; 11 --json not writable.\n\n"
      "Examples:\n"
      "  kprof load --url http://127.0.0.1:8000 -c 16 -n 256\n"
      "  kprof load --url http://127.0.0.1:8000 -c 64 --duration 60 --wait-ready 900 --json -");
  command
      ->add_option("--url", options->spec.base_url,
                   "Server base URL, http://HOST:PORT (a trailing /v1 is accepted)")
      ->required();
  command->add_option("-c,--concurrency", options->spec.concurrency, "Requests in flight at once")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  auto* n = command
                ->add_option("-n,--requests", options->requests,
                             "Send this many requests in all (default 32)")
                ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
  command
      ->add_option("--duration", options->duration_s,
                   "Start new requests for this many seconds, then let those in flight finish")
      ->check(CLI::Range(1e-3, 1e7))  // a week and more; past ~9e9 s the deadline overflows
      ->excludes(n);
  command->add_option("--prompt-len", options->spec.prompt_tokens, "Prompt length in words")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  command->add_option("--output-len", options->spec.output_tokens, "max_tokens of each request")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  command->add_option("--api", options->spec.api, "Which endpoint")
      ->check(CLI::IsMember({"completions", "chat"}))
      ->capture_default_str();
  command->add_option("--model", options->spec.model,
                      "Model id to send (default: the first id GET /v1/models lists)");
  command->add_option("--timeout", options->spec.request_timeout_s, "Seconds one request may take")
      ->check(CLI::Range(1e-3, 1e7))
      ->capture_default_str();
  command
      ->add_option("--wait-ready", options->wait_ready_s,
                   "First poll GET /health up to this many seconds until it answers 200")
      ->check(CLI::NonNegativeNumber);
  command->add_flag("--no-ignore-eos", options->no_ignore_eos,
                    "Send neither ignore_eos nor min_tokens (servers that refuse them)");
  command->add_option("--json", options->json_path,
                      "Also write the figures as JSON (kprof.load/1) to FILE; '-': JSON on "
                      "stdout, the summary on stderr");
  command->callback([&runner, options] {
    runner = [options](Output& output) { return run_load(*options, output); };
  });
}

}  // namespace kprof::cli
