// CUPTI activity records → Chrome trace events, as the PyTorch profiler (Kineto) writes them, so
// kprof's trace reader, Perfetto and other Kineto readers take kprof's traces like PyTorch's.
// Pure functions over the record structs: nothing here calls CUPTI (the caller walks the buffers
// and supplies the API names), so it runs on hand-built and recorded buffers without a GPU.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kprof::tracer {

// "cudaLaunchKernel_v7000" → "cudaLaunchKernel": CUPTI's runtime names carry a version suffix,
// Kineto's do not; every runtime name ends in one "_v" + 4 or more digits. Driver names are kept.
std::string api_display_name(std::string_view cupti_name, bool runtime);

// Whether API records are enabled for this call: kernel and graph launches, copies and sets —
// what `kprof budget` needs from the host side — and nothing else (every other recorded call
// costs the launching thread time).
bool is_traced_api(std::string_view display_name);

// Display names of runtime and driver APIs by callback id ("" where CUPTI has none).
struct ApiNames {
  std::vector<std::string> runtime, driver;
};

// The strings behind the pointers in records (kernel names, NVTX names and domains): the traced
// process's own memory, or the table saved with a raw dump. Never called with nullptr.
class StringSource {
 public:
  virtual ~StringSource() = default;
  virtual std::string_view resolve(const char* pointer) const = 0;
};

class LiveStrings final : public StringSource {
 public:
  std::string_view resolve(const char* pointer) const override { return pointer; }
};

// "a\"b" etc.: JSON string contents; invalid UTF-8 becomes U+FFFD (the trace must stay valid
// JSON whatever a kernel or NVTX name holds).
void append_json_string(std::string& out, std::string_view text);

// `, "key": value` (without the comma for the first field of an object): the summary's counts.
void append_json_count(std::string& out, const char* key, std::uint64_t value, bool comma = true);

struct DeviceClockCheck {
  std::uint64_t pairs = 0;              // GPU activities matched to their launch call
  std::uint64_t gpu_before_launch = 0;  // of those, starting before the call began
};

// Counts of one window. "Dropped" counts are never silent: they go into the file and to stderr.
struct WindowCounts {
  std::uint64_t records = 0;               // records read from CUPTI's buffers
  std::uint64_t events = 0;                // events written: complete ("X") and instant, not flows
  std::uint64_t over_cap = 0;              // records not written: the window's event cap was hit
  std::uint64_t incomplete_records = 0;    // GPU records without timestamps (not written)
  std::uint64_t unmatched_range_ends = 0;  // NVTX range ends whose start came before the window
  std::uint64_t open_ranges_at_stop = 0;   // NVTX ranges still open when the window closed
  std::uint64_t other_records = 0;         // kinds this tracer does not convert
  std::map<std::uint32_t, DeviceClockCheck> clock_checks;  // by device
};

struct ConverterOptions {
  std::uint64_t base_ns = 0;  // ts = (time - base) in µs, 3 decimals, like Kineto
  std::uint64_t max_events = UINT64_MAX;
  bool flows = true;  // ac2g flow events linking a launch call to its GPU work
};

class RecordConverter {
 public:
  RecordConverter(const ApiNames& api_names, const StringSource& strings, ConverterOptions options)
      : api_names_(api_names), strings_(strings), options_(options) {}

  // Appends the record's events to out, each but the window's first preceded by ",\n".
  void convert(const CUpti_Activity& record, std::string& out);

  // A new window: counts and NVTX ranges start afresh; interned names are kept.
  void start_window();
  // Ends the window: ranges still open are counted; returns the window's counts.
  WindowCounts finish_window();
  const WindowCounts& counts() const { return counts_; }
  bool cap_reached() const { return counts_.events >= options_.max_events; }

 private:
  struct InternedName {
    std::string mangled;  // to notice a pointer reused for another name
    std::string json;     // demangled, escaped
  };
  struct OpenRange {
    std::uint64_t start;
    std::string name_json, domain_json;
    std::uint32_t pid, tid;
  };
  struct LaunchSlot {
    std::uint32_t correlation = 0;
    std::uint64_t start = 0;
    std::uint32_t device = 0;
  };

  const std::string& kernel_name(const char* pointer);
  void begin_event(std::string& out);
  void append_time(std::string& out, std::uint64_t ns);
  void append_complete(std::string& out, std::string_view category, std::string_view name_json,
                       std::uint64_t pid, std::uint64_t tid, std::uint64_t start,
                       std::uint64_t end);
  void append_flow(std::string& out, bool start, std::uint32_t id, std::uint64_t pid,
                   std::uint64_t tid, std::uint64_t ts);
  void check_clock(bool is_launch, std::uint32_t correlation, std::uint64_t start,
                   std::uint32_t device);
  void on_kernel(const CUpti_ActivityKernel10& k, std::string& out);
  void on_memcpy(const CUpti_ActivityMemcpy6& m, std::string& out);
  void on_memset(const CUpti_ActivityMemset4& m, std::string& out);
  void on_api(const CUpti_ActivityAPI& a, CUpti_ActivityKind kind, std::string& out);
  void on_marker(const CUpti_ActivityMarker2& m, std::string& out);
  void range(std::string& out, const OpenRange& open, std::uint64_t end, std::uint32_t id);

  const ApiNames& api_names_;
  const StringSource& strings_;
  ConverterOptions options_;
  WindowCounts counts_;
  bool first_event_ = true;
  std::unordered_map<const char*, InternedName> names_;
  std::unordered_map<std::uint32_t, OpenRange> open_ranges_;     // NVTX START seen, by id
  std::unordered_map<std::uint32_t, std::uint64_t> early_ends_;  // END seen before its START
  // Direct-mapped by correlation id: the last launch call and the earliest GPU activity seen
  // for each, whichever arrives first waits there for the other (bounded memory).
  std::vector<LaunchSlot> launch_slots_ = std::vector<LaunchSlot>(1 << 16);
  std::vector<LaunchSlot> gpu_slots_ = std::vector<LaunchSlot>(1 << 16);
};

}  // namespace kprof::tracer
