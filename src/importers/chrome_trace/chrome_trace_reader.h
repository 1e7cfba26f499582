// Streaming reader of Chrome trace-event JSON as the PyTorch profiler writes it (what vLLM's and
// SGLang's /start_profile produce): .json or .json.gz, either {"traceEvents": [...], ...} or a
// bare array of events. Events are handed to a sink one at a time and never all held, so memory
// stays proportional to what the sink keeps, not to the file.
#pragma once

#include <string>
#include <string_view>

#include "importers/common/trace_sink.h"

namespace kprof::importers {

// Throws InputError (file and byte offset) for an unreadable file, a broken gzip stream, JSON
// that is not a trace, or an event that is not an object.
TraceReadStats read_chrome_trace(const std::string& path, TraceEventSink& sink);

// How bytes in memory reach the reader: at most first_read bytes in its first read, then at most
// max_read bytes in each (0: as many as it asks for, 4 MiB), so that tests can put the end of
// a read — where a file's chunks end — at any offset of a trace.
struct ReadChunks {
  size_t first_read = 0;
  size_t max_read = 0;
};

// Same over bytes in memory (tests, fuzzing).
TraceReadStats read_chrome_trace_bytes(const std::string& path, std::string_view bytes,
                                       TraceEventSink& sink, ReadChunks chunks = {});

// True when the first bytes look like a Chrome trace (a JSON object or array); gzip is sniffed
// by the caller.
bool looks_like_chrome_trace(std::string_view head);

}  // namespace kprof::importers
