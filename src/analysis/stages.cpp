#include "analysis/stages.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
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
    StageRule r{rule.at("stage").get<std::string>(),
                rule.at("regex").get<std::string>(),
                {},
                rule.value("generated", false)};
    if (has_control_character(r.stage)) {
      throw_table_error(path, describe_table_entry(document, "rules", i), "stage",
                        "a stage name holds no control characters");
    }
    r.regex = compile(path, r.pattern, true, {&document, "rules", i, "regex"});
    table.rules.push_back(std::move(r));
  }
  if (auto list = document.find("operators"); list != document.end()) {
    for (size_t i = 0; i < list->size(); ++i) {
      const json& entry = (*list)[i];
      OperatorRule o{
          entry.at("stage").get<std::string>(), entry.at("regex").get<std::string>(), {}};
      if (has_control_character(o.stage)) {
        throw_table_error(path, describe_table_entry(document, "operators", i), "stage",
                          "a stage name holds no control characters");
      }
      o.regex = compile(path, o.pattern, true, {&document, "operators", i, "regex"});
      table.operators.push_back(std::move(o));
    }
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

// The name's decision from the first matching rule, "other" when none.
StageDecision decide_from_rule(const StageRule* rule) {
  StageDecision d;
  if (!rule) {
    d.stage = "other";
    d.source = StageSource::kNoEvidence;
    d.evidence = "no rule matched the name";
    d.name_names_no_operation = true;
    return d;
  }
  d.stage = rule->stage;
  d.source = StageSource::kName;
  d.name_names_no_operation = rule->generated;
  d.evidence = rule->generated ? "name (a code generator's name: names no operation)" : "name";
  return d;
}

std::optional<double> pct_of_peak(const model::Kernel& kernel, std::string_view base,
                                  std::string_view basis) {
  auto value = kernel.number(fmt::format("{}.avg.pct_of_peak_sustained_{}", base, basis));
  if (value && !std::isfinite(*value)) return std::nullopt;
  return value;
}

// The tensor pipe's busy share however the capture's ncu spells it (all pipes' tensor cycles;
// Ampere's hmma pipe; Volta/Turing's executed tensor instructions).
constexpr const char* kTensorPipeMetrics[] = {
    "sm__pipe_tensor_cycles_active",
    "sm__pipe_tensor_op_hmma_cycles_active",
    "sm__inst_executed_pipe_tensor",
};

std::string percent(double value) {
  return value >= 10 ? fmt::format("{:.0f}%", value) : fmt::format("{:.1f}%", value);
}

}  // namespace

std::optional<TensorPipeEvidence> tensor_pipe_evidence(const model::Kernel& kernel) {
  TensorPipeEvidence e;
  bool any = false;
  // One basis for the tensor and XU readings: "active" (ComputeWorkloadAnalysis) where the
  // capture has it, else "elapsed" (the SpeedOfLight breakdown of --set basic and the triage).
  for (std::string_view basis : {"active", "elapsed"}) {
    for (const char* base : kTensorPipeMetrics) {
      if (auto value = pct_of_peak(kernel, base, basis)) {
        e.tensor_pct = *value;
        e.tensor_metric = fmt::format("{}.avg.pct_of_peak_sustained_{}", base, basis);
        e.xu_pct = pct_of_peak(kernel, "sm__inst_executed_pipe_xu", basis);
        if (e.xu_pct) {
          e.xu_metric =
              fmt::format("sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_{}", basis);
        }
        any = true;
        break;
      }
    }
    if (any) break;
  }
  // The typed tensor-op cycles (Hopper's sm__pipe_tensor_type_hmma_hgmma_qgmma_…) count tensor
  // instructions only: 0 on the FP32 FMA loop that reads 5.6% on the tensor pipe.
  for (const model::Metric& metric : kernel.metrics) {
    const std::string& name = metric.name;
    if (name.rfind("sm__pipe_tensor_type_", 0) != 0) continue;
    if (name.find(".avg.pct_of_peak_sustained_") == std::string::npos) continue;
    auto value = metric.value.number();
    if (!value || !std::isfinite(*value)) continue;
    if (!e.typed_pct || *value > *e.typed_pct) {
      e.typed_pct = *value;
      e.typed_metric = name;
    }
  }
  for (std::string_view basis : {"active", "elapsed"}) {
    if (auto value = pct_of_peak(kernel, "sm__inst_executed_pipe_tensor_op_gmma", basis)) {
      e.gmma_pct = *value;
      e.gmma_metric =
          fmt::format("sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_{}", basis);
      break;
    }
  }
  if (!any && !e.typed_pct && !e.gmma_pct) return std::nullopt;
  e.busy = (any && e.tensor_pct >= kTensorPipeBusyPct) ||
           (e.typed_pct && *e.typed_pct >= kTensorInstructionsPct) ||
           (e.gmma_pct && *e.gmma_pct >= kTensorInstructionsPct);
  e.softmax_beside = e.busy && any && e.tensor_pct > 0 && e.xu_pct && *e.xu_pct >= 1 &&
                     *e.xu_pct >= kAttentionXuPerTensor * e.tensor_pct;
  return e;
}

std::string describe(const TensorPipeEvidence& e) {
  std::string what;
  if (e.tensor_pct >= kTensorPipeBusyPct && !e.tensor_metric.empty()) {
    what = fmt::format("tensor pipe {} busy ({})", percent(e.tensor_pct), e.tensor_metric);
  } else if (e.typed_pct && *e.typed_pct >= kTensorInstructionsPct) {
    what = fmt::format("tensor-core instructions: {} {}", e.typed_metric, percent(*e.typed_pct));
  } else if (e.gmma_pct) {
    what = fmt::format("tensor-core instructions: {} {}", e.gmma_metric, percent(*e.gmma_pct));
  }
  if (e.softmax_beside) {
    what += fmt::format(", XU pipe {} beside it ({}): a softmax's exponentials, attention",
                        percent(*e.xu_pct), e.xu_metric);
  }
  return what;
}

StageDecision StageTable::decide(const model::Kernel& kernel) const {
  const StageRule* matched = nullptr;
  for (const StageRule& rule : rules) {
    if (matches(*rule.regex, kernel)) {
      matched = &rule;
      break;
    }
  }
  StageDecision d = decide_from_rule(matched);
  if (!d.name_names_no_operation) return d;
  auto e = tensor_pipe_evidence(kernel);
  if (!e || !e->busy) return d;
  d.stage = e->softmax_beside ? "attention" : "gemm";
  d.source = StageSource::kCounters;
  d.evidence = "counters: " + describe(*e) +
               (matched ? "; the name is a code generator's and names no operation"
                        : "; no rule matched the name");
  return d;
}

StageDecision StageTable::decide_by_name(std::string_view name) const {
  for (const StageRule& rule : rules) {
    if (RE2::PartialMatch(name, *rule.regex)) return decide_from_rule(&rule);
  }
  return decide_from_rule(nullptr);
}

std::string StageTable::stage_of(const model::Kernel& kernel) const { return decide(kernel).stage; }

StageDecision StageTable::decide_launch(std::string_view kernel_name, std::string_view op) const {
  return decide_launch(decide_by_name(kernel_name), op);
}

StageDecision StageTable::decide_launch(const StageDecision& by_name, std::string_view op) const {
  if (op.empty()) return by_name;
  std::optional<std::string> by_operator = stage_of_operator(op);
  if (!by_operator) return by_name;
  // The name refines the operator's stage ("attention_decode" under "attention"): keep it.
  if (!by_name.name_names_no_operation && by_name.stage.rfind(*by_operator, 0) == 0) {
    return by_name;
  }
  StageDecision d;
  d.stage = *by_operator;
  d.source = StageSource::kOperator;
  d.evidence = fmt::format("operator {}", op);
  d.name_names_no_operation = by_name.name_names_no_operation;
  return d;
}

std::optional<std::string> StageTable::stage_of_operator(std::string_view op) const {
  for (const OperatorRule& rule : operators) {
    if (RE2::PartialMatch(op, *rule.regex)) return rule.stage;
  }
  return std::nullopt;
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

const char* stage_source_name(StageSource source) {
  switch (source) {
    case StageSource::kName:
      return "name";
    case StageSource::kCounters:
      return "counters";
    case StageSource::kOperator:
      return "operator";
    case StageSource::kStep:
      return "step";
    case StageSource::kNoEvidence:
      break;
  }
  return "none";
}

std::string stage_in_step(const std::string& stage, StepPhase phase) {
  if (stage != "attention") return stage;
  if (phase == StepPhase::kDecodeOnly) return "attention_decode";
  if (phase == StepPhase::kPrefillOnly) return "attention_prefill";
  return stage;
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
