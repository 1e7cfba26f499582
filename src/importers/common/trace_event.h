// What every trace reader hands over: one complete event, fields as the trace spells them, and
// the time rule every reader applies before a sink sees an event.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kprof::importers {

// One complete ("ph": "X") event, fields as the trace spells them. Views are valid only during
// the sink call; the name is valid UTF-8 (bytes that are not, and lone \u surrogates, become
// U+FFFD).
struct TraceEvent {
  // kernel, gpu_memcpy, gpu_memset, cuda_runtime, cuda_driver, cuda_sync, user_annotation,
  // gpu_user_annotation, cpu_op, … — the modern Kineto names whatever the trace's age (readers map
  // PyTorch 1.8/1.9's Kernel, Runtime, Memcpy, Memset and Operator onto them).
  std::string_view category;
  std::string_view name;
  double timestamp_us = 0;
  double duration_us = 0;
  std::int64_t pid = 0;
  std::int64_t tid = 0;
  // The OS process that ran the event (a CPU row) or launched it (GPU work), where the trace
  // says: a Chrome trace's GPU rows carry the device as their pid and leave it unset; every row
  // of an Nsight Systems export has it. Correlation ids are numbered per process.
  std::optional<std::int64_t> process;
  std::optional<std::int64_t> device, stream, correlation, external_id, graph_id;
  std::optional<std::uint64_t> graph_node_id;  // CUPTI's uint64, read exactly (not via double)
  std::optional<double> registers_per_thread, shared_memory;
  // The kernel a launch call launched, where the runtime event names it (HIP's "kernel" arg; CUDA
  // runtime events do not): what ties a captured launch to a replayed graph node by name.
  std::string_view launched_kernel;
  std::optional<std::int64_t> grid[3], block[3];
};

// The time rule both trace readers apply to every complete event before a sink sees it: the
// timestamp must be a finite number within ±1e17 us (about 3,000 years from its origin) and the
// duration a finite number from 0 to 1e12 us (about 11.6 days, longer than any profiler trace).
// Such an event is skipped and counted, never summed or clamped; the reason, or "" when the
// event is fine.
std::string implausible_time(double timestamp_us, double duration_us);

}  // namespace kprof::importers
