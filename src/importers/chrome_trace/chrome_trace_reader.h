// Streaming reader of Chrome trace-event JSON as the PyTorch profiler writes it (what vLLM's and
// SGLang's /start_profile produce): .json or .json.gz, either {"traceEvents": [...], ...} or a
// bare array of events. Events are handed to a sink one at a time and never all held, so memory
// stays proportional to what the sink keeps, not to the file.
#pragma once

#include <string>
#include <string_view>

#include "importers/chrome_trace/structural_scan.h"
#include "importers/common/trace_reader.h"
#include "importers/common/trace_sink.h"

namespace kprof::importers {

// Throws InputError (file and byte offset) for an unreadable file, a broken gzip stream, JSON
// that is not a trace, or an event that is not an object.
TraceReadStats read_chrome_trace(const std::string& path, TraceEventSink& sink);

// How bytes in memory reach the reader: at most first_read bytes in its first read, then at most
// max_read bytes in each (0: as many as it asks for, 2 MiB), so that tests can put the end of
// a read — where a file's chunks end — at any offset of a trace; copied into the reader's buffer
// as a compressed file's are, or scanned where they lie (in_place) as a plain file's are.
struct ReadChunks {
  size_t first_read = 0;
  size_t max_read = 0;
  bool in_place = false;
};

// How events are parsed: the plain-event fast path first (plain_event.h), simdjson for what it
// declines — what files get; or simdjson alone, the reference tests hold the fast path to.
enum class EventParsing { kPlainFirst, kSimdjsonOnly };

// Same over bytes in memory (tests, fuzzing); isa picks the scanner's implementation (tests run
// each one compiled_scan_isas() lists; another is std::invalid_argument).
TraceReadStats read_chrome_trace_bytes(const std::string& path, std::string_view bytes,
                                       TraceEventSink& sink, ReadChunks chunks = {},
                                       ScanIsa isa = kNativeScanIsa,
                                       EventParsing parsing = EventParsing::kPlainFirst);

// True when the first bytes look like a Chrome trace (a JSON object or array); gzip is sniffed
// by the caller.
bool looks_like_chrome_trace(std::string_view head);

// The format in the registry (importers/common/trace_reader.h): .json or .json.gz, stdin too.
class ChromeTraceReader final : public TraceReader {
 public:
  std::string_view name() const override { return "chrome-trace"; }
  std::string_view describes() const override {
    return "a PyTorch profiler trace (Chrome trace JSON, .json or .json.gz)";
  }
  std::string_view looks_like(std::string_view head) const override;
  bool reads_stdin() const override { return true; }
  TraceReadStats read(const std::string& path, TraceEventSink& sink) const override {
    return read_chrome_trace(path, sink);
  }
};

}  // namespace kprof::importers
