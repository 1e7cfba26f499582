// Pipeline stages and expected bottlenecks, both data tables (data/stages.json,
// data/expected_bottlenecks.json) embedded in the binary and replaceable by user files.
#pragma once

#include <re2/re2.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/report.h"

namespace kprof::analysis {

struct StageRule {
  std::string stage;
  std::string pattern;
  std::shared_ptr<RE2> regex;
  // The names it matches are a code generator's and name no operation (nvFuser's 'none'
  // scheduler, TileLang's main_kernel, an op-less Inductor template): the kernel's counters or
  // its launching operator decide before this rule's stage (a table's "generated": true).
  bool generated = false;
};

// Where a kernel's stage came from.
enum class StageSource {
  kName,       // a rule of the table matched the kernel's name
  kCounters,   // the kernel's own counters (tensor pipe), the name naming no operation
  kOperator,   // the operator that launched it (a trace's cpu_op), stage_of_operator
  kStep,       // the name's "attention" (no phase in it), the phase from its steps' batches
  kNoEvidence  // no rule matched and nothing else decided: "other"
};

// A kernel's stage and the evidence it rests on, for a verdict to print beside the stage.
struct StageDecision {
  std::string stage;  // "other" when nothing decided
  StageSource source = StageSource::kNoEvidence;
  // What decided, in words: "name", "name (generated kernel: names no operation)", "counters:
  // tensor pipe 87% busy (sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active)",
  // "operator aten::mm", "no rule matched the name".
  std::string evidence;
  // The name names no operation (no rule matched, or a rule marked "generated" did): a trace
  // should prefer its launching operator or module, a report the kernel's counters.
  bool name_names_no_operation = false;
};

// The tensor-core evidence of one captured kernel (a report's counters), when the capture has
// any of it. Three readings, each % of peak:
//   tensor_pct  the tensor pipe's busy cycles (sm__pipe_tensor_cycles_active, or Ampere's
//               sm__pipe_tensor_op_hmma_cycles_active, Volta/Turing's
//               sm__inst_executed_pipe_tensor; "active" preferred to "elapsed"): the figure a user
//               knows, but not clean: FP32 and FP64 math share its cycles;
//   typed_pct   the typed tensor-op cycles (sm__pipe_tensor_type_hmma_hgmma_qgmma_…, in the
//               SpeedOfLight breakdown of recent ncu): tensor instructions only;
//   gmma_pct    Hopper's warpgroup MMA instructions (sm__inst_executed_pipe_tensor_op_gmma).
// and the XU pipe (exp, rcp: a softmax's transcendental work) on tensor_pct's basis.
struct TensorPipeEvidence {
  double tensor_pct = 0;
  std::string tensor_metric;  // empty when the capture has no untyped tensor-pipe reading
  std::optional<double> typed_pct;
  std::string typed_metric;
  std::optional<double> gmma_pct;
  std::string gmma_metric;
  std::optional<double> xu_pct;
  std::string xu_metric;
  // tensor_pct >= kTensorPipeBusyPct, or typed_pct or gmma_pct >= kTensorInstructionsPct: the
  // kernel runs matrix math on the tensor cores (a GEMM, a convolution or an attention).
  bool busy = false;
  // busy, and the XU pipe at least kAttentionXuPerTensor of tensor_pct (and 1%): a softmax's
  // exponentials beside the MMAs, an attention. A GEMM epilogue's transcendental (GELU, SiLU)
  // is one per output over K multiply-adds: a far smaller share.
  bool softmax_beside = false;
};

// Thresholds, from the H200 captures in data/h200 (big_full, big_basic, compiled_decode_full,
// bottleneck_suite_full, the triage capture):
// the untyped tensor pipe reads up to 5.6% on kernels without a tensor instruction (the
// bottleneck suite's FP32 FMA loop; 1.5% its FP64 loop, under 0.3% everything else) and 94-98%
// on a prefill GEMM and a WMMA loop, but only 2.1-10% on skinny decode GEMMs (nvjet 64x8 ...
// 256x16) and 8.8-12% on cuDNN's sm80 flash attention at decode: hence a 20% bar for it alone,
constexpr double kTensorPipeBusyPct = 20;
// and a 1% bar for the clean readings: typed tensor-op cycles are <= 3e-8% on every
// non-tensor kernel there and >= 2.1% on the smallest decode GEMM; Hopper's wgmma instruction
// share is exactly 0 on every non-wgmma kernel there and >= 2.4% on that GEMM.
constexpr double kTensorInstructionsPct = 1;
// One exp per attention score against 2 x head_dim multiply-adds (QK^T and PV): XU/tensor ~
// 32/head_dim (16 XU results and ~1,024 tensor multiply-adds per SM-cycle); measured 0.38-0.53
// on cuDNN's flash attention (wmma and wgmma) on the H200, 0 on every nvjet GEMM. A GEMM with a
// transcendental epilogue reads ~64/K: under 0.06 for K >= 1024. An attention of head dim above
// ~300 (MLA's 576) reads as a GEMM: the pipes alone cannot tell them apart.
constexpr double kAttentionXuPerTensor = 0.1;

std::optional<TensorPipeEvidence> tensor_pipe_evidence(const model::Kernel& kernel);
// "tensor pipe 94% busy (sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active)", with
// the XU reading when softmax_beside; the figure and metric that made it busy.
std::string describe(const TensorPipeEvidence& evidence);

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

// An entry of a table's "operators": a kernel launched by an operator its regex matches is of
// this stage.
struct OperatorRule {
  std::string stage;
  std::string pattern;
  std::shared_ptr<RE2> regex;
};

// What a trace knows of a kernel's step (its annotation: vLLM's
// execute_context_<P>(<PT>)_generation_<D>(<DT>), SGLang's step[decode bs=N]).
enum class StepPhase { kUnknown, kDecodeOnly, kPrefillOnly, kMixed };

struct StageTable {
  std::vector<StageRule> rules;
  // Kernels that communicate whatever stage the rules give them (a table's "communication").
  std::vector<CommunicationRule> communication;
  std::vector<OperatorRule> operators;
  std::string origin;
  // decide(kernel).stage: the name's stage, unless the name names no operation (no rule, or a
  // generated one) and the kernel's own counters show tensor-core work. "other" when nothing.
  std::string stage_of(const model::Kernel& kernel) const;
  // The name's stage alone (the first rule matching it; "other").
  std::string stage_of_name(const std::string& name) const;
  // The evidence of a captured kernel: its names (function, demangled, mangled) through the
  // rules; where they name no operation, its counters (tensor_pipe_evidence: busy -> "gemm",
  // with the XU pipe beside -> "attention").
  StageDecision decide(const model::Kernel& kernel) const;
  // The same from a name alone (a trace's kernel): source kName or kNoEvidence.
  StageDecision decide_by_name(std::string_view name) const;
  // The stage of every kernel the operator launches (a table's "operators"), or nullopt for an
  // operator the table does not list (composite ones such as aten::matmul: their inner operators
  // say it).
  std::optional<std::string> stage_of_operator(std::string_view op) const;
  // A trace's kernel launch: the operator that launched it (innermost cpu_op, or the one a
  // graph replay took at capture; "" when the trace has none) decides where the table lists it,
  // unless the name's stage refines the operator's (the name says "attention_decode" under an
  // SDPA operator: kept, source kName); else the name (decide_by_name).
  StageDecision decide_launch(std::string_view kernel_name, std::string_view op) const;
  // The same with the name's decision already made (decide_by_name).
  StageDecision decide_launch(const StageDecision& by_name, std::string_view op) const;
  // The first communication rule whose regex matches the name gives the kind; else a name the
  // rules file in the "communication" stage is a collective; else none.
  CommunicationKind communication_kind(std::string_view name) const;
  // communication_kind(name) != kNone.
  bool is_communication(std::string_view name) const;
};

// "none", "collective", "expert_parallel", as a table's file spells them.
const char* communication_kind_name(CommunicationKind kind);

// "name", "counters", "operator", "step", "none".
const char* stage_source_name(StageSource source);

// A stage refined by the step its kernel ran in: "attention" (the name gives no phase: FA3's
// varlen kernel, FlashInfer's BatchPrefillWithPagedKVCache on the tensor-core decode path) is
// "attention_decode" in a step with no prefill request and "attention_prefill" in one with no
// decode request; any other stage, or an unknown or mixed step, is returned unchanged.
std::string stage_in_step(const std::string& stage, StepPhase phase);

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
