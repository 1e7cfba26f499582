// Reader of Nsight Systems SQLite exports (`nsys export --type sqlite`): CUDA kernels, memcpy and
// memset activity, CUDA runtime calls and NVTX ranges, handed to the same TraceEventSink as the
// PyTorch trace reader (kernels as "kernel", runtime calls as "cuda_runtime", NVTX push/pop and
// start/end ranges as "user_annotation"; nanosecond timestamps converted to microseconds).
#pragma once

#include <string>
#include <string_view>

#include "importers/common/trace_sink.h"

namespace kprof::importers {

bool looks_like_sqlite(std::string_view head);

// Throws InputError for a file that is not an SQLite database, a database that is not an
// Nsight Systems export, or one without CUDA kernel activity.
TraceReadStats read_nsys_sqlite(const std::string& path, TraceEventSink& sink);

}  // namespace kprof::importers
