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

// Whether a kernel moves data between GPUs, and how; orthogonal to its stage.
enum class CommunicationKind {
  kNone,
  kCollective,      // the "communication" stage: NCCL/RCCL collectives, all-reduce, NVSHMEM
  kExpertParallel,  // expert-parallel all-to-all (DeepEP, pplx, mori…), whose stage is MoE's
};

// An entry of a table's "communication" list: a name its regex matches has this kind (kNone
// for an exception, such as DeepEP's local get_dispatch_layout).
struct CommunicationRule {
  CommunicationKind kind = CommunicationKind::kNone;
  std::string pattern;
  std::shared_ptr<RE2> regex;
};

struct StageTable {
  std::vector<StageRule> rules;
  // Kernels that communicate whatever stage the rules give them (a table's "communication").
  std::vector<CommunicationRule> communication;
  std::string origin;
  // "other" when no rule matches.
  std::string stage_of(const model::Kernel& kernel) const;
  std::string stage_of_name(const std::string& name) const;
  // The first communication rule whose regex matches the name gives the kind; else a name the
  // rules file in the "communication" stage is a collective; else none.
  CommunicationKind communication_kind(std::string_view name) const;
  // communication_kind(name) != kNone.
  bool is_communication(std::string_view name) const;
};

// "none", "collective", "expert_parallel", as a table's file spells them.
const char* communication_kind_name(CommunicationKind kind);

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
