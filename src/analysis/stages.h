// Pipeline stages and expected bottlenecks, both data tables (data/stages.json,
// data/expected_bottlenecks.json) embedded in the binary and replaceable by user files.
#pragma once

#include <re2/re2.h>

#include <memory>
#include <string>
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

// Built-in tables, or the user's file instead (InputError when unreadable, invalid JSON, or a
// regex that does not compile).
StageTable load_stage_table(const std::string& path = "");
ExpectationTable load_expectations(const std::string& path = "");

const char* builtin_stages_json();
const char* builtin_expectations_json();

}  // namespace kprof::analysis
