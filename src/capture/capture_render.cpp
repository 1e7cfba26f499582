#include "capture/capture_render.h"

#include <fmt/format.h>

#include <algorithm>

namespace kprof::capture {

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

std::string stopped_sequence_summary(const capture::CaptureResult& stopped) {
  return fmt::format(
      "warm sequence {} after {:.1f} s, before its first capture (nothing profiled); what it did "
      "and why it stopped: bundle {}",
      stopped.incomplete ? "interrupted" : "stopped", stopped.manifest.value("elapsed_s", 0.0),
      stopped.bundle_path);
}

}  // namespace kprof::capture
