// The tracer's settings, read from KPROF_TRACE_* environment variables when the injection starts.
// Pure: no CUPTI, no I/O; a setting that cannot be used is an error message, and the tracer then
// stays off (it runs inside someone else's process: it never guesses, never exits).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace kprof::tracer {

enum class StartMode {
  kNow,        // the first window opens at start (after KPROF_TRACE_DELAY_S)
  kOnControl,  // inactive (no activity kinds enabled) until the control file says "start"
};

struct TracerConfig {
  std::string output_dir = ".";                                            // KPROF_TRACE_DIR
  std::string name_pattern = "kprof-trace.{host}.{pid}.{window}.json.gz";  // KPROF_TRACE_NAME
  StartMode start = StartMode::kNow;                                       // KPROF_TRACE_START
  double delay_s = 0;                                                      // KPROF_TRACE_DELAY_S
  double duration_s = 0;                 // KPROF_TRACE_DURATION_S; 0: until stop, cap or exit
  std::string control_path;              // KPROF_TRACE_CONTROL; empty: none
  std::uint64_t max_events = 2'000'000;  // KPROF_TRACE_MAX_EVENTS, per window
  std::size_t memory_mb = 256;           // KPROF_TRACE_MEMORY_MB: host memory for activity buffers
  std::size_t device_buffer_mb = 0;      // KPROF_TRACE_DEVICE_BUFFER_MB; 0: CUPTI's default
  std::string raw_dump_dir;              // KPROF_TRACE_DUMP_RAW; empty: off
  std::optional<std::uint64_t> base_ns;  // KPROF_TRACE_BASE_NS; default: Kineto's rule
  bool flows = true;                     // KPROF_TRACE_FLOWS=0 leaves out the ac2g arrows
  // KPROF_TRACE_API=0: no host-side records of the launch/memcpy/memset calls (runtime, driver,
  // internal launches): kernels, copies and NVTX ranges only. Each API record costs the
  // launching thread time (tools/tracer/experiments/ladder.py measures how much).
  bool api_records = true;
};

// Host memory is handed to CUPTI in buffers of this size (CUPTI's guide suggests 1-10 MB).
inline constexpr std::size_t kBufferBytes = std::size_t{8} << 20;

struct ConfigResult {
  std::optional<TracerConfig> config;
  std::string error;  // "KPROF_TRACE_X: what is wrong" when config is empty
};

// lookup returns the variable's value or nullptr; an empty value counts as unset.
using EnvLookup = std::function<const char*(const char*)>;
ConfigResult parse_tracer_config(const EnvLookup& lookup);

// The file name of one window: {host}, {pid} and {window} replaced. The pattern was checked by
// parse_tracer_config (both {pid} and {window} present, no '/').
std::string expand_output_name(std::string_view pattern, std::string_view host, long pid,
                               unsigned window);

// Kineto's baseTimeNanoseconds: wall-clock time floored to 3-month units, so traces taken on one
// host (PyTorch's and ours, several processes) share a base and line up.
std::uint64_t kineto_base_time_ns(std::uint64_t realtime_ns);

}  // namespace kprof::tracer
