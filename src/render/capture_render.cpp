#include "render/capture_render.h"

#include <fmt/format.h>

#include <algorithm>

namespace kprof::render {

std::string diagnoses_text(const std::vector<capture::Diagnosis>& diagnoses) {
  std::string text;
  for (const auto& d : diagnoses) {
    text += fmt::format("{} [{}] {}\n    → {}\n", d.failure ? "FAILED" : "warning", d.id, d.what,
                        d.next);
  }
  return text;
}

std::string capture_summary(const capture::CaptureResult& result) {
  const std::vector<int>& passes = result.progress.passes;
  std::string at;
  if (!passes.empty()) {
    auto [low, high] = std::minmax_element(passes.begin(), passes.end());
    at = *low == *high ? fmt::format(" at {} passes each", *low)
                       : fmt::format(" at {}-{} passes each", *low, *high);
  }
  size_t profiled = result.progress.kernels_profiled;
  return fmt::format("{} in {:.1f} s: {} kernel{} profiled{}; bundle {}",
                     result.incomplete ? "capture incomplete"
                     : result.failed   ? "capture failed"
                                       : "captured",
                     result.ncu.elapsed.count() / 1000.0, profiled, profiled == 1 ? "" : "s", at,
                     result.bundle_path);
}

std::string pod_capture_summary(int index, const capture::CaptureResult& result) {
  size_t profiled = result.progress.kernels_profiled;
  return fmt::format("capture {} {}: {} kernel{} profiled; bundle {}", index,
                     result.failed ? "failed" : "done", profiled, profiled == 1 ? "" : "s",
                     result.bundle_path);
}

nlohmann::json load_block_json(const load::LoadFigures& figures) {
  nlohmann::json latency;
  if (figures.latency) {
    const load::LatencySummary& l = *figures.latency;
    latency = {{"min", l.min_ms}, {"mean", l.mean_ms}, {"p50", l.p50_ms},
               {"p90", l.p90_ms}, {"p99", l.p99_ms},   {"max", l.max_ms}};
  }
  return {{"endpoint", figures.endpoint},
          {"model", figures.model},
          {"api", figures.api},
          {"concurrency", figures.concurrency},
          {"prompt_tokens", figures.prompt_tokens},
          {"output_tokens", figures.output_tokens},
          {"sent", figures.sent},
          {"completed", figures.completed},
          {"failed", figures.failed},
          {"max_in_flight", figures.max_in_flight},
          {"duration_s", figures.duration_s},
          {"requests_per_s", figures.requests_per_s},
          {"output_tokens_per_s", figures.output_tokens_per_s},
          {"latency_ms", latency},
          {"failures_by_cause", figures.failures_by_cause},
          {"failure_examples", figures.failure_examples}};
}

}  // namespace kprof::render
