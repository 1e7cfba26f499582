// Reader of Nsight Systems SQLite exports (`nsys export --type sqlite`): CUDA kernels, memcpy and
// memset activity, CUDA runtime calls and NVTX ranges, handed to the same TraceEventSink as the
// PyTorch trace reader (kernels as "kernel", runtime calls as "cuda_runtime", NVTX push/pop and
// start/end ranges as "user_annotation"; nanosecond timestamps converted to microseconds).
#pragma once

#include <string>
#include <string_view>

#include "importers/common/trace_reader.h"
#include "importers/common/trace_sink.h"

namespace kprof::importers {

bool looks_like_sqlite(std::string_view head);

// Throws InputError for a file that is not an SQLite database, a database that is not an
// Nsight Systems export, or one without CUDA kernel activity.
TraceReadStats read_nsys_sqlite(const std::string& path, TraceEventSink& sink);

// The format in the registry (importers/common/trace_reader.h): a file (SQLite reads files).
class NsysSqliteReader final : public TraceReader {
 public:
  std::string_view name() const override { return "nsys-sqlite"; }
  std::string_view describes() const override {
    return "an Nsight Systems SQLite export (nsys export --type sqlite)";
  }
  std::string_view looks_like(std::string_view head) const override {
    return looks_like_sqlite(head) ? "an SQLite database, as Nsight Systems exports are" : "";
  }
  bool reads_stdin() const override { return false; }
  TraceReadStats read(const std::string& path, TraceEventSink& sink) const override {
    return read_nsys_sqlite(path, sink);
  }
};

}  // namespace kprof::importers
