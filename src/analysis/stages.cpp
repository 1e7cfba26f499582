#include "analysis/stages.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/file_bytes.h"
#include "common/json_table.h"

namespace kprof::analysis {
namespace {

using nlohmann::json;

// Where a regex of a table entry sits, for the error when it does not compile.
struct RegexSite {
  const json* document;
  const char* list;
  size_t index;
  const char* field;
};

std::shared_ptr<RE2> compile(const std::string& path, const std::string& pattern,
                             bool case_insensitive, const RegexSite& site) {
  RE2::Options options;
  options.set_log_errors(false);
  options.set_case_sensitive(!case_insensitive);
  auto regex = std::make_shared<RE2>(pattern, options);
  if (!regex->ok()) {
    throw_table_error(path.empty() ? "built-in table" : path,
                      describe_table_entry(*site.document, site.list, site.index), site.field,
                      fmt::format("regex {} does not compile: {}", quote_json_value(json(pattern)),
                                  regex->error()));
  }
  return regex;
}

bool has_control_character(const std::string& text) {
  return std::any_of(text.begin(), text.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

CommunicationKind communication_kind_from(const std::string& kind) {
  // The schema allows only these three.
  if (kind == "expert_parallel") return CommunicationKind::kExpertParallel;
  if (kind == "collective") return CommunicationKind::kCollective;
  return CommunicationKind::kNone;
}

StageTable stage_table_from(const json& document, const std::string& path) {
  StageTable table;
  table.origin = path.empty() ? "built-in" : path;
  const json& rules = document.at("rules");
  for (size_t i = 0; i < rules.size(); ++i) {
    const json& rule = rules[i];
    StageRule r{rule.at("stage").get<std::string>(), rule.at("regex").get<std::string>(), {}};
    if (has_control_character(r.stage)) {
      throw_table_error(path, describe_table_entry(document, "rules", i), "stage",
                        "a stage name holds no control characters");
    }
    r.regex = compile(path, r.pattern, true, {&document, "rules", i, "regex"});
    table.rules.push_back(std::move(r));
  }
  if (auto list = document.find("communication"); list != document.end()) {
    for (size_t i = 0; i < list->size(); ++i) {
      const json& entry = (*list)[i];
      CommunicationRule c;
      c.kind = communication_kind_from(entry.at("kind").get<std::string>());
      c.pattern = entry.at("regex").get<std::string>();
      c.regex = compile(path, c.pattern, true, {&document, "communication", i, "regex"});
      table.communication.push_back(std::move(c));
    }
  }
  return table;
}

ExpectationTable expectations_from(const json& document, const std::string& path) {
  ExpectationTable table;
  table.origin = path.empty() ? "built-in" : path;
  const json& list = document.at("expectations");
  for (size_t i = 0; i < list.size(); ++i) {
    const json& entry = list[i];
    Expectation e;
    e.platform = entry.at("platform").get<std::string>();
    e.workload = entry.value("workload", "");
    e.kernel = entry.at("kernel").get<std::string>();
    e.expected = entry.at("expected").get<std::string>();
    e.platform_regex = compile(path, e.platform, false, {&document, "expectations", i, "platform"});
    e.kernel_regex = compile(path, e.kernel, false, {&document, "expectations", i, "kernel"});
    table.expectations.push_back(std::move(e));
  }
  return table;
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

CommunicationKind StageTable::communication_kind(std::string_view name) const {
  for (const CommunicationRule& rule : communication) {
    if (RE2::PartialMatch(name, *rule.regex)) return rule.kind;
  }
  return stage_of_name(std::string(name)) == "communication" ? CommunicationKind::kCollective
                                                             : CommunicationKind::kNone;
}

bool StageTable::is_communication(std::string_view name) const {
  return communication_kind(name) != CommunicationKind::kNone;
}

const char* communication_kind_name(CommunicationKind kind) {
  switch (kind) {
    case CommunicationKind::kCollective:
      return "collective";
    case CommunicationKind::kExpertParallel:
      return "expert_parallel";
    case CommunicationKind::kNone:
      break;
  }
  return "none";
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

StageTable parse_stage_table(const std::string& path, std::string_view text) {
  json document = parse_json_table(path, text);
  check_json_table(document, stages_schema_json(), path);
  return stage_table_from(document, path);
}

ExpectationTable parse_expectations(const std::string& path, std::string_view text) {
  json document = parse_json_table(path, text);
  check_json_table(document, expectations_schema_json(), path);
  return expectations_from(document, path);
}

StageTable load_stage_table(const std::string& path) {
  if (path.empty()) return stage_table_from(json::parse(builtin_stages_json()), "");
  return parse_stage_table(path, read_input_file(path).bytes);
}

ExpectationTable load_expectations(const std::string& path) {
  if (path.empty()) return expectations_from(json::parse(builtin_expectations_json()), "");
  return parse_expectations(path, read_input_file(path).bytes);
}

}  // namespace kprof::analysis
