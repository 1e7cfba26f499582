#include "tracer/cupti_support.h"

#include <charconv>
#include <fstream>
#include <iterator>
#include <vector>

#include "tracer/raw_dump.h"
#include "tracer/trace_file.h"

namespace kprof::tracer {

std::string cupti_error_text(CUptiResult result) {
  const char* text = nullptr;
  if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || !text) {
    return "CUPTI error " + std::to_string(static_cast<int>(result));
  }
  return text;
}

std::string for_each_record(std::uint8_t* buffer, std::size_t valid_bytes,
                            const std::function<void(const CUpti_Activity&)>& visit) {
  if (valid_bytes == 0) return {};
  CUpti_Activity* record = nullptr;
  for (;;) {
    CUptiResult result = cuptiActivityGetNextRecord(buffer, valid_bytes, &record);
    if (result == CUPTI_ERROR_MAX_LIMIT_REACHED) return {};
    if (result != CUPTI_SUCCESS) return "buffer walk stopped: " + cupti_error_text(result);
    visit(*record);
  }
}

ApiNames load_api_names() {
  ApiNames names;
  names.runtime.resize(CUPTI_RUNTIME_TRACE_CBID_SIZE);
  names.driver.resize(CUPTI_DRIVER_TRACE_CBID_SIZE);
  for (std::uint32_t id = 1; id < CUPTI_RUNTIME_TRACE_CBID_SIZE; ++id) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, id, &name) == CUPTI_SUCCESS && name) {
      names.runtime[id] = api_display_name(name, true);
    }
  }
  for (std::uint32_t id = 1; id < CUPTI_DRIVER_TRACE_CBID_SIZE; ++id) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, id, &name) == CUPTI_SUCCESS && name) {
      names.driver[id] = api_display_name(name, false);
    }
  }
  return names;
}

bool convert_raw_dump(const std::string& folder, const std::string& trace_path,
                      std::string* error) {
  RawDump dump;
  if (!read_raw_dump(folder, &dump, error)) return false;
  std::uint32_t version = 0;
  CUptiResult result = cuptiGetVersion(&version);
  if (result != CUPTI_SUCCESS) {
    *error = "cannot ask libcupti for its version: " + cupti_error_text(result);
    return false;
  }
  // The walk's stride is this libcupti's: a dump from another version may lay records out
  // differently.
  if (dump.meta["cupti_version"] != std::to_string(version)) {
    *error = folder + ": recorded with CUPTI " + dump.meta["cupti_version"] +
             ", but the libcupti here is " + std::to_string(version);
    return false;
  }
  auto number = [&](const char* key) {
    std::uint64_t value = 0;
    const std::string& text = dump.meta[key];
    std::from_chars(text.data(), text.data() + text.size(), value);
    return value;
  };
  TraceHeader header;
  header.base_ns = number("base_ns");
  header.cupti_version = version;
  header.pid = static_cast<long>(number("pid"));
  header.host = dump.meta["host"];
  header.window = 1;
  ApiNames api_names = load_api_names();
  DumpStrings strings(dump.names);
  ConverterOptions options;
  options.base_ns = header.base_ns;
  RecordConverter converter(api_names, strings, options);
  converter.start_window();
  auto file = TraceFile::create(trace_path, header, error);
  if (!file) return false;
  std::string events;
  for (const auto& [sequence, path] : dump.buffers) {
    std::ifstream in(path, std::ios::binary);
    std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                    std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) {
      *error = path + ": cannot read";
      return false;
    }
    strings.advance_to(sequence);
    std::string walk_error = for_each_record(
        bytes.data(), bytes.size(), [&](const CUpti_Activity& r) { converter.convert(r, events); });
    if (!walk_error.empty()) {
      *error = path + ": " + walk_error;
      return false;
    }
    if (!file->write(events, error)) return false;
    events.clear();
  }
  WindowSummary summary;
  summary.tracer_version = dump.meta["tracer_version"];
  summary.stop_reason = "raw dump replay";
  summary.max_events = options.max_events;
  summary.counts = converter.finish_window();
  return file->finish(summary, error);
}

}  // namespace kprof::tracer
