#include "hardware/gpu_specs.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/file_bytes.h"

namespace kprof::hardware {
namespace {

using nlohmann::json;

std::optional<double> optional_number(const json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

GpuSpec parse_gpu(const json& entry) {
  GpuSpec spec;
  spec.name = entry.at("name").get<std::string>();
  spec.match = entry.value("match", spec.name);
  spec.compute_capability = entry.value("cc", "");
  spec.sms = optional_number(entry, "sms");
  spec.boost_clock_mhz = optional_number(entry, "boost_clock_mhz");
  spec.memory_gb = optional_number(entry, "memory_gb");
  spec.memory_bandwidth_tbs = optional_number(entry, "memory_bandwidth_tbs");
  spec.l2_mb = optional_number(entry, "l2_mb");
  spec.smem_per_sm_kb = optional_number(entry, "smem_per_sm_kb");
  spec.smem_per_block_kb = optional_number(entry, "smem_per_block_kb");
  spec.registers_per_sm = optional_number(entry, "registers_per_sm");
  spec.max_warps_per_sm = optional_number(entry, "max_warps_per_sm");
  spec.max_blocks_per_sm = optional_number(entry, "max_blocks_per_sm");
  if (auto peaks = entry.find("peak_tflops"); peaks != entry.end()) {
    for (auto& [key, value] : peaks->items()) spec.peak_tflops[key] = value.get<double>();
  }
  if (auto sources = entry.find("sources"); sources != entry.end()) {
    for (auto& [key, value] : sources->items()) spec.sources[key] = value.get<std::string>();
  }
  auto regex = std::make_shared<RE2>(spec.match, RE2::Quiet);
  if (regex->ok()) spec.match_regex = regex;
  return spec;
}

void merge(GpuDatabase& db, const json& document) {
  if (auto sources = document.find("sources"); sources != document.end()) {
    for (auto& [key, value] : sources->items()) db.sources[key] = value.get<std::string>();
  }
  for (const json& entry : document.at("gpus")) {
    GpuSpec spec = parse_gpu(entry);
    bool replaced = false;
    for (GpuSpec& existing : db.gpus) {
      if (existing.name == spec.name) {
        existing = spec;
        replaced = true;
      }
    }
    // User entries go first so that their match patterns win over the built-in ones.
    if (!replaced) db.gpus.insert(db.gpus.begin(), spec);
  }
}

}  // namespace

const GpuSpec* GpuDatabase::find_for_device(const std::string& device_name) const {
  for (const GpuSpec& spec : gpus) {
    if (spec.match_regex && RE2::PartialMatch(device_name, *spec.match_regex)) return &spec;
  }
  return nullptr;
}

const GpuSpec* GpuDatabase::find_by_name(const std::string& name) const {
  for (const GpuSpec& spec : gpus) {
    if (spec.name == name) return &spec;
  }
  for (const GpuSpec& spec : gpus) {
    RE2 pattern("(?i)" + RE2::QuoteMeta(name), RE2::Quiet);
    if (RE2::PartialMatch(spec.name, pattern)) return &spec;
  }
  return nullptr;
}

GpuDatabase load_gpu_database(const std::string& override_path) {
  GpuDatabase db;
  db.origin = "built-in";
  json builtin = json::parse(builtin_gpus_json());
  std::vector<GpuSpec> ordered;
  for (const json& entry : builtin.at("gpus")) db.gpus.push_back(parse_gpu(entry));
  for (auto& [key, value] : builtin.at("sources").items()) db.sources[key] = value.get<std::string>();
  if (override_path.empty()) return db;
  FileBytes file = read_input_file(override_path);
  try {
    json document = json::parse(file.bytes);
    merge(db, document);
  } catch (const json::parse_error& error) {
    throw_invalid(override_path, InputPosition::byte(error.byte),
                  fmt::format("not valid JSON: {}", error.what()));
  } catch (const json::exception& error) {
    throw_invalid(override_path, InputPosition::none(),
                  fmt::format("not a GPU database (expected {{\"gpus\": [{{\"name\": …}}]}}): {}",
                              error.what()));
  }
  db.origin = "built-in + " + override_path;
  return db;
}

}  // namespace kprof::hardware
