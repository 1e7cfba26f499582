#include "selftest/calibration_json.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <tuple>

#include "common/error.h"
#include "common/file_bytes.h"
#include "common/json_table.h"
#include "hardware/gpu_specs.h"

namespace kprof::selftest {
namespace {

using nlohmann::json;

template <typename T>
T optional_field(const json& object, const char* key, T fallback) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return fallback;
  return it->get<T>();
}

// "9.0" -> 9, 0; "13.0" -> 13000 (cuDriverGetVersion's encoding).
std::pair<int, int> major_minor(const std::string& text) {
  int major = 0, minor = 0;
  if (std::sscanf(text.c_str(), "%d.%d", &major, &minor) < 1) return {0, 0};
  return {major, minor};
}

Calibration from_document(const json& document) {
  if (!document.is_object() || document.value("schema", "") != "kprof.calibration/1") {
    throw std::invalid_argument("not a calibration: \"schema\" is not \"kprof.calibration/1\"");
  }
  Calibration c;
  const json& gpu = document.at("gpu");
  c.device.name = gpu.at("name").get<std::string>();
  if (c.device.name.empty()) throw std::invalid_argument("gpu.name is empty");
  std::tie(c.device.cc_major, c.device.cc_minor) =
      major_minor(optional_field<std::string>(gpu, "cc", ""));
  c.device.sms = optional_field<int>(gpu, "sms", 0);
  c.device.memory_bytes = optional_field<long long>(gpu, "memory_bytes", 0);
  c.device.l2_bytes = optional_field<long long>(gpu, "l2_bytes", 0);
  c.device.ordinal = optional_field<int>(gpu, "ordinal", 0);
  if (auto driver = document.find("driver"); driver != document.end()) {
    auto [major, minor] = major_minor(optional_field<std::string>(*driver, "cuda", ""));
    c.device.driver_version = major * 1000 + minor * 10;
    c.nvidia_driver = optional_field<std::string>(*driver, "nvidia", "");
  }
  c.date = document.at("date").get<std::string>();
  c.kprof_version = optional_field<std::string>(document, "kprof_version", "");
  std::string arch = optional_field<std::string>(document, "ptx_arch", "");
  if (arch.rfind("sm_", 0) == 0) c.ptx_arch = std::atoi(arch.c_str() + 3);
  std::set<std::string> names;
  for (const json& entry : document.at("ceilings")) {
    Ceiling x;
    x.name = entry.at("name").get<std::string>();
    x.figure = entry.at("figure").get<double>();
    x.unit = entry.at("unit").get<std::string>();
    x.method = entry.at("method").get<std::string>();
    x.repeats = entry.at("repeats").get<int>();
    x.kernel = optional_field<std::string>(entry, "kernel", "");
    x.best_seconds = optional_field<double>(entry, "best_seconds", 0);
    x.median_seconds = optional_field<double>(entry, "median_seconds", 0);
    x.work = optional_field<double>(entry, "work", 0);
    x.work_unit = optional_field<std::string>(entry, "work_unit", "");
    x.code = optional_field<std::string>(entry, "code", "kprof");
    if (auto candidates = entry.find("candidates"); candidates != entry.end()) {
      for (const json& candidate : *candidates) {
        x.candidates.push_back({candidate.at("code").get<std::string>(),
                                optional_field<std::string>(candidate, "kernel", ""),
                                candidate.at("figure").get<double>(),
                                optional_field<std::string>(candidate, "method", "")});
        hardware::check_measured_ceiling(x.name, x.candidates.back().figure, x.unit);
      }
    }
    if (auto launch = entry.find("launch"); launch != entry.end()) {
      x.grid = optional_field<unsigned>(*launch, "grid", 0);
      x.block = optional_field<unsigned>(*launch, "block", 0);
      x.shared_bytes = optional_field<unsigned>(*launch, "shared_bytes", 0);
    }
    hardware::check_measured_ceiling(x.name, x.figure, x.unit);
    if (x.repeats < 1) {
      throw std::invalid_argument(fmt::format("ceiling {}: repeats must be at least 1", x.name));
    }
    if (!names.insert(x.name).second) {
      throw std::invalid_argument(fmt::format("ceiling {} is listed twice", x.name));
    }
    c.ceilings.push_back(std::move(x));
  }
  if (auto notes = document.find("notes"); notes != document.end()) {
    c.notes = notes->get<std::vector<std::string>>();
  }
  return c;
}

}  // namespace

Calibration parse_calibration(const std::string& path, std::string_view text) {
  json document = parse_json_table(path, text);
  try {
    return from_document(document);
  } catch (const json::exception& error) {
    throw_invalid(path, InputPosition::none(),
                  fmt::format("not a valid calibration (kprof.calibration/1): {}", error.what()));
  } catch (const std::invalid_argument& error) {
    throw_invalid(path, InputPosition::none(),
                  fmt::format("not a valid calibration: {}", error.what()));
  }
}

Calibration read_calibration_file(const std::string& path) {
  return parse_calibration(path, read_input_file(path).bytes);
}

nlohmann::json calibration_to_json(const Calibration& c) {
  using nlohmann::json;
  json ceilings = json::array();
  for (const Ceiling& ceiling : c.ceilings) {
    json entry = {{"name", ceiling.name},
                  {"figure", ceiling.figure},
                  {"unit", ceiling.unit},
                  {"method", ceiling.method},
                  {"kernel", ceiling.kernel},
                  {"code", ceiling.code},
                  {"repeats", ceiling.repeats},
                  {"best_seconds", ceiling.best_seconds},
                  {"median_seconds", ceiling.median_seconds},
                  {"work", ceiling.work},
                  {"work_unit", ceiling.work_unit}};
    // A library's GEMM or the driver's copy has no launch of kprof's to describe.
    if (ceiling.grid > 0) {
      entry["launch"] = {
          {"grid", ceiling.grid}, {"block", ceiling.block}, {"shared_bytes", ceiling.shared_bytes}};
    }
    if (ceiling.candidates.size() > 1) {
      json candidates = json::array();
      for (const CeilingCandidate& candidate : ceiling.candidates) {
        candidates.push_back({{"code", candidate.code},
                              {"kernel", candidate.kernel},
                              {"figure", candidate.figure},
                              {"method", candidate.method}});
      }
      entry["candidates"] = std::move(candidates);
    }
    ceilings.push_back(std::move(entry));
  }
  const gpu::DeviceInfo& d = c.device;
  return {{"schema", "kprof.calibration/1"},
          {"gpu",
           {{"name", d.name},
            {"cc", d.compute_capability()},
            {"sms", d.sms},
            {"memory_bytes", d.memory_bytes},
            {"l2_bytes", d.l2_bytes},
            {"ordinal", d.ordinal}}},
          {"driver",
           {{"cuda", d.driver_cuda_version()},
            {"nvidia", c.nvidia_driver.empty() ? json(nullptr) : json(c.nvidia_driver)}}},
          {"date", c.date},
          {"kprof_version", c.kprof_version},
          {"ptx_arch", fmt::format("sm_{}", c.ptx_arch)},
          {"clocks", "as found: kprof neither locks nor resets them"},
          {"ceilings", ceilings},
          {"notes", c.notes}};
}

}  // namespace kprof::selftest
