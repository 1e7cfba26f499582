// Reading a trace whatever its format: the reader is picked by content from the registry
// (importers/common/trace_reader.h).
#pragma once

#include <string>

#include "importers/common/trace_sink.h"

namespace kprof::importers {

// Whether the file's first bytes are a trace's (gzip, SQLite, or the start of Chrome trace JSON)
// rather than a capture's; false for stdin and for what cannot be opened (the importer that reads
// it then says why).
bool looks_like_trace_file(const std::string& path);

// Throws InputError (file and position) for a trace that cannot be read; see each reader.
TraceReadStats read_trace(const std::string& path, TraceEventSink& sink);

}  // namespace kprof::importers
