// Every profiler-trace format kprof reads, behind one interface: what it is called, how its first
// bytes are told, and a reader that streams its events into a sink. read_trace picks the reader
// by content, never by file name; the help texts and the hints for a trace given where a report
// belongs read this list. A new format is one reader and one line in all_trace_readers().
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "importers/common/trace_sink.h"

namespace kprof::importers {

class TraceReader {
 public:
  virtual ~TraceReader() = default;
  virtual std::string_view name() const = 0;       // "chrome-trace"
  virtual std::string_view describes() const = 0;  // "a PyTorch profiler trace (…)"
  // What the first bytes of a file (as stored, before any decompression) say it is, as a hint
  // for the user ("an SQLite database, as Nsight Systems exports are"); "" when not this format.
  virtual std::string_view looks_like(std::string_view head) const = 0;
  // Whether it can stream stdin ("-"); a file-only format (SQLite) is refused there.
  virtual bool reads_stdin() const = 0;
  // Throws InputError (file and position) for what it cannot read.
  virtual TraceReadStats read(const std::string& path, TraceEventSink& sink) const = 0;
};

// Tried in order; the first whose looks_like() answers reads the file.
const std::vector<const TraceReader*>& all_trace_readers();

// "a PyTorch profiler trace (…) or an Nsight Systems SQLite export (…)", for the help texts.
std::string trace_formats_text();

}  // namespace kprof::importers
