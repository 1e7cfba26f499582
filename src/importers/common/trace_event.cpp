#include "importers/common/trace_event.h"

#include <fmt/format.h>

#include <cmath>

namespace kprof::importers {

std::string implausible_time(double timestamp_us, double duration_us) {
  constexpr double kMaxTimestampUs = 1e17, kMaxDurationUs = 1e12;
  if (!std::isfinite(timestamp_us))
    return fmt::format("timestamp {} is not a finite number", timestamp_us);
  if (std::fabs(timestamp_us) > kMaxTimestampUs) {
    return fmt::format("timestamp {:g} us is beyond ±1e17 us", timestamp_us);
  }
  if (!std::isfinite(duration_us))
    return fmt::format("duration {} is not a finite number", duration_us);
  if (duration_us < 0) return fmt::format("duration {:g} us is negative", duration_us);
  if (duration_us > kMaxDurationUs) {
    return fmt::format("duration {:g} us is longer than 1e12 us (11.6 days)", duration_us);
  }
  return {};
}

}  // namespace kprof::importers
