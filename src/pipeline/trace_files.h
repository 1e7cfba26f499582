// Traces as the pipelines read them: by name, or — where the request's files were opened and
// checked before it ran (common/opened_inputs.h: kprof mcp) — through the descriptor of the file
// that was checked. The trace readers open a name, so they are handed /proc/self/fd/N, a name of
// that descriptor; an Nsight Systems export a private copy of it instead, as SQLite resolves a
// /proc link to the file's path and opens that. Messages name the path as given either way.
#pragma once

#include <string>

#include "importers/common/read_trace.h"

namespace kprof::pipeline {

importers::TraceReadStats read_trace_file(const std::string& path, importers::TraceEventSink& sink);

// Whether a trace reader recognises the file's first bytes (importers::looks_like_trace_file);
// false for a name that is not among the request's opened files (a bundle folder).
bool looks_like_trace(const std::string& path);

}  // namespace kprof::pipeline
