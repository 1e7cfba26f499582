#include "importers/common/read_trace.h"

#include <fstream>

#include "common/file_bytes.h"
#include "importers/common/trace_reader.h"

namespace kprof::importers {
namespace {

// What the registry's readers are told by: the first bytes of the file as stored.
std::string head_of(const std::string& path) {
  char head[256] = {};
  std::ifstream in(path, std::ios::binary);
  in.read(head, sizeof head);
  return std::string(head, static_cast<size_t>(in.gcount()));
}

// The reader that streams stdin (stdin cannot be looked at first and read again).
const TraceReader& stdin_reader() {
  for (const TraceReader* reader : all_trace_readers()) {
    if (reader->reads_stdin()) return *reader;
  }
  return *all_trace_readers().back();
}

}  // namespace

bool looks_like_trace_file(const std::string& path) {
  if (is_stdin_path(path)) return false;
  const std::string head = head_of(path);
  for (const TraceReader* reader : all_trace_readers()) {
    if (!reader->looks_like(head).empty()) return true;
  }
  return false;
}

TraceReadStats read_trace(const std::string& path, TraceEventSink& sink) {
  // stdin: the Chrome trace reader streams it, and refuses an Nsight Systems export there.
  if (is_stdin_path(path)) return stdin_reader().read(path, sink);
  const std::string head = head_of(path);
  for (const TraceReader* reader : all_trace_readers()) {
    if (!reader->looks_like(head).empty()) return reader->read(path, sink);
  }
  // Nothing recognises it: the most lenient reader says what is wrong with it.
  return all_trace_readers().back()->read(path, sink);
}

}  // namespace kprof::importers
