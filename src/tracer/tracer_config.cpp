#include "tracer/tracer_config.h"

#include <charconv>
#include <cmath>

namespace kprof::tracer {
namespace {

std::optional<double> parse_seconds(std::string_view text) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value) || value < 0) {
    return std::nullopt;
  }
  return value;
}

std::optional<std::uint64_t> parse_count(std::string_view text) {
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::string check_name_pattern(std::string_view pattern) {
  if (pattern.find('/') != std::string_view::npos) {
    return "a file name, not a path (the folder is KPROF_TRACE_DIR)";
  }
  bool has_pid = false, has_window = false;
  for (size_t open = pattern.find('{'); open != std::string_view::npos;
       open = pattern.find('{', open + 1)) {
    size_t close = pattern.find('}', open);
    std::string_view field = close == std::string_view::npos
                                 ? pattern.substr(open)
                                 : pattern.substr(open, close - open + 1);
    if (field == "{pid}")
      has_pid = true;
    else if (field == "{window}")
      has_window = true;
    else if (field != "{host}")
      return "unknown placeholder " + std::string(field) + " (known: {host}, {pid}, {window})";
  }
  if (!has_pid || !has_window)
    return "must contain {pid} and {window} (one file per process and window)";
  constexpr std::string_view kSuffix = ".json.gz";
  if (pattern.size() <= kSuffix.size() ||
      pattern.substr(pattern.size() - kSuffix.size()) != kSuffix) {
    return "must end in .json.gz (the trace is gzip-compressed JSON)";
  }
  return {};
}

}  // namespace

ConfigResult parse_tracer_config(const EnvLookup& lookup) {
  TracerConfig config;
  auto get = [&](const char* name) -> std::optional<std::string_view> {
    const char* value = lookup(name);
    if (!value || !*value) return std::nullopt;
    return std::string_view(value);
  };
  auto fail = [](const char* name, std::string_view value, const std::string& why) {
    ConfigResult result;
    result.error = std::string(name) + "=\"" + std::string(value) + "\": " + why;
    return result;
  };

  if (auto v = get("KPROF_TRACE_DIR")) config.output_dir = std::string(*v);
  if (auto v = get("KPROF_TRACE_NAME")) {
    std::string why = check_name_pattern(*v);
    if (!why.empty()) return fail("KPROF_TRACE_NAME", *v, why);
    config.name_pattern = std::string(*v);
  }
  if (auto v = get("KPROF_TRACE_START")) {
    if (*v == "now")
      config.start = StartMode::kNow;
    else if (*v == "on-control")
      config.start = StartMode::kOnControl;
    else
      return fail("KPROF_TRACE_START", *v, "expected \"now\" or \"on-control\"");
  }
  if (auto v = get("KPROF_TRACE_CONTROL")) config.control_path = std::string(*v);
  if (auto v = get("KPROF_TRACE_DELAY_S")) {
    auto seconds = parse_seconds(*v);
    if (!seconds) return fail("KPROF_TRACE_DELAY_S", *v, "expected seconds, a number >= 0");
    if (config.start == StartMode::kOnControl) {
      return fail("KPROF_TRACE_DELAY_S", *v,
                  "applies to KPROF_TRACE_START=now; with on-control the control file starts the "
                  "window");
    }
    config.delay_s = *seconds;
  }
  if (auto v = get("KPROF_TRACE_DURATION_S")) {
    auto seconds = parse_seconds(*v);
    if (!seconds) return fail("KPROF_TRACE_DURATION_S", *v, "expected seconds, a number >= 0");
    config.duration_s = *seconds;
  }
  if (config.start == StartMode::kOnControl && config.control_path.empty()) {
    ConfigResult result;
    result.error = "KPROF_TRACE_START=on-control needs KPROF_TRACE_CONTROL (the file to poll)";
    return result;
  }
  if (auto v = get("KPROF_TRACE_MAX_EVENTS")) {
    auto count = parse_count(*v);
    if (!count || *count == 0) return fail("KPROF_TRACE_MAX_EVENTS", *v, "expected a count > 0");
    config.max_events = *count;
  }
  if (auto v = get("KPROF_TRACE_MEMORY_MB")) {
    auto mb = parse_count(*v);
    if (!mb || *mb < 16 || *mb > 65536) {
      return fail("KPROF_TRACE_MEMORY_MB", *v, "expected megabytes from 16 to 65536");
    }
    config.memory_mb = static_cast<std::size_t>(*mb);
  }
  if (auto v = get("KPROF_TRACE_DEVICE_BUFFER_MB")) {
    auto mb = parse_count(*v);
    if (!mb || *mb < 1 || *mb > 1024) {
      return fail("KPROF_TRACE_DEVICE_BUFFER_MB", *v, "expected megabytes from 1 to 1024");
    }
    config.device_buffer_mb = static_cast<std::size_t>(*mb);
  }
  if (auto v = get("KPROF_TRACE_DUMP_RAW")) config.raw_dump_dir = std::string(*v);
  if (auto v = get("KPROF_TRACE_BASE_NS")) {
    auto ns = parse_count(*v);
    if (!ns) return fail("KPROF_TRACE_BASE_NS", *v, "expected nanoseconds since the epoch");
    config.base_ns = *ns;
  }
  if (auto v = get("KPROF_TRACE_FLOWS")) {
    if (*v == "1")
      config.flows = true;
    else if (*v == "0")
      config.flows = false;
    else
      return fail("KPROF_TRACE_FLOWS", *v, "expected 0 or 1");
  }
  if (auto v = get("KPROF_TRACE_API")) {
    if (*v == "1")
      config.api_records = true;
    else if (*v == "0")
      config.api_records = false;
    else
      return fail("KPROF_TRACE_API", *v, "expected 0 or 1");
  }
  ConfigResult result;
  result.config = std::move(config);
  return result;
}

std::string expand_output_name(std::string_view pattern, std::string_view host, long pid,
                               unsigned window) {
  std::string out;
  for (size_t i = 0; i < pattern.size();) {
    auto replace = [&](std::string_view field, std::string_view value) {
      if (pattern.substr(i, field.size()) != field) return false;
      out += value;
      i += field.size();
      return true;
    };
    if (replace("{host}", host) || replace("{pid}", std::to_string(pid)) ||
        replace("{window}", std::to_string(window))) {
      continue;
    }
    out += pattern[i++];
  }
  return out;
}

std::uint64_t kineto_base_time_ns(std::uint64_t realtime_ns) {
  // Kineto (libkineto output_json.h, ChromeTraceBaseTime): 3 months of 7,889,238 s.
  constexpr std::uint64_t kUnitNs = 7'889'238ull * 1'000'000'000ull;
  return realtime_ns / kUnitNs * kUnitNs;
}

}  // namespace kprof::tracer
