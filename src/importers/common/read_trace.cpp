#include "importers/common/read_trace.h"

#include <fstream>

#include "common/file_bytes.h"
#include "importers/chrome_trace/chrome_trace_reader.h"
#include "importers/nsys_sqlite/nsys_sqlite_reader.h"

namespace kprof::importers {

bool looks_like_trace_file(const std::string& path) {
  if (is_stdin_path(path)) return false;
  char head[256] = {};
  std::ifstream in(path, std::ios::binary);
  in.read(head, sizeof head);
  std::string_view bytes(head, static_cast<size_t>(in.gcount()));
  if (bytes.size() >= 2 && bytes[0] == '\x1f' && bytes[1] == '\x8b') return true;
  return looks_like_sqlite(bytes) || looks_like_chrome_trace(bytes);
}

TraceReadStats read_trace(const std::string& path, TraceEventSink& sink) {
  // stdin cannot be looked at first and read again: the Chrome trace reader streams it and
  // refuses an Nsight Systems export there.
  if (is_stdin_path(path)) return read_chrome_trace(path, sink);
  char head[16] = {};
  std::ifstream in(path, std::ios::binary);
  in.read(head, sizeof head);
  if (looks_like_sqlite(std::string_view(head, static_cast<size_t>(in.gcount())))) {
    return read_nsys_sqlite(path, sink);
  }
  return read_chrome_trace(path, sink);
}

}  // namespace kprof::importers
