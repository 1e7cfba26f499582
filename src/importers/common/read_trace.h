// Reading a trace whatever its format: the reader is picked by content (SQLite magic: an Nsight
// Systems export; else Chrome trace JSON, .gz or not).
#pragma once

#include <string>

#include "importers/common/trace_sink.h"

namespace kprof::importers {

// Throws InputError (file and position) for a trace that cannot be read; see each reader.
TraceReadStats read_trace(const std::string& path, TraceEventSink& sink);

}  // namespace kprof::importers
