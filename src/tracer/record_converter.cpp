#include "tracer/record_converter.h"

#include <cxxabi.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace kprof::tracer {
namespace {

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

void append_uint(std::string& out, std::uint64_t value) {
  char buffer[24];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, end);
}

void append_int(std::string& out, std::int64_t value) {
  char buffer[24];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, end);
}

void append_double(std::string& out, double value) {
  char buffer[32];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, end);
}

// Nanoseconds as Kineto writes microseconds: integer part, '.', three digits (exact).
void append_ns_as_us(std::string& out, std::uint64_t ns) {
  append_uint(out, ns / 1000);
  unsigned rest = static_cast<unsigned>(ns % 1000);
  char digits[4] = {static_cast<char>('.'), static_cast<char>('0' + rest / 100),
                    static_cast<char>('0' + rest / 10 % 10), static_cast<char>('0' + rest % 10)};
  out.append(digits, 4);
}

// Kineto's spellings (libkineto/src/cupti_strings.cpp, memcpyKindString / memoryKindString).
const char* copy_kind_name(std::uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
      return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
      return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
      return "HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
      return "AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
      return "AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
      return "AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
      return "DtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
      return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return "PtoP";
    default:
      return "<unknown>";
  }
}

const char* memory_kind_name(unsigned kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN:
      return "Unknown";
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE:
      return "Pageable";
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED:
      return "Pinned";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
      return "Device";
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY:
      return "Array";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
      return "Managed";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC:
      return "Device Static";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC:
      return "Managed Static";
    default:
      return "Unrecognized";
  }
}

// "start == end == 0: no timing information could be collected" (cupti_activity.h); a record
// still incomplete when a forced flush returned it has an end of 0.
bool has_times(std::uint64_t start, std::uint64_t end) { return start != 0 && end >= start; }

void append_graph_ids(std::string& out, std::uint32_t graph_id, std::uint64_t graph_node_id) {
  if (graph_id == 0 && graph_node_id == 0) return;  // not launched by a CUDA graph
  out += ", \"graph id\": ";
  append_uint(out, graph_id);
  out += ", \"graph node id\": ";
  append_uint(out, graph_node_id);
}

// The args of a memcpy or memset (both carry the same fields): where it ran, its correlation,
// its bytes and their rate (bytes per ns is GB/s), its graph ids.
template <typename Record>
void append_transfer_args(std::string& out, const Record& m) {
  out += ", \"args\": {\"device\": ";
  append_uint(out, m.deviceId);
  out += ", \"context\": ";
  append_uint(out, m.contextId);
  out += ", \"stream\": ";
  append_uint(out, m.streamId);
  out += ", \"correlation\": ";
  append_uint(out, m.correlationId);
  out += ", \"bytes\": ";
  append_uint(out, m.bytes);
  out += ", \"memory bandwidth (GB/s)\": ";
  if (m.end > m.start) {
    append_double(out, static_cast<double>(m.bytes) / static_cast<double>(m.end - m.start));
  } else {
    out += "\"N/A\"";
  }
  append_graph_ids(out, m.graphId, m.graphNodeId);
  out += "}}";
}

}  // namespace

std::string api_display_name(std::string_view cupti_name, bool runtime) {
  if (!runtime) return std::string(cupti_name);
  size_t suffix = cupti_name.rfind("_v");
  if (suffix != std::string_view::npos && cupti_name.size() - suffix >= 6 &&
      std::all_of(cupti_name.begin() + static_cast<std::ptrdiff_t>(suffix) + 2, cupti_name.end(),
                  [](char c) { return c >= '0' && c <= '9'; })) {
    cupti_name = cupti_name.substr(0, suffix);
  }
  return std::string(cupti_name);
}

bool is_traced_api(std::string_view name) {
  // "__cudaLaunchKernel" is CUDA 13's entry point of <<<>>> launches.
  while (!name.empty() && name.front() == '_') name.remove_prefix(1);
  for (std::string_view prefix : {"cudaLaunch", "cuLaunch", "cudaMemcpy", "cuMemcpy", "cudaMemset",
                                  "cuMemset", "cudaGraphLaunch", "cuGraphLaunch"}) {
    if (starts_with(name, prefix)) return true;
  }
  return false;
}

void append_json_count(std::string& out, const char* key, std::uint64_t value, bool comma) {
  if (comma) out += ", ";
  out += '"';
  out += key;
  out += "\": ";
  out += std::to_string(value);
}

void append_json_string(std::string& out, std::string_view text) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  size_t n = text.size();
  for (size_t i = 0; i < n;) {
    unsigned char c = bytes[i];
    if (c < 0x80) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += static_cast<char>(c);
      } else if (c < 0x20) {
        static const char kHex[] = "0123456789abcdef";
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 15];
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    // A well-formed UTF-8 sequence (RFC 3629: no overlongs, no surrogates, <= U+10FFFF).
    size_t length = 0;
    unsigned char low = 0x80, high = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
      length = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
      length = 3;
      if (c == 0xE0) low = 0xA0;
      if (c == 0xED) high = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      length = 4;
      if (c == 0xF0) low = 0x90;
      if (c == 0xF4) high = 0x8F;
    }
    bool valid = length != 0 && i + length <= n;
    for (size_t k = 1; valid && k < length; ++k) {
      unsigned char next = bytes[i + k];
      unsigned char lo = k == 1 ? low : 0x80, hi = k == 1 ? high : 0xBF;
      valid = next >= lo && next <= hi;
    }
    if (valid) {
      out.append(text.data() + i, length);
      i += length;
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD for the offending byte
      ++i;
    }
  }
}

void RecordConverter::start_window() {
  counts_ = WindowCounts{};
  first_event_ = true;
  open_ranges_.clear();
  early_ends_.clear();
  std::fill(launch_slots_.begin(), launch_slots_.end(), LaunchSlot{});
  std::fill(gpu_slots_.begin(), gpu_slots_.end(), LaunchSlot{});
}

WindowCounts RecordConverter::finish_window() {
  counts_.open_ranges_at_stop += open_ranges_.size();
  counts_.unmatched_range_ends += early_ends_.size();
  open_ranges_.clear();
  early_ends_.clear();
  WindowCounts result = counts_;
  counts_ = WindowCounts{};
  return result;
}

const std::string& RecordConverter::kernel_name(const char* pointer) {
  static const std::string kUnnamed = "<unnamed kernel>";
  if (!pointer) return kUnnamed;
  std::string_view mangled = strings_.resolve(pointer);
  auto it = names_.find(pointer);
  // CUPTI shares one name pointer per kernel; the comparison catches a pointer that a module
  // unload freed and a later load reused for another kernel.
  if (it != names_.end() && it->second.mangled == mangled) return it->second.json;
  InternedName interned;
  interned.mangled = std::string(mangled);
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> demangled(
      abi::__cxa_demangle(interned.mangled.c_str(), nullptr, nullptr, &status), &std::free);
  append_json_string(interned.json, status == 0 && demangled ? std::string_view(demangled.get())
                                                             : std::string_view(interned.mangled));
  return (names_[pointer] = std::move(interned)).json;
}

void RecordConverter::begin_event(std::string& out) {
  if (!first_event_) out += ",\n";
  first_event_ = false;
}

void RecordConverter::append_time(std::string& out, std::uint64_t ns) {
  if (ns >= options_.base_ns) {
    append_ns_as_us(out, ns - options_.base_ns);
  } else {
    out += '-';
    append_ns_as_us(out, options_.base_ns - ns);
  }
}

// Key order "ph, cat, name, pid, tid, ts, dur, args" lets kprof's reader skip unwanted events
// from their first fields (src/importers/chrome_trace).
void RecordConverter::append_complete(std::string& out, std::string_view category,
                                      std::string_view name_json, std::uint64_t pid,
                                      std::uint64_t tid, std::uint64_t start, std::uint64_t end) {
  begin_event(out);
  ++counts_.events;
  out += "{\"ph\": \"X\", \"cat\": \"";
  out += category;
  out += "\", \"name\": \"";
  out += name_json;
  out += "\", \"pid\": ";
  append_uint(out, pid);
  out += ", \"tid\": ";
  append_uint(out, tid);
  out += ", \"ts\": ";
  append_time(out, start);
  out += ", \"dur\": ";
  append_ns_as_us(out, end - start);
}

void RecordConverter::append_flow(std::string& out, bool start, std::uint32_t id, std::uint64_t pid,
                                  std::uint64_t tid, std::uint64_t ts) {
  if (!options_.flows || id == 0) return;
  begin_event(out);
  out += start ? "{\"ph\": \"s\"" : "{\"ph\": \"f\"";
  out += ", \"cat\": \"ac2g\", \"name\": \"ac2g\", \"id\": ";
  append_uint(out, id);
  out += ", \"pid\": ";
  append_uint(out, pid);
  out += ", \"tid\": ";
  append_uint(out, tid);
  out += ", \"ts\": ";
  append_time(out, ts);
  out += start ? "}" : ", \"bp\": \"e\"}";
}

void RecordConverter::check_clock(bool is_launch, std::uint32_t correlation, std::uint64_t start,
                                  std::uint32_t device) {
  if (correlation == 0) return;
  size_t slot = correlation & (launch_slots_.size() - 1);
  if (is_launch) {
    launch_slots_[slot] = {correlation, start, 0};
    const LaunchSlot& gpu = gpu_slots_[slot];
    if (gpu.correlation == correlation) {
      DeviceClockCheck& check = counts_.clock_checks[gpu.device];
      ++check.pairs;
      check.gpu_before_launch += gpu.start < start;
    }
    return;
  }
  LaunchSlot& gpu = gpu_slots_[slot];
  if (gpu.correlation != correlation || start < gpu.start) gpu = {correlation, start, device};
  const LaunchSlot& launch = launch_slots_[slot];
  if (launch.correlation == correlation) {
    DeviceClockCheck& check = counts_.clock_checks[device];
    ++check.pairs;
    check.gpu_before_launch += start < launch.start;
  }
}

void RecordConverter::convert(const CUpti_Activity& record, std::string& out) {
  ++counts_.records;
  if (cap_reached()) {
    ++counts_.over_cap;
    return;
  }
  switch (record.kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      on_kernel(reinterpret_cast<const CUpti_ActivityKernel10&>(record), out);
      break;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      on_memcpy(reinterpret_cast<const CUpti_ActivityMemcpy6&>(record), out);
      break;
    case CUPTI_ACTIVITY_KIND_MEMSET:
      on_memset(reinterpret_cast<const CUpti_ActivityMemset4&>(record), out);
      break;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
    case CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API:
      on_api(reinterpret_cast<const CUpti_ActivityAPI&>(record), record.kind, out);
      break;
    case CUPTI_ACTIVITY_KIND_MARKER:
      on_marker(reinterpret_cast<const CUpti_ActivityMarker2&>(record), out);
      break;
    default:
      ++counts_.other_records;
      break;
  }
}

void RecordConverter::on_kernel(const CUpti_ActivityKernel10& k, std::string& out) {
  if (!has_times(k.start, k.end)) {
    ++counts_.incomplete_records;
    return;
  }
  check_clock(false, k.correlationId, k.start, k.deviceId);
  append_complete(out, "kernel", kernel_name(k.name), k.deviceId, k.streamId, k.start, k.end);
  out += ", \"args\": {\"device\": ";
  append_uint(out, k.deviceId);
  out += ", \"context\": ";
  append_uint(out, k.contextId);
  out += ", \"stream\": ";
  append_uint(out, k.streamId);
  out += ", \"correlation\": ";
  append_uint(out, k.correlationId);
  out += ", \"registers per thread\": ";
  append_uint(out, k.registersPerThread);
  out += ", \"shared memory\": ";
  append_int(out, std::int64_t{k.staticSharedMemory} + k.dynamicSharedMemory);
  out += ", \"grid\": [";
  append_int(out, k.gridX);
  out += ", ";
  append_int(out, k.gridY);
  out += ", ";
  append_int(out, k.gridZ);
  out += "], \"block\": [";
  append_int(out, k.blockX);
  out += ", ";
  append_int(out, k.blockY);
  out += ", ";
  append_int(out, k.blockZ);
  out += "], \"static shared memory\": ";
  append_int(out, k.staticSharedMemory);
  out += ", \"dynamic shared memory\": ";
  append_int(out, k.dynamicSharedMemory);
  append_graph_ids(out, k.graphId, k.graphNodeId);
  out += "}}";
  append_flow(out, false, k.correlationId, k.deviceId, k.streamId, k.start);
}

void RecordConverter::on_memcpy(const CUpti_ActivityMemcpy6& m, std::string& out) {
  if (!has_times(m.start, m.end)) {
    ++counts_.incomplete_records;
    return;
  }
  check_clock(false, m.correlationId, m.start, m.deviceId);
  std::string name = "Memcpy ";
  name += copy_kind_name(m.copyKind);
  name += " (";
  name += memory_kind_name(m.srcKind);
  name += " -> ";
  name += memory_kind_name(m.dstKind);
  name += ")";
  append_complete(out, "gpu_memcpy", name, m.deviceId, m.streamId, m.start, m.end);
  append_transfer_args(out, m);
  append_flow(out, false, m.correlationId, m.deviceId, m.streamId, m.start);
}

void RecordConverter::on_memset(const CUpti_ActivityMemset4& m, std::string& out) {
  if (!has_times(m.start, m.end)) {
    ++counts_.incomplete_records;
    return;
  }
  check_clock(false, m.correlationId, m.start, m.deviceId);
  std::string name = "Memset (";
  name += memory_kind_name(m.memoryKind);
  name += ")";
  append_complete(out, "gpu_memset", name, m.deviceId, m.streamId, m.start, m.end);
  append_transfer_args(out, m);
  append_flow(out, false, m.correlationId, m.deviceId, m.streamId, m.start);
}

void RecordConverter::on_api(const CUpti_ActivityAPI& a, CUpti_ActivityKind kind,
                             std::string& out) {
  bool runtime = kind == CUPTI_ACTIVITY_KIND_RUNTIME;
  std::string name;
  if (kind == CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API) {
    // "A driver kernel launch occurring outside of any public API function" (cupti_activity.h):
    // no API name exists; this one says what it is and still reads as a launch to `budget`.
    name = "LaunchKernel (driver-internal)";
  } else {
    const auto& table = runtime ? api_names_.runtime : api_names_.driver;
    if (a.cbid < table.size() && !table[a.cbid].empty()) {
      append_json_string(name, table[a.cbid]);
    } else {
      name = runtime ? "cuda runtime API cbid " : "cuda driver API cbid ";
      name += std::to_string(a.cbid);
    }
  }
  if (a.end < a.start) {
    ++counts_.incomplete_records;
    return;
  }
  check_clock(true, a.correlationId, a.start, 0);
  append_complete(out, runtime ? "cuda_runtime" : "cuda_driver", name, a.processId, a.threadId,
                  a.start, a.end);
  out += ", \"args\": {\"cbid\": ";
  append_uint(out, a.cbid);
  out += ", \"correlation\": ";
  append_uint(out, a.correlationId);
  out += "}}";
  append_flow(out, true, a.correlationId, a.processId, a.threadId, a.start);
}

void RecordConverter::range(std::string& out, const OpenRange& open, std::uint64_t end,
                            std::uint32_t id) {
  append_complete(out, "user_annotation", open.name_json, open.pid, open.tid, open.start,
                  std::max(end, open.start));
  out += ", \"args\": {\"nvtx id\": ";
  append_uint(out, id);
  if (!open.domain_json.empty()) {
    out += ", \"nvtx domain\": \"";
    out += open.domain_json;
    out += '"';
  }
  out += "}}";
}

void RecordConverter::on_marker(const CUpti_ActivityMarker2& m, std::string& out) {
  bool thread = m.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD;
  std::uint32_t pid = m.objectId.pt.processId;
  std::uint32_t tid = thread ? m.objectId.pt.threadId : pid;
  auto text = [&](const char* pointer) {
    std::string json;
    if (pointer) append_json_string(json, strings_.resolve(pointer));
    return json;
  };
  if (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) {
    begin_event(out);
    ++counts_.events;
    out += "{\"ph\": \"i\", \"cat\": \"user_annotation\", \"name\": \"";
    out += text(m.name);
    out += "\", \"pid\": ";
    append_uint(out, pid);
    out += ", \"tid\": ";
    append_uint(out, tid);
    out += ", \"ts\": ";
    append_time(out, m.timestamp);
    out += ", \"s\": \"t\", \"args\": {\"nvtx id\": ";
    append_uint(out, m.id);
    out += "}}";
  } else if (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
    // Push/pop and start/end ranges arrive as a START and an END record sharing the id; they may
    // sit in different buffers (per-thread buffers, ranges ended on another thread).
    OpenRange open{m.timestamp, text(m.name), text(m.domain), pid, tid};
    auto early = early_ends_.find(m.id);
    if (early != early_ends_.end()) {
      range(out, open, early->second, m.id);
      early_ends_.erase(early);
    } else {
      open_ranges_[m.id] = std::move(open);
    }
  } else if (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
    auto it = open_ranges_.find(m.id);
    if (it == open_ranges_.end()) {
      early_ends_[m.id] = m.timestamp;
      return;
    }
    range(out, it->second, m.timestamp, m.id);
    open_ranges_.erase(it);
  } else {
    ++counts_.other_records;  // synchronization markers
  }
}

}  // namespace kprof::tracer
