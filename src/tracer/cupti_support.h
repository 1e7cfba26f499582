// The CUPTI calls that need no GPU: walking a completed buffer, the API names by callback id,
// error strings, and converting a raw dump into a trace. Used by the injection and, on machines
// without a GPU, by the tests and kprof-tracer-replay.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <functional>
#include <string>

#include "tracer/record_converter.h"

namespace kprof::tracer {

std::string cupti_error_text(CUptiResult result);

// Calls visit for each record of a completed buffer (CUPTI's own walk: the stride of each record
// is that of the libcupti in use, which may append fields to the structs compiled here).
// Returns an error message when the walk stopped before the end of the valid bytes.
std::string for_each_record(std::uint8_t* buffer, std::size_t valid_bytes,
                            const std::function<void(const CUpti_Activity&)>& visit);

// Display names of every runtime and driver callback id this libcupti knows.
ApiNames load_api_names();

// Converts a KPROF_TRACE_DUMP_RAW folder into one trace file (all its buffers as one window).
// False with *error set when the dump cannot be read, was recorded by another CUPTI version, or
// the trace cannot be written.
bool convert_raw_dump(const std::string& folder, const std::string& trace_path, std::string* error);

}  // namespace kprof::tracer
