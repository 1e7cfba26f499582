// Streaming reader of Chrome trace-event JSON as the PyTorch profiler writes it (what vLLM's and
// SGLang's /start_profile produce): .json or .json.gz, either {"traceEvents": [...], ...} or a
// bare array of events. Events are handed to a sink one at a time and never all held, so memory
// stays proportional to what the sink keeps, not to the file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kprof::importers {

// One complete ("ph": "X") event, fields as the trace spells them. Views are valid only during
// the sink call; the name is valid UTF-8 (bytes that are not, and lone \u surrogates, become
// U+FFFD).
struct TraceEvent {
  std::string_view category;  // kernel, gpu_memcpy, gpu_memset, cuda_runtime, cuda_driver,
                              // user_annotation, gpu_user_annotation, cpu_op, …
  std::string_view name;
  double timestamp_us = 0;
  double duration_us = 0;
  std::int64_t pid = 0;
  std::int64_t tid = 0;
  std::optional<std::int64_t> device, stream, correlation, external_id, graph_id;
  std::optional<std::uint64_t> graph_node_id;  // CUPTI's uint64, read exactly (not via double)
  std::optional<double> registers_per_thread, shared_memory;
  std::optional<std::int64_t> grid[3], block[3];
};

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

// The time rule both trace readers apply to every complete event before a sink sees it: the
// timestamp must be a finite number within ±1e17 us (about 3,000 years from its origin) and the
// duration a finite number from 0 to 1e12 us (about 11.6 days, longer than any profiler trace).
// Such an event is skipped and counted, never summed or clamped; the reason, or "" when the
// event is fine.
std::string implausible_time(double timestamp_us, double duration_us);

// One warning line (no "kprof: " prefix, no newline) naming the trace, how many events were
// skipped and the first of them; "" when none was.
std::string skipped_events_warning(const std::string& path, const TraceReadStats& stats);

// Throws InputError (file and byte offset) for an unreadable file, a broken gzip stream, JSON
// that is not a trace, or an event that is not an object.
TraceReadStats read_chrome_trace(const std::string& path, TraceEventSink& sink);

// Same over bytes in memory (tests, fuzzing).
TraceReadStats read_chrome_trace_bytes(const std::string& path, std::string_view bytes,
                                       TraceEventSink& sink);

// True when the first bytes look like a Chrome trace (a JSON object or array); gzip is sniffed
// by the caller.
bool looks_like_chrome_trace(std::string_view head);

}  // namespace kprof::importers
