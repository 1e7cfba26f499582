#include "analysis/stages.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/file_bytes.h"

namespace kprof::analysis {
namespace {

using nlohmann::json;

json read_table(const std::string& path, const char* builtin) {
  if (path.empty()) return json::parse(builtin);
  FileBytes file = read_input_file(path);
  try {
    return json::parse(file.bytes);
  } catch (const json::parse_error& error) {
    throw_invalid(path, InputPosition::byte(error.byte),
                  fmt::format("not valid JSON: {}", error.what()));
  }
}

std::shared_ptr<RE2> compile(const std::string& path, const std::string& pattern,
                             bool case_insensitive) {
  RE2::Options options;
  options.set_log_errors(false);
  options.set_case_sensitive(!case_insensitive);
  auto regex = std::make_shared<RE2>(pattern, options);
  if (!regex->ok()) {
    throw_invalid(path.empty() ? "built-in table" : path, InputPosition::none(),
                  fmt::format("regex \"{}\" does not compile: {}", pattern, regex->error()));
  }
  return regex;
}

bool matches(const RE2& regex, const model::Kernel& kernel) {
  return RE2::PartialMatch(kernel.function_name, regex) ||
         RE2::PartialMatch(kernel.demangled_name, regex) ||
         RE2::PartialMatch(kernel.mangled_name, regex);
}

}  // namespace

std::string StageTable::stage_of(const model::Kernel& kernel) const {
  for (const StageRule& rule : rules) {
    if (matches(*rule.regex, kernel)) return rule.stage;
  }
  return "other";
}

std::string StageTable::stage_of_name(const std::string& name) const {
  for (const StageRule& rule : rules) {
    if (RE2::PartialMatch(name, *rule.regex)) return rule.stage;
  }
  return "other";
}

const Expectation* ExpectationTable::find(const std::string& gpu_name,
                                          const model::Kernel& kernel) const {
  for (const Expectation& e : expectations) {
    if (RE2::PartialMatch(gpu_name, *e.platform_regex) && matches(*e.kernel_regex, kernel)) {
      return &e;
    }
  }
  return nullptr;
}

StageTable load_stage_table(const std::string& path) {
  json document = read_table(path, builtin_stages_json());
  StageTable table;
  table.origin = path.empty() ? "built-in" : path;
  try {
    for (const json& rule : document.at("rules")) {
      StageRule r{rule.at("stage").get<std::string>(), rule.at("regex").get<std::string>(), {}};
      r.regex = compile(path, r.pattern, true);
      table.rules.push_back(std::move(r));
    }
  } catch (const json::exception& error) {
    throw_invalid(path, InputPosition::none(),
                  fmt::format("not a stage table (expected {{\"rules\": [{{\"stage\": …, "
                              "\"regex\": …}}]}}): {}",
                              error.what()));
  }
  return table;
}

ExpectationTable load_expectations(const std::string& path) {
  json document = read_table(path, builtin_expectations_json());
  ExpectationTable table;
  table.origin = path.empty() ? "built-in" : path;
  try {
    for (const json& entry : document.at("expectations")) {
      Expectation e;
      e.platform = entry.at("platform").get<std::string>();
      e.workload = entry.value("workload", "");
      e.kernel = entry.at("kernel").get<std::string>();
      e.expected = entry.at("expected").get<std::string>();
      e.platform_regex = compile(path, e.platform, false);
      e.kernel_regex = compile(path, e.kernel, false);
      table.expectations.push_back(std::move(e));
    }
  } catch (const json::exception& error) {
    throw_invalid(path, InputPosition::none(),
                  fmt::format("not an expectation table: {}", error.what()));
  }
  return table;
}

}  // namespace kprof::analysis
