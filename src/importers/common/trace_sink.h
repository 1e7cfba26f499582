// Where trace readers put events (one at a time, never all held), and what a reading counted.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "importers/common/trace_event.h"

namespace kprof::importers {

class TraceEventSink {
 public:
  virtual ~TraceEventSink() = default;
  virtual void on_event(const TraceEvent& event) = 0;
  // A sink that needs only some categories says so; the reader then hands it the others as
  // bare time spans (on_span) without parsing them fully, which is most of a trace.
  virtual bool wants_category(std::string_view /*category*/) const { return true; }
  virtual void on_span(double /*timestamp_us*/, double /*duration_us*/) {}
};

struct TraceReadStats {
  std::uint64_t bytes = 0;         // decompressed bytes read
  std::uint64_t events = 0;        // complete events (parsed, or spans of unwanted categories)
  std::uint64_t other_events = 0;  // metadata, flow and instant events, skipped
  // Complete events left out for an impossible time (see implausible_time), not counted in
  // events; the first of them described (where, which, why) for the warning.
  std::uint64_t skipped_events = 0;
  std::string first_skipped;
};

}  // namespace kprof::importers
