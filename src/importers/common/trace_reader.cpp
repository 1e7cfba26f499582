#include "importers/common/trace_reader.h"

#include "importers/chrome_trace/chrome_trace_reader.h"
#include "importers/nsys_sqlite/nsys_sqlite_reader.h"

namespace kprof::importers {

const std::vector<const TraceReader*>& all_trace_readers() {
  // The SQLite magic is exact; a Chrome trace is told by a JSON bracket or gzip: last.
  static const NsysSqliteReader nsys;
  static const ChromeTraceReader chrome;
  static const std::vector<const TraceReader*> readers{&nsys, &chrome};
  return readers;
}

std::string trace_formats_text() {
  std::string text;
  const auto& readers = all_trace_readers();
  // In the order a user meets them: the PyTorch profiler's traces first.
  for (auto it = readers.rbegin(); it != readers.rend(); ++it) {
    if (!text.empty()) text += it + 1 == readers.rend() ? " or " : ", ";
    text += (*it)->describes();
  }
  return text;
}

}  // namespace kprof::importers
