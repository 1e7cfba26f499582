#include "hardware/gpu_specs.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "common/error.h"
#include "common/file_bytes.h"
#include "common/json_table.h"

namespace kprof::hardware {
namespace {

using nlohmann::json;

// An entry's match as device_match_length applies it: case-insensitive, the pattern (its span
// captured) between word boundaries. Unanchored and first-match, "H200" took "NVIDIA GH200
// 480GB" for an H200 SXM and "A100.*(SXM|80GB)" took "NVIDIA A100-SXM4-40GB" for the 80 GB part
// (issue 43). RE2 has no \b lookarounds across the group, so the boundaries are characters.
std::shared_ptr<const RE2> compile_match(const std::string& match) {
  RE2::Options options;
  options.set_log_errors(false);
  options.set_case_sensitive(false);
  auto regex =
      std::make_shared<RE2>("(?:^|[^0-9A-Za-z])(" + match + ")(?:[^0-9A-Za-z]|$)", options);
  if (!regex->ok()) return nullptr;
  return regex;
}

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
  spec.match_regex = compile_match(spec.match);
  return spec;
}

// What the schema cannot say: each match regex compiles, each cc reads MAJOR.MINOR.
void check_user_gpus(const json& document, const std::string& path) {
  const json& gpus = document.at("gpus");
  for (size_t i = 0; i < gpus.size(); ++i) {
    const json& entry = gpus[i];
    if (auto match = entry.find("match"); match != entry.end()) {
      RE2 regex(match->get<std::string>(), RE2::Quiet);
      if (!regex.ok()) {
        throw_table_error(
            path, describe_table_entry(document, "gpus", i), "match",
            fmt::format("regex {} does not compile: {}", quote_json_value(*match), regex.error()));
      }
    }
    if (auto cc = entry.find("cc"); cc != entry.end()) {
      static const RE2 kComputeCapability("\\d{1,2}\\.\\d{1,2}");
      if (!RE2::FullMatch(cc->get<std::string>(), kComputeCapability)) {
        throw_table_error(path, describe_table_entry(document, "gpus", i), "cc",
                          fmt::format("expected a compute capability MAJOR.MINOR such as \"9.0\", "
                                      "found {}",
                                      quote_json_value(*cc)));
      }
    }
  }
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

void check_measured_ceiling(const std::string& name, double figure, const std::string& unit) {
  auto ends_with = [&](std::string_view suffix) {
    return name.size() >= suffix.size() &&
           std::string_view(name).substr(name.size() - suffix.size()) == suffix;
  };
  std::string expected;
  if (name == "dram_bandwidth" || name == "l2_bandwidth" || ends_with("_bandwidth")) {
    expected = "byte/s";
  } else if (ends_with("_flops")) {
    expected = "flop/s";
  } else if (name.rfind("launch_", 0) == 0 || name.find("latency") != std::string::npos) {
    expected = "s";  // launch_back_to_back, launch_to_completion
  }
  if (unit != "byte/s" && unit != "flop/s" && unit != "s") {
    throw std::invalid_argument(
        fmt::format("ceiling {}: unit must be byte/s, flop/s or s, not \"{}\"", name, unit));
  }
  if (!expected.empty() && unit != expected) {
    throw std::invalid_argument(fmt::format("ceiling {}: a {} is in {}, not {}", name,
                                            expected == "byte/s"   ? "bandwidth"
                                            : expected == "flop/s" ? "rate"
                                                                   : "latency",
                                            expected, unit));
  }
  struct Range {
    double low, high;
    const char* said;
  };
  const Range range = unit == "byte/s"   ? Range{1e9, 1e15, "1 GB/s to 1 PB/s"}
                      : unit == "flop/s" ? Range{1e9, 1e18, "1 GFLOP/s to 1 EFLOP/s"}
                                         : Range{1e-8, 1.0, "10 ns to 1 s"};
  if (!std::isfinite(figure) || figure < range.low || figure > range.high) {
    throw std::invalid_argument(fmt::format(
        "ceiling {}: {:g} {} is not a figure a GPU measures ({})", name, figure, unit, range.said));
  }
}

namespace {

// A calibration: its ceilings attach to the GPU it measured (json::exception for a missing or
// mistyped field, std::invalid_argument for a value out of range; the caller names the file).
void apply_calibration(GpuDatabase& db, const json& document, const std::string& path) {
  const json& gpu = document.at("gpu");
  std::string device_name = gpu.at("name").get<std::string>();
  if (device_name.empty()) throw std::invalid_argument("gpu.name is empty");
  std::map<std::string, MeasuredCeiling> measured;
  for (const json& entry : document.at("ceilings")) {
    std::string name = entry.at("name").get<std::string>();
    MeasuredCeiling ceiling;
    ceiling.figure = entry.at("figure").get<double>();
    ceiling.unit = entry.at("unit").get<std::string>();
    ceiling.method = entry.at("method").get<std::string>();
    ceiling.repeats = entry.at("repeats").get<int>();
    check_measured_ceiling(name, ceiling.figure, ceiling.unit);
    if (ceiling.repeats < 1) {
      throw std::invalid_argument(fmt::format("ceiling {}: repeats must be at least 1", name));
    }
    if (!measured.emplace(name, ceiling).second) {
      throw std::invalid_argument(fmt::format("ceiling {} is listed twice", name));
    }
  }
  std::string driver;
  if (auto it = document.find("driver"); it != document.end() && it->contains("cuda")) {
    driver = ", CUDA " + it->at("cuda").get<std::string>();
    if (it->contains("nvidia") && it->at("nvidia").is_string()) {
      driver += ", driver " + it->at("nvidia").get<std::string>();
    }
  }
  std::string source = fmt::format("{}: {}, {}{}", path, device_name,
                                   document.at("date").get<std::string>(), driver);
  // The entry the analyses take for that device (the same rule), else one of its own.
  GpuSpec* spec = const_cast<GpuSpec*>(db.find_for_device(device_name));
  if (!spec) {
    // A GPU the database does not know: an entry of its own, matching exactly that name.
    GpuSpec added;
    added.name = device_name;
    added.match = "^" + RE2::QuoteMeta(device_name) + "$";
    added.compute_capability = gpu.value("cc", "");
    added.sms = optional_number(gpu, "sms");
    added.match_regex = compile_match(added.match);
    db.gpus.insert(db.gpus.begin(), std::move(added));
    spec = &db.gpus.front();
  }
  spec->measured = std::move(measured);
  spec->measured_source = std::move(source);
}

}  // namespace

std::optional<size_t> device_match_length(const GpuSpec& spec, std::string_view device_name) {
  re2::StringPiece matched;
  if (!spec.match_regex || !RE2::PartialMatch(device_name, *spec.match_regex, &matched)) {
    return std::nullopt;
  }
  return matched.size();
}

const GpuSpec* GpuDatabase::find_for_device(const std::string& device_name) const {
  const GpuSpec* best = nullptr;
  size_t best_length = 0;
  for (const GpuSpec& spec : gpus) {
    auto length = device_match_length(spec, device_name);
    // Longest first: "NVIDIA H200 NVL" is the H200 NVL, which "H200" (the SXM part) also finds.
    if (length && (!best || *length > best_length)) {
      best = &spec;
      best_length = *length;
    }
  }
  return best;
}

std::vector<const GpuSpec*> GpuDatabase::find_named(const std::string& name) const {
  auto lower = [](std::string text) {
    for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return text;
  };
  for (const GpuSpec& spec : gpus) {
    if (lower(spec.name) == lower(name)) return {&spec};
  }
  if (const GpuSpec* spec = find_for_device(name)) return {spec};
  std::vector<const GpuSpec*> named;
  GpuSpec words;
  words.match_regex = compile_match(RE2::QuoteMeta(name));
  for (const GpuSpec& spec : gpus) {
    if (device_match_length(words, spec.name)) named.push_back(&spec);
  }
  return named;
}

const GpuSpec* GpuDatabase::find_by_name(const std::string& name) const {
  std::vector<const GpuSpec*> named = find_named(name);
  return named.size() == 1 ? named.front() : nullptr;
}

GpuDatabase load_gpu_database(const std::string& override_path) {
  if (override_path.empty()) {
    // Parsed once: every user table (--gpus, a calibration) starts from a copy of it.
    static const GpuDatabase builtin_database = [] {
      GpuDatabase db;
      db.origin = "built-in";
      json builtin = json::parse(builtin_gpus_json());
      for (const json& entry : builtin.at("gpus")) db.gpus.push_back(parse_gpu(entry));
      for (auto& [key, value] : builtin.at("sources").items()) {
        db.sources[key] = value.get<std::string>();
      }
      return db;
    }();
    return builtin_database;
  }
  return load_gpu_database_text(override_path, read_input_file(override_path).bytes);
}

GpuDatabase load_gpu_database_text(const std::string& path, std::string_view text) {
  GpuDatabase db = load_gpu_database();
  json document = parse_json_table(path, text);
  auto schema = document.is_object() ? document.find("schema") : document.end();
  bool calibration = schema != document.end() && schema->is_string() &&
                     schema->get_ref<const std::string&>() == "kprof.calibration/1";
  if (calibration) {
    // A calibration is checked field by field as it is applied (its schema, docs/
    // kprof.calibration.schema.json, is draft 2020-12).
    try {
      apply_calibration(db, document, path);
    } catch (const json::exception& error) {
      throw_invalid(path, InputPosition::none(),
                    fmt::format("not a valid calibration (kprof.calibration/1): {}", error.what()));
    } catch (const std::invalid_argument& error) {
      throw_invalid(path, InputPosition::none(),
                    fmt::format("not a valid calibration: {}", error.what()));
    }
  } else {
    check_json_table(document, gpus_schema_json(), path);
    check_user_gpus(document, path);
    merge(db, document);
  }
  db.origin = "built-in + " + path;
  return db;
}

}  // namespace kprof::hardware
