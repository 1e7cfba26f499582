#include "render/load_render.h"

#include <fmt/format.h>

#include <cmath>

#include "common/utf8.h"
#include "render/envelope.h"

namespace kprof::render {
namespace {

// Milliseconds to the microsecond, seconds and rates to 6 significant decimals: the JSON
// says what was measured without the noise of the last float bits.
double rounded(double value, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return std::round(value * scale) / scale;
}

}  // namespace

nlohmann::json load_figures_json(const load::LoadFigures& f) {
  nlohmann::json latency = nullptr;
  if (f.latency) {
    latency = {{"min", rounded(f.latency->min_ms, 3)}, {"mean", rounded(f.latency->mean_ms, 3)},
               {"p50", rounded(f.latency->p50_ms, 3)}, {"p90", rounded(f.latency->p90_ms, 3)},
               {"p99", rounded(f.latency->p99_ms, 3)}, {"max", rounded(f.latency->max_ms, 3)}};
  }
  nlohmann::json failures = nlohmann::json::object();
  for (const auto& [cause, count] : f.failures_by_cause) failures[cause] = count;
  return {{"endpoint", f.endpoint},
          {"model", f.model},
          {"api", f.api},
          {"concurrency", f.concurrency},
          {"prompt_tokens", f.prompt_tokens},
          {"output_tokens", f.output_tokens},
          {"sent", f.sent},
          {"completed", f.completed},
          {"failed", f.failed},
          {"cancelled", f.cancelled},
          {"max_in_flight", f.max_in_flight},
          {"duration_s", rounded(f.duration_s, 6)},
          {"requests_per_s", rounded(f.requests_per_s, 4)},
          {"output_tokens_per_s", rounded(f.output_tokens_per_s, 2)},
          {"latency_ms", latency},
          {"failures_by_cause", failures},
          {"failure_examples", f.failure_examples}};
}

nlohmann::json readiness_json(const load::Readiness& readiness, const std::string& path) {
  nlohmann::json why_not = nullptr;
  if (!readiness.ready) why_not = readiness.why_not;
  return {{"path", path},
          {"ready", readiness.ready},
          {"waited_s", rounded(readiness.waited_s, 3)},
          {"why_not", why_not}};
}

nlohmann::json load_json(const load::LoadFigures& figures,
                         const std::optional<load::Readiness>& readiness, bool interrupted,
                         const std::vector<std::string>& argv) {
  nlohmann::json body = {
      {"load", load_figures_json(figures)}, {"readiness", nullptr}, {"interrupted", interrupted}};
  if (readiness) body["readiness"] = readiness_json(*readiness, "/health");
  return with_envelope("kprof.load/1", argv, std::move(body));
}

std::string load_text(const load::LoadFigures& f, bool interrupted) {
  std::string text = fmt::format("load: {} model {}, c={}, prompt {} words, output {} tokens\n",
                                 escape_for_terminal(f.endpoint), escape_for_terminal(f.model),
                                 f.concurrency, f.prompt_tokens, f.output_tokens);
  text += fmt::format(
      "requests: {} sent, {} completed, {} failed{}; at most {} in flight{}\n", f.sent, f.completed,
      f.failed, f.cancelled > 0 ? fmt::format(", {} cancelled", f.cancelled) : "", f.max_in_flight,
      !interrupted      ? ""
      : f.cancelled > 0 ? " (interrupted: stopped sending, cut off those in flight)"
                        : " (interrupted: stopped sending)");
  text += fmt::format("rate: {:.2f} requests/s, {:.1f} output tokens/s over {:.2f} s\n",
                      f.requests_per_s, f.output_tokens_per_s, f.duration_s);
  if (f.latency) {
    const auto& l = *f.latency;
    text += fmt::format(
        "latency ms: min {:.1f}  mean {:.1f}  p50 {:.1f}  p90 {:.1f}  p99 {:.1f}  max {:.1f}\n",
        l.min_ms, l.mean_ms, l.p50_ms, l.p90_ms, l.p99_ms, l.max_ms);
  } else {
    text += "latency ms: none (no request completed)\n";
  }
  if (!f.failures_by_cause.empty()) {
    std::string causes;
    for (const auto& [cause, count] : f.failures_by_cause) {
      causes +=
          fmt::format("{}{} {}", causes.empty() ? "" : ", ", count, escape_for_terminal(cause));
    }
    text += "failures: " + causes + "\n";
    for (const auto& example : f.failure_examples) {
      text += "  " + escape_for_terminal(example) + "\n";
    }
  }
  return text;
}

std::string load_progress_line(double elapsed_s, std::int64_t sent, std::int64_t completed,
                               std::int64_t failed, int in_flight) {
  return fmt::format("load: {:.0f} s, {} sent, {} completed, {} failed, {} in flight", elapsed_s,
                     sent, completed, failed, in_flight);
}

}  // namespace kprof::render
