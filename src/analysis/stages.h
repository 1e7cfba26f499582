// Pipeline stages and expected bottlenecks, both data tables (data/stages.json,
// data/expected_bottlenecks.json) embedded in the binary and replaceable by user files.
#pragma once

#include <re2/re2.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "model/report.h"

namespace kprof::analysis {

struct StageRule {
  std::string stage;
  std::string pattern;
  std::shared_ptr<RE2> regex;
};

struct StageTable {
  std::vector<StageRule> rules;
  std::string origin;
  // "other" when no rule matches.
  std::string stage_of(const model::Kernel& kernel) const;
  std::string stage_of_name(const std::string& name) const;
};

struct Expectation {
  std::string platform;
  std::string workload;
  std::string kernel;
  std::string expected;  // tensor, fp32, fp64, dram, l2, l1, nvlink, latency, mixed
  std::shared_ptr<RE2> platform_regex, kernel_regex;
};

struct ExpectationTable {
  std::vector<Expectation> expectations;
  std::string origin;
  const Expectation* find(const std::string& gpu_name, const model::Kernel& kernel) const;
};

// Built-in tables, or the user's file instead. A user file is checked against its schema
// (docs/kprof.stages.schema.json, docs/kprof.expectations.schema.json) and its regexes compiled:
// InputError naming the file and the entry when unreadable, not JSON, or not such a table.
StageTable load_stage_table(const std::string& path = "");
ExpectationTable load_expectations(const std::string& path = "");
// The same from a user file's text (path names it in errors).
StageTable parse_stage_table(const std::string& path, std::string_view text);
ExpectationTable parse_expectations(const std::string& path, std::string_view text);

const char* builtin_stages_json();
const char* builtin_expectations_json();
const char* stages_schema_json();        // docs/kprof.stages.schema.json
const char* expectations_schema_json();  // docs/kprof.expectations.schema.json

}  // namespace kprof::analysis
