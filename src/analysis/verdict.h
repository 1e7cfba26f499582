// Per-kernel bottleneck verdicts: pure functions over the report model. Every number is one
// ncu computed or a stated formula over such numbers (ARCHITECTURE.md, "Verdict formulas");
// anything the capture could not support is listed in `missing`, never reported as zero.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/stages.h"
#include "hardware/gpu_specs.h"
#include "model/report.h"

namespace kprof::analysis {

struct Thresholds {
  double compute_pct = 80;  // SM throughput at or above: compute-bound
  double memory_pct = 80;   // memory throughput at or above: memory-bound
};

struct AnalysisConfig {
  Thresholds thresholds;
  const StageTable* stages = nullptr;
  const ExpectationTable* expectations = nullptr;
  const hardware::GpuDatabase* gpus = nullptr;
};

// kIssueBound and kOverheadBound are the SM's instruction stream binding rather than a roof:
// issue-bound, the schedulers issue an instruction most cycles (at or above ncu's
// IssueSlotUtilization target of 60%) while neither side reaches its threshold; overhead-bound,
// the SM side at its threshold from non-math instructions (load/store, address, branch, uniform
// pipes) while every math pipe stays below ncu's "well-utilized" 60%.
enum class Roofline {
  kComputeBound,
  kMemoryBound,
  kRidge,
  kLatencyBound,
  kIssueBound,
  kOverheadBound,
  kUnknown
};
std::string roofline_name(Roofline roofline);  // "compute-bound", "at the ridge", …

struct UnitUse {
  std::string unit;    // dram, l2, l1, tensor, fp32, fp64, alu, lsu, …
  std::string metric;  // the ncu metric that measured it
  double pct = 0;      // of peak
};

struct StallShare {
  std::string reason;           // "long_scoreboard"
  double cycles_per_issue = 0;  // ncu's smsp__average_warps_issue_stalled_*_per_issue_active
                                // (0 when the shares come from PC sampling)
  double share = 0;             // of all stall cycles (excluding "selected")
};

// How much of a ceiling measured on this GPU by `kprof calibrate` (a calibration file given with
// --gpus) a kernel reached, beside the datasheet peak of the same figure where the database has
// one.
struct CeilingUse {
  std::string ceiling;  // the calibration's name: dram_bandwidth, fp32_flops, bf16_tensor_flops, …
  std::string rate;     // what the kernel reached, as named here: "dram_bytes_per_second",
                        // "flops_per_second.fp32", …
  std::string unit;     // "byte/s", "flop/s"
  double achieved = 0;  // in unit
  double measured_ceiling = 0;
  double fraction_of_measured = 0;  // achieved / measured_ceiling
  std::optional<double> peak;       // the datasheet (or report) peak of the same figure
  std::optional<double> fraction_of_peak;
  std::string peak_source;
};

// What ncu's own rules recorded in the report say about the same kernel, beside kprof's verdict:
// SOLBottleneck's class (from its message text, which every ncu version since 2020 words in one
// of a few ways) and whether kprof agrees; a disagreement is printed with kprof's reason.
struct SecondOpinion {
  std::string rule;     // "SOLBottleneck"
  std::string verdict;  // "latency", "compute", "memory", "balanced", "bound", "small grid"
  std::string unit;     // the unit ncu names ("DRAM", "L2", "L1"), where it names one
  std::string message;  // the rule's text, as recorded
  bool agrees = true;
  std::string note;  // why kprof differs, when it does
};

struct KernelVerdict {
  Roofline roofline = Roofline::kUnknown;
  std::optional<double> sm_throughput_pct;
  std::optional<double> memory_throughput_pct;
  // Which section and metrics the two throughputs came from: SpeedOfLight's own figures, or,
  // where the capture lacks that section, their derivation from ComputeWorkloadAnalysis and
  // MemoryWorkloadAnalysis (the sm side then a lower bound of SpeedOfLight's).
  std::string throughput_source;
  std::optional<double> duration_ns;
  // ncu's "Issue Slots Busy" (sm__inst_issued over elapsed cycles; unit "issue") and the
  // busiest math pipe (FMA, FP16, FP64, tensor, ALU, XU) by elapsed cycles: the evidence of the
  // issue-bound and overhead-bound classes.
  std::optional<UnitUse> issue_slots;
  std::optional<UnitUse> math_pipe;
  std::optional<SecondOpinion> second_opinion;

  // The most utilized unit: the binding one when compute- or memory-bound, the leaning one
  // otherwise. bound_by is memory_unit or compute_unit, whichever side is higher.
  std::optional<UnitUse> memory_unit;
  std::optional<UnitUse> compute_unit;
  std::string bound_by;
  // Where bound_by came from when not the breakdown metrics: "ncu's SOLBottleneck rule".
  std::string bound_by_source;

  std::map<std::string, double> flops_per_second;  // fp32, fp64, fp16, tensor_<type>
  std::optional<double> tflops;                    // sum of the above / 1e12
  std::string tflops_withheld;                     // why tflops is absent though rates exist
  std::optional<double> dram_bytes_per_second;
  std::optional<double> dram_peak_bytes_per_second;
  std::string dram_peak_source;  // "report" (ncu's peak_sustained) or "hardware database: …"
  std::optional<double> memory_bw_utilization;  // dram bytes/s over the peak, 0..1
  // memory_bw_utilization is ncu's gpu__dram_throughput percentage (no bytes/s or no peak).
  bool memory_bw_from_ncu_pct = false;
  std::optional<double> arithmetic_intensity;  // FLOP per DRAM byte
  // Only with a calibration for this kernel's GPU, for each measured ceiling the capture has the
  // matching rate of; largest fraction of the measured ceiling first.
  std::vector<CeilingUse> measured_ceilings;

  std::optional<double> achieved_occupancy;     // 0..1
  std::optional<double> theoretical_occupancy;  // 0..1
  std::string occupancy_limiter;  // registers, shared_memory, warps, blocks, barriers, none
  std::map<std::string, double> occupancy_block_limits;
  std::optional<double> shared_memory_usage_bytes;
  std::optional<double> registers_per_thread;
  std::optional<double> waves_per_sm;
  std::optional<std::uint64_t> blocks;
  std::optional<double> sm_count;

  std::vector<StallShare> stalls;     // largest first
  bool stalls_from_sampling = false;  // shares of PC-sampled warp states, not of stall cycles
  // Which counters the stalls came from: "issue_stalled" (WarpStateStats' cycles per issue),
  // "sampled" (smsp__pcsamp_warps_issue_stalled_*), "sampled_not_issued" (their _not_issued
  // variant, ncu 2025.4's default); "" without stalls.
  std::string stall_variant;
  // Counters ncu wrote as NaN or infinite (sorted): no figure is derived from them.
  std::vector<std::string> invalid_counters;
  std::vector<std::string> latency_reasons;
  // Why an issue-bound or overhead-bound kernel is so, and what helps ("issue slots 74% busy
  // …; fewer or wider instructions, tensor cores").
  std::vector<std::string> instruction_reasons;
  std::string stage;
  // What decided the stage (StageTable::decide): "name", "counters" or "none"; empty without a
  // stage table.
  std::string stage_source;
  // What the stage rests on, in words (StageDecision::evidence): "name", "no rule matched the
  // name", "counters: tensor pipe 94% busy (sm__pipe_tensor_cycles_active…); the name is a code
  // generator's and names no operation"; empty without a stage table.
  std::string stage_evidence;

  std::string expected_bottleneck;  // from the expectation table, if the kernel is canonical
  std::string expectation_workload;
  bool contradicts_expectation = false;

  std::string headroom;
  std::vector<std::string> missing;  // "field (what it needs)"
};

// Every unit bound_by can name (memory units, then SM pipes): with "latency", "nvlink" and
// "mixed", the values an expectation table may expect (docs/kprof.expectations.schema.json).
std::vector<std::string> bottleneck_units();

KernelVerdict analyze_kernel(const model::Report& report, const model::Kernel& kernel,
                             const AnalysisConfig& config);

}  // namespace kprof::analysis
