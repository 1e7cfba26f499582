#include "selftest/selftest_table.h"

#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

#include "common/error.h"
#include "common/file_bytes.h"

namespace kprof::selftest {
namespace {

using nlohmann::json;

// Thrown inside parsing with what is wrong; turned into one InputError naming the origin.
struct Malformed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

GridSpec parse_grid(const json& grid) {
  if (!grid.is_object() || grid.size() != 1) {
    throw Malformed(
        "grid must be one of {\"blocks\": N}, {\"per_sm\": K}, {\"resident_waves\": W}");
  }
  auto [key, value] = *grid.items().begin();
  if (!value.is_number_integer() || value.get<long long>() < 1) {
    throw Malformed(fmt::format("grid {} must be a whole number of at least 1", key));
  }
  GridSpec spec;
  spec.value = value.get<long long>();
  if (key == "blocks") {
    spec.kind = GridSpec::Kind::kBlocks;
  } else if (key == "per_sm") {
    spec.kind = GridSpec::Kind::kPerSm;
  } else if (key == "resident_waves") {
    spec.kind = GridSpec::Kind::kResidentWaves;
  } else {
    throw Malformed(fmt::format("unknown grid form \"{}\"", key));
  }
  return spec;
}

LaunchSpec parse_launch(const json& launch) {
  LaunchSpec spec;
  spec.grid = parse_grid(launch.at("grid"));
  long long block = launch.at("block").get<long long>();
  if (block < 1 || block > 1024) throw Malformed("block must be 1 to 1024 threads");
  spec.block = static_cast<unsigned>(block);
  const json& shared = launch.at("shared_bytes");
  if (shared.is_string()) {
    if (shared.get<std::string>() != "max_optin") {
      throw Malformed("shared_bytes must be a number or \"max_optin\"");
    }
    spec.shared_max_optin = true;
  } else {
    long long bytes = shared.get<long long>();
    if (bytes < 0 || bytes > (1 << 20)) throw Malformed("shared_bytes out of range");
    spec.shared_bytes = static_cast<unsigned>(bytes);
  }
  spec.iterations = launch.at("iterations").get<long long>();
  spec.buffer_bytes = launch.at("buffer_bytes").get<long long>();
  if (spec.iterations < 0 || spec.iterations > (1LL << 31) - 1) {
    throw Malformed("iterations must fit a 32-bit int");
  }
  if (spec.buffer_bytes < 0) throw Malformed("buffer_bytes must not be negative");
  return spec;
}

const std::set<std::string> kRooflines = {"compute-bound", "memory-bound", "latency-bound",
                                          "at the ridge",  "issue-bound",  "overhead-bound"};
const std::set<std::string> kLimiters = {"none",  "registers", "shared_memory",
                                         "warps", "blocks",    "barriers"};

Expectation parse_expected(const json& expected) {
  Expectation e;
  e.roofline = expected.at("roofline").get<std::string>();
  e.bound_by = expected.at("bound_by").get<std::string>();
  e.occupancy_limiter = expected.at("occupancy_limiter").get<std::string>();
  if (!kRooflines.contains(e.roofline)) {
    throw Malformed(fmt::format("unknown roofline \"{}\"", e.roofline));
  }
  if (!kLimiters.contains(e.occupancy_limiter)) {
    throw Malformed(fmt::format("unknown occupancy limiter \"{}\"", e.occupancy_limiter));
  }
  return e;
}

int parse_min_arch(const std::string& cc) {
  int major = 0, minor = 0;
  char dot = 0;
  if (std::sscanf(cc.c_str(), "%d%c%d", &major, &dot, &minor) != 3 || dot != '.' || minor > 9) {
    throw Malformed(fmt::format("min_cc \"{}\" is not MAJOR.MINOR", cc));
  }
  return major * 10 + minor;
}

}  // namespace

const KernelSpec* SelftestTable::find(const std::string& kernel) const {
  for (const KernelSpec& spec : kernels) {
    if (spec.kernel == kernel) return &spec;
  }
  return nullptr;
}

std::vector<std::string> SelftestTable::selftest_kernels() const {
  std::vector<std::string> names;
  for (const KernelSpec& spec : kernels) {
    if (spec.role == "selftest") names.push_back(spec.kernel);
  }
  return names;
}

SelftestTable parse_selftest_table(const std::string& json_text, const std::string& origin) {
  SelftestTable table;
  table.origin = origin;
  json document;
  try {
    document = json::parse(json_text);
  } catch (const json::parse_error& error) {
    throw_invalid(origin, InputPosition::byte(error.byte),
                  fmt::format("not valid JSON: {}", error.what()));
  }
  std::string where = "the document";
  try {
    if (document.value("schema", "") != "kprof.selftest-expectations/1") {
      throw Malformed("schema is not \"kprof.selftest-expectations/1\"");
    }
    for (const json& entry : document.at("kernels")) {
      KernelSpec spec;
      spec.kernel = entry.at("kernel").get<std::string>();
      where = "kernel \"" + spec.kernel + "\"";
      if (table.find(spec.kernel)) throw Malformed("listed twice");
      spec.role = entry.at("role").get<std::string>();
      if (spec.role != "selftest" && spec.role != "calibration") {
        throw Malformed("role must be \"selftest\" or \"calibration\"");
      }
      spec.what = entry.value("what", "");
      if (entry.contains("min_cc"))
        spec.min_arch = parse_min_arch(entry.at("min_cc").get<std::string>());
      if (auto emulated = entry.find("emulated_on"); emulated != entry.end()) {
        for (const json& cc : emulated->at("cc")) {
          spec.emulated_on.push_back(parse_min_arch(cc.get<std::string>()));
        }
        spec.emulated_why = emulated->at("why").get<std::string>();
      }
      spec.launch = parse_launch(entry.at("launch"));
      if (spec.role == "selftest") spec.expected = parse_expected(entry.at("expected"));
      if (auto suite = entry.find("bottleneck_suite"); suite != entry.end() && !suite->is_null()) {
        SuiteCounterpart counterpart;
        counterpart.kernel = suite->at("kernel").get<std::string>();
        counterpart.same_design = suite->at("same_design").get<bool>();
        counterpart.differs_in = suite->at("differs_in").get<std::vector<std::string>>();
        counterpart.note = suite->value("note", "");
        spec.bottleneck_suite = std::move(counterpart);
      }
      table.kernels.push_back(std::move(spec));
    }
  } catch (const Malformed& error) {
    throw_invalid(origin, InputPosition::none(),
                  fmt::format("not a selftest table: {}: {}", where, error.what()));
  } catch (const json::exception& error) {
    throw_invalid(origin, InputPosition::none(),
                  fmt::format("not a selftest table: {}: {}", where, error.what()));
  }
  return table;
}

SelftestTable load_selftest_table(const std::string& path) {
  if (path.empty()) return parse_selftest_table(builtin_selftest_json(), "built-in");
  return parse_selftest_table(read_input_file(path).bytes, path);
}

}  // namespace kprof::selftest
