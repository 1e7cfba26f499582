#include "analysis/verdict.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <re2/re2.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "analysis/gpu_figures.h"
#include "common/text.h"

namespace kprof::analysis {
namespace {

constexpr std::string_view kSm = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
constexpr std::string_view kMemory =
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed";
constexpr std::string_view kSmBreakdown =
    "breakdown:sm__throughput.avg.pct_of_peak_sustained_elapsed";
constexpr std::string_view kMemoryBreakdown =
    "breakdown:gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed";

class Reader {
 public:
  Reader(const model::Report& report, const model::Kernel& kernel)
      : report_(report), kernel_(kernel) {}
  // A NaN or infinite counter (ncu 2026.2 writes NaNs on B200, its users report) is no value:
  // every figure that needs it is withheld, and the counter is named (invalid()).
  std::optional<double> number(std::string_view name) const {
    std::optional<double> value = report_.number(kernel_, name);
    if (value && !std::isfinite(*value)) {
      invalid_.insert(std::string(name));
      return std::nullopt;
    }
    return value;
  }
  const model::Metric* find(std::string_view name) const { return report_.find(kernel_, name); }
  const std::set<std::string>& invalid() const { return invalid_; }

 private:
  const model::Report& report_;
  const model::Kernel& kernel_;
  mutable std::set<std::string> invalid_;
};

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// The metrics whose names start with prefix (metrics are sorted by name).
std::pair<std::vector<model::Metric>::const_iterator, std::vector<model::Metric>::const_iterator>
with_prefix(const model::Kernel& kernel, std::string_view prefix) {
  auto first =
      std::lower_bound(kernel.metrics.begin(), kernel.metrics.end(), prefix,
                       [](const model::Metric& m, std::string_view p) { return m.name < p; });
  auto last = first;
  while (last != kernel.metrics.end() && last->name.str().compare(0, prefix.size(), prefix) == 0)
    ++last;
  return {first, last};
}

// ncu's SOLBottleneck rule names the memory unit by the prefix of the largest entry of the
// memory-throughput breakdown (dram/fbpa -> DRAM, lts/ltc -> L2, l1tex -> L1).
std::string memory_unit_of(const std::string& metric) {
  if (metric.rfind("dram__", 0) == 0 || metric.rfind("fbpa__", 0) == 0 ||
      metric.rfind("fbp__", 0) == 0) {
    return "dram";
  }
  if (metric.rfind("lts__", 0) == 0 || metric.rfind("ltc__", 0) == 0) return "l2";
  if (metric.rfind("l1tex__", 0) == 0) return "l1";
  return "";
}

// SM-side units from the pipe metrics of the SM-throughput breakdown. Issue-slot and aggregate
// entries are not units; "shared" is the pipe FP64 and tensor instructions share, so it is named
// by whichever of those is active.
constexpr std::pair<const char*, const char*> kPipes[] = {
    {"sm__pipe_tensor", "tensor"},
    {"sm__inst_executed_pipe_tensor", "tensor"},
    {"sm__pipe_fp64", "fp64"},
    {"sm__inst_executed_pipe_fp64", "fp64"},
    {"sm__pipe_fma", "fp32"},
    {"sm__inst_executed_pipe_fma", "fp32"},
    {"sm__pipe_fp16", "fp16"},
    {"sm__pipe_alu", "alu"},
    {"sm__inst_executed_pipe_alu", "alu"},
    {"sm__inst_executed_pipe_lsu", "lsu"},
    {"sm__inst_executed_pipe_xu", "xu"},
    {"sm__inst_executed_pipe_uniform", "uniform"},
    {"sm__inst_executed_pipe_adu", "adu"},
    {"sm__inst_executed_pipe_cbu", "cbu"},
    {"sm__inst_executed_pipe_tex", "tex"},
    {"sm__pipe_tma", "tma"},
    {"sm__pipe_tc", "tensor"},  // Blackwell's tensor-core pipe in ComputeWorkloadAnalysis
    {"sm__inst_executed_pipe_tc", "tensor"},
    {"sm__inst_executed_pipe_ipa", "ipa"},
};
constexpr const char* kMemoryUnits[] = {"dram", "l2", "l1"};

std::string compute_unit_of(const std::string& metric) {
  for (auto [prefix, unit] : kPipes) {
    if (metric.rfind(prefix, 0) == 0) return unit;
  }
  return "";
}

std::optional<UnitUse> top_unit(const Reader& reader, std::string_view breakdown,
                                std::string (*unit_of)(const std::string&)) {
  const model::Metric* list = reader.find(breakdown);
  if (!list || list->value.kind() != model::MetricValue::Kind::kString) return std::nullopt;
  std::optional<UnitUse> best;
  for (const std::string& name : split_commas(list->value.text())) {
    std::string unit = unit_of(name);
    if (unit.empty()) continue;
    auto value = reader.number(name);
    if (!value || std::isnan(*value)) continue;
    if (!best || *value > best->pct) best = UnitUse{unit, name, *value};
  }
  return best;
}

// Pipes whose instructions move data or steer the warp rather than compute: an SM side busy
// with these is instruction overhead (issue 43: a shared-memory-tiled SGEMM at LSU 95 %, FMA
// 17 %, 3.2x slower than its register-tiled successor), not a compute roof.
bool is_overhead_pipe(const std::string& unit) {
  static const std::set<std::string> kOverhead = {"lsu", "adu", "cbu", "uniform", "tex", "ipa"};
  return kOverhead.count(unit) > 0;
}
bool is_math_pipe(const std::string& unit) {
  static const std::set<std::string> kMath = {"tensor", "fp64", "fp32", "fp16", "alu", "xu"};
  return kMath.count(unit) > 0;
}

// The busiest pipe by elapsed cycles among those `keep` accepts, from every pipe utilisation
// the report holds (ComputeWorkloadAnalysis: sm__inst_executed_pipe_* and sm__pipe_*_cycles_active
// as % of peak over elapsed cycles; the _active variants read high on a kernel that kept few SMs
// busy, so they are not compared with SpeedOfLight's elapsed figures).
std::optional<UnitUse> busiest_pipe(const Reader& reader, const model::Kernel& kernel,
                                    bool (*keep)(const std::string&)) {
  constexpr std::string_view kElapsed = ".avg.pct_of_peak_sustained_elapsed";
  std::optional<UnitUse> best;
  for (std::string_view prefix : {"sm__inst_executed_pipe_", "sm__pipe_"}) {
    auto [first, last] = with_prefix(kernel, prefix);
    for (auto it = first; it != last; ++it) {
      const std::string& name = it->name.str();
      if (!name.ends_with(kElapsed)) continue;
      std::string unit = compute_unit_of(name);
      if (unit.empty() || (keep && !keep(unit))) continue;
      auto value = reader.number(name);
      if (value && (!best || *value > best->pct)) best = UnitUse{unit, name, *value};
    }
  }
  return best;
}

// SpeedOfLight's two throughputs, or — a capture without that section (ncu --section lists that
// name MemoryWorkloadAnalysis, ComputeWorkloadAnalysis, SchedulerStats…) — the same quantities
// from those sections: the memory side is the larger of gpu__compute_memory_access_throughput
// and gpu__compute_memory_request_throughput (SpeedOfLight's memory figure is their maximum: equal
// on all 44 kernels of the H200 full captures checked), the SM side the largest of Issue Slots
// Busy, the instruction throughput and every pipe utilisation over elapsed cycles (a lower bound
// of SpeedOfLight's SM figure, a maximum over more sub-metrics: equal on 43 of those 44, 0.5
// points under on the 44th).
void read_throughputs(const Reader& reader, const model::Kernel& kernel, KernelVerdict& v) {
  v.sm_throughput_pct = reader.number(kSm);
  v.memory_throughput_pct = reader.number(kMemory);
  std::vector<std::string> derived;
  // Derived only where SpeedOfLight was not captured: a SpeedOfLight figure written as NaN (ncu
  // 2026.2 on B200) withholds the verdict rather than trusting other counters of the same run.
  if (!v.memory_throughput_pct && !reader.find(kMemory)) {
    auto access =
        reader.number("gpu__compute_memory_access_throughput.avg.pct_of_peak_sustained_elapsed");
    auto request =
        reader.number("gpu__compute_memory_request_throughput.avg.pct_of_peak_sustained_elapsed");
    if (access || request) {
      v.memory_throughput_pct = std::max(access.value_or(0), request.value_or(0));
      derived.push_back(
          "memory: MemoryWorkloadAnalysis, the larger of gpu__compute_memory_access_throughput "
          "and gpu__compute_memory_request_throughput");
    }
  }
  if (!v.sm_throughput_pct && !reader.find(kSm)) {
    auto issued = reader.number("sm__inst_issued.avg.pct_of_peak_sustained_elapsed");
    auto instructions =
        reader.number("sm__instruction_throughput.avg.pct_of_peak_sustained_elapsed");
    if (issued || instructions) {
      double sm = std::max(issued.value_or(0), instructions.value_or(0));
      if (auto pipe = busiest_pipe(reader, kernel, nullptr)) sm = std::max(sm, pipe->pct);
      v.sm_throughput_pct = sm;
      derived.push_back(
          "SM: ComputeWorkloadAnalysis, the largest of Issue Slots Busy, the instruction "
          "throughput and the pipe utilisations over elapsed cycles (a lower bound of "
          "SpeedOfLight's SM throughput)");
    }
  }
  if (!v.sm_throughput_pct || !v.memory_throughput_pct) return;
  v.throughput_source =
      derived.empty() ? "SpeedOfLight: sm__throughput and gpu__compute_memory_throughput"
                      : "without SpeedOfLight: " + fmt::format("{}", fmt::join(derived, "; ")) +
                            (derived.size() == 1 ? "; the other side SpeedOfLight's" : "");
}

struct FlopTerm {
  const char* metric;  // per cycle elapsed, as ncu's roofline charts use
  double flops_per_op;
};

void add_flops(const Reader& reader, KernelVerdict& v, const std::string& precision,
               std::initializer_list<FlopTerm> terms, double cycles_per_second) {
  double per_cycle = 0;
  for (const FlopTerm& term : terms) {
    auto value = reader.number(term.metric);
    if (!value) return;  // an incomplete sum would understate: leave the precision out
    per_cycle += *value * term.flops_per_op;
  }
  v.flops_per_second[precision] = per_cycle * cycles_per_second;
}

void compute_flops(const Reader& reader, const model::Kernel& kernel, KernelVerdict& v) {
  auto smsp_hz = reader.number("smsp__cycles_elapsed.avg.per_second");
  auto sm_hz = reader.number("sm__cycles_elapsed.avg.per_second");
  if (smsp_hz) {
    // SpeedOfLight_RooflineChart: FP32 = fadd + fmul + 2 x ffma per cycle, FP64 likewise.
    add_flops(reader, v, "fp32",
              {{"smsp__sass_thread_inst_executed_op_fadd_pred_on.sum.per_cycle_elapsed", 1},
               {"smsp__sass_thread_inst_executed_op_fmul_pred_on.sum.per_cycle_elapsed", 1},
               {"smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed", 2}},
              *smsp_hz);
    add_flops(reader, v, "fp64",
              {{"smsp__sass_thread_inst_executed_op_dadd_pred_on.sum.per_cycle_elapsed", 1},
               {"smsp__sass_thread_inst_executed_op_dmul_pred_on.sum.per_cycle_elapsed", 1},
               {"smsp__sass_thread_inst_executed_op_dfma_pred_on.sum.per_cycle_elapsed", 2}},
              *smsp_hz);
    // Hierarchical half roofline: HADD2/HMUL2 = 2 lanes, HFMA2 = 2 lanes x 2 FLOP.
    add_flops(reader, v, "fp16",
              {{"smsp__sass_thread_inst_executed_op_hadd_pred_on.sum.per_cycle_elapsed", 2},
               {"smsp__sass_thread_inst_executed_op_hmul_pred_on.sum.per_cycle_elapsed", 2},
               {"smsp__sass_thread_inst_executed_op_hfma_pred_on.sum.per_cycle_elapsed", 4}},
              *smsp_hz);
  } else {
    // A metric list without per-cycle rates: total operations over the kernel's duration.
    auto duration = reader.number("gpu__time_duration.sum");
    auto fadd = reader.number("smsp__sass_thread_inst_executed_op_fadd_pred_on.sum");
    auto fmul = reader.number("smsp__sass_thread_inst_executed_op_fmul_pred_on.sum");
    auto ffma = reader.number("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum");
    if (duration && *duration > 0 && fadd && fmul && ffma) {
      v.flops_per_second["fp32"] = (*fadd + *fmul + 2 * *ffma) / (*duration * 1e-9);
    }
  }
  // Hierarchical tensor roofline: sm__ops_path_tensor_src_<type> per cycle x SM clock; ops
  // count a multiply-add as 2 (checked: a WMMA loop of known FLOPs on an H200).
  if (sm_hz) {
    static const RE2 kTensor("^sm__ops_path_tensor_src_([a-z0-9_]+)\\.sum\\.per_cycle_elapsed$");
    auto [first, last] = with_prefix(kernel, "sm__ops_path_tensor_src_");
    for (auto it = first; it != last; ++it) {
      const model::Metric& metric = *it;
      std::string type;
      if (!RE2::FullMatch(metric.name.str(), kTensor, &type)) continue;
      // The combined FP16/BF16/TF32→FP32 counter (chips after GH100 have it; a user's
      // --metrics may name it) overlaps the per-precision ones: count it only when those were
      // not collected.
      if (type == "fp16_bf16_tf32_dst_fp32" &&
          (reader.number("sm__ops_path_tensor_src_fp16.sum.per_cycle_elapsed") ||
           reader.number("sm__ops_path_tensor_src_bf16_dst_fp32.sum.per_cycle_elapsed"))) {
        continue;
      }
      auto value = metric.value.number();
      if (!value || *value <= 0) continue;
      v.flops_per_second["tensor_" + type] = *value * *sm_hz;
    }
  }
  // A details CSV or a --metrics list may carry the tensor op totals without per-cycle rates:
  // the same ops over the kernel's duration.
  if (v.flops_per_second.empty() ||
      !std::any_of(v.flops_per_second.begin(), v.flops_per_second.end(),
                   [](const auto& entry) { return entry.first.rfind("tensor_", 0) == 0; })) {
    static const RE2 kTensorTotal("^sm__ops_path_tensor_src_([a-z0-9_]+)\\.sum$");
    auto duration = reader.number("gpu__time_duration.sum");
    auto [first, last] = with_prefix(kernel, "sm__ops_path_tensor_src_");
    for (auto it = first; it != last && duration && *duration > 0; ++it) {
      std::string type;
      if (!RE2::FullMatch(it->name.str(), kTensorTotal, &type)) continue;
      if (type == "fp16_bf16_tf32_dst_fp32" &&
          (reader.number("sm__ops_path_tensor_src_fp16.sum") ||
           reader.number("sm__ops_path_tensor_src_bf16_dst_fp32.sum"))) {
        continue;
      }
      auto value = it->value.number();
      if (!value || *value <= 0) continue;
      v.flops_per_second["tensor_" + type] = *value / (*duration * 1e-9);
    }
  }
  // A total is only honest when tensor work was measured too: without the tensor op rates a
  // GEMM would read as ~0 TFLOP/s — unless the tensor pipe was never active (an FP32 SGEMM's full
  // capture on a GPU whose ncu collects no sm__ops_path_tensor_src_* counter: cuBLAS's
  // ampere_sgemm on Ada under ncu 2024.1 reads exactly 0). Any activity withholds the total: a
  // tensor-core attention kernel doing 74 TFLOP/s reads only 11% there (big_full's cuDNN SDPA on
  // the H200), and a plain FP32 FMA loop 5.6% (the pipe shares cycles with half-precision math).
  auto [tensor_first, tensor_last] = with_prefix(kernel, "sm__ops_path_tensor_src_");
  bool tensor_measured = tensor_first != tensor_last;
  double tensor_rate = 0;
  for (const auto& [precision, rate] : v.flops_per_second) {
    if (precision.rfind("tensor_", 0) == 0) tensor_rate += rate;
  }
  auto tensor_pipe =
      busiest_pipe(reader, kernel, [](const std::string& unit) { return unit == "tensor"; });
  bool tensor_idle = !tensor_measured && tensor_pipe && tensor_pipe->pct == 0;
  if (tensor_measured && tensor_rate == 0 && tensor_pipe && tensor_pipe->pct >= 20) {
    // Only some precisions measured (kprof's triage preset: BF16 and FP16) while the tensor pipe
    // was busy: the work ran in another precision (FP8, TF32, INT8) and the total would read ~0.
    v.tflops_withheld = fmt::format(
        "the tensor pipe was {:.0f}% busy in a precision whose op counter was not collected",
        tensor_pipe->pct);
  } else if (!tensor_measured && tensor_pipe && tensor_pipe->pct > 0 &&
             !v.flops_per_second.empty()) {
    // Said without the figure: the text lists each distinct reason once for all kernels.
    v.tflops_withheld = "the tensor pipe was active and no tensor op counter was collected";
  }
  if (!v.flops_per_second.empty() && (tensor_measured || tensor_idle) &&
      v.tflops_withheld.empty()) {
    double total = 0;
    for (const auto& [precision, rate] : v.flops_per_second) total += rate;
    v.tflops = total / 1e12;
  }
}

void compute_memory(const Reader& reader, const model::Report& report, const model::Kernel& kernel,
                    const AnalysisConfig& config, KernelVerdict& v) {
  v.dram_bytes_per_second = reader.number("dram__bytes.sum.per_second");
  if (!v.dram_bytes_per_second) {
    auto read = reader.number("dram__bytes_read.sum");
    auto write = reader.number("dram__bytes_write.sum");
    auto duration = reader.number("gpu__time_duration.sum");
    auto total = reader.number("dram__bytes.sum");
    if (!total && read && write) total = *read + *write;
    if (total && duration && *duration > 0) v.dram_bytes_per_second = *total / (*duration * 1e-9);
  }
  auto peak_per_cycle = reader.number("dram__bytes.sum.peak_sustained");
  auto dram_hz = reader.number("dram__cycles_elapsed.avg.per_second");
  if (peak_per_cycle && dram_hz) {
    v.dram_peak_bytes_per_second = *peak_per_cycle * *dram_hz;
    v.dram_peak_source =
        "report (dram__bytes.sum.peak_sustained x dram__cycles_elapsed.avg.per_second)";
  } else if (const model::Device* device = report.device_of(kernel)) {
    // The database's entry for the device's name, unless the report's own device attributes
    // disagree with it (a product name several parts share): then the report's, the source
    // naming both.
    if (auto chosen = gpu_figures(*device, config.gpus).dram_peak) {
      v.dram_peak_bytes_per_second = chosen->value;
      v.dram_peak_source = chosen->source;
    }
  }
  if (v.dram_bytes_per_second && v.dram_peak_bytes_per_second &&
      *v.dram_peak_bytes_per_second > 0) {
    v.memory_bw_utilization = *v.dram_bytes_per_second / *v.dram_peak_bytes_per_second;
  } else if (auto pct = reader.number("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed")) {
    // Without the bytes or their peak (a basic capture; a details CSV of a GPU kprof's database
    // lacks), ncu's own percentage ("DRAM Throughput") is the utilisation: ncu knew the peak.
    v.memory_bw_utilization = *pct / 100;
    v.memory_bw_from_ncu_pct = true;
  }
  if (v.tflops && v.dram_bytes_per_second && *v.dram_bytes_per_second > 0) {
    v.arithmetic_intensity = *v.tflops * 1e12 / *v.dram_bytes_per_second;
  }
}

// Rates against the ceilings a calibration measured on the kernel's GPU. The tensor ceilings
// were measured with mma.sync BF16 -> FP32 and FP8 -> FP32 loops: only the op counters of those
// source types are held to them (the combined FP16/BF16/TF32 counter mixes rates that differ).
void compute_measured_ceilings(const model::Report& report, const model::Kernel& kernel,
                               const AnalysisConfig& config, KernelVerdict& v) {
  if (!config.gpus) return;
  const model::Device* device = report.device_of(kernel);
  const hardware::GpuSpec* spec = device ? config.gpus->find_for_device(device->name) : nullptr;
  if (!spec || spec->measured.empty()) return;
  auto datasheet_flops = [&](const char* key) -> std::optional<double> {
    auto it = spec->peak_tflops.find(key);
    if (it == spec->peak_tflops.end()) return std::nullopt;
    return it->second * 1e12;
  };
  auto add = [&](const std::string& ceiling, const std::string& rate, const std::string& unit,
                 std::optional<double> achieved, std::optional<double> peak,
                 const std::string& peak_source) {
    auto measured = spec->measured.find(ceiling);
    if (measured == spec->measured.end() || measured->second.unit != unit || !achieved ||
        std::isnan(*achieved)) {
      return;
    }
    CeilingUse use;
    use.ceiling = ceiling;
    use.rate = rate;
    use.unit = unit;
    use.achieved = *achieved;
    use.measured_ceiling = measured->second.figure;
    use.fraction_of_measured = *achieved / measured->second.figure;
    if (peak && *peak > 0) {
      use.peak = peak;
      use.fraction_of_peak = *achieved / *peak;
      use.peak_source = peak_source;
    }
    v.measured_ceilings.push_back(std::move(use));
  };
  add("dram_bandwidth", "dram_bytes_per_second", "byte/s", v.dram_bytes_per_second,
      v.dram_peak_bytes_per_second, v.dram_peak_source);
  std::string datasheet = "hardware database: " + spec->name;
  auto flops = [&](const std::string& precision) -> std::optional<double> {
    auto it = v.flops_per_second.find(precision);
    if (it == v.flops_per_second.end()) return std::nullopt;
    return it->second;
  };
  add("fp32_flops", "flops_per_second.fp32", "flop/s", flops("fp32"), datasheet_flops("fp32"),
      datasheet);
  add("fp64_flops", "flops_per_second.fp64", "flop/s", flops("fp64"), datasheet_flops("fp64"),
      datasheet);
  add("bf16_tensor_flops", "flops_per_second.tensor_bf16_dst_fp32", "flop/s",
      flops("tensor_bf16_dst_fp32"), datasheet_flops("bf16"), datasheet);
  for (const auto& [precision, rate] : v.flops_per_second) {
    if (precision.rfind("tensor_fp8", 0) == 0) {
      add("fp8_tensor_flops", "flops_per_second." + precision, "flop/s", rate,
          datasheet_flops("fp8"), datasheet);
    } else if (precision.rfind("tensor_fp16", 0) == 0) {
      // Datasheets give FP16 tensor rates equal to BF16's on every GPU in the database.
      add("fp16_tensor_flops", "flops_per_second." + precision, "flop/s", rate,
          datasheet_flops("bf16"), datasheet);
    }
  }
  std::stable_sort(v.measured_ceilings.begin(), v.measured_ceilings.end(),
                   [](const CeilingUse& a, const CeilingUse& b) {
                     return a.fraction_of_measured > b.fraction_of_measured;
                   });
}

void compute_occupancy(const Reader& reader, const model::Kernel& kernel, KernelVerdict& v) {
  if (auto achieved = reader.number("sm__warps_active.avg.pct_of_peak_sustained_active")) {
    v.achieved_occupancy = *achieved / 100;
  }
  if (auto theoretical = reader.number("sm__maximum_warps_per_active_cycle_pct")) {
    v.theoretical_occupancy = *theoretical / 100;
  }
  static const std::pair<const char*, const char*> kLimits[] = {
      {"launch__occupancy_limit_registers", "registers"},
      {"launch__occupancy_limit_shared_mem", "shared_memory"},
      {"launch__occupancy_limit_warps", "warps"},
      {"launch__occupancy_limit_blocks", "blocks"},
      {"launch__occupancy_limit_barriers", "barriers"},
  };
  std::optional<double> lowest;
  for (auto [metric, name] : kLimits) {
    auto limit = reader.number(metric);
    if (!limit) continue;
    v.occupancy_block_limits[name] = *limit;
    if (!lowest || *limit < *lowest) lowest = *limit;
  }
  // Every limit at the minimum binds (ncu's TheoreticalOccupancy names several, e.g. "registers,
  // and the required amount of shared memory"), in the order of kLimits.
  for (auto [metric, name] : kLimits) {
    auto it = v.occupancy_block_limits.find(name);
    if (it == v.occupancy_block_limits.end() || it->second != *lowest) continue;
    v.occupancy_limiter += (v.occupancy_limiter.empty() ? "" : "+") + std::string(name);
  }
  if (v.theoretical_occupancy && *v.theoretical_occupancy >= 0.999) v.occupancy_limiter = "none";
  v.shared_memory_usage_bytes = reader.number("launch__shared_mem_per_block");
  v.registers_per_thread = reader.number("launch__registers_per_thread");
  v.waves_per_sm = reader.number("launch__waves_per_multiprocessor");
  v.blocks = kernel.grid.x * kernel.grid.y * kernel.grid.z;
  v.sm_count = reader.number("launch__sm_count");
  if (!v.sm_count) v.sm_count = reader.number("device__attribute_multiprocessor_count");
}

// Warp stalls from WarpStateStats (cycles per issued instruction) or, when only PC sampling was
// collected (kprof's triage preset: one pass instead of five), from the sampled warp states:
// both measure where warps spend their stalled time, and their top reasons agreed on every
// kernel of big_full and the bottleneck suite, which collected both.
constexpr double kMinimumStallSamples = 100;

void compute_stalls(const model::Kernel& kernel, KernelVerdict& v) {
  static const RE2 kStall("^smsp__average_warps_issue_stalled_(.+)_per_issue_active\\.ratio$");
  double total = 0;
  auto [first, last] = with_prefix(kernel, "smsp__average_warps_issue_stalled_");
  for (auto it = first; it != last; ++it) {
    const model::Metric& metric = *it;
    std::string reason;
    if (!RE2::FullMatch(metric.name.str(), kStall, &reason)) continue;
    if (reason == "selected") continue;  // the issue cycle itself, not a stall
    auto value = metric.value.number();
    if (value && !std::isfinite(*value)) v.invalid_counters.push_back(metric.name.str());
    if (!value || *value <= 0 || !std::isfinite(*value)) continue;
    v.stalls.push_back({reason, *value, 0});
    total += *value;
  }
  if (v.stalls.empty()) {
    static const RE2 kSampled("^smsp__pcsamp_warps_issue_stalled_([a-z_]+)$");
    auto [sampled_first, sampled_last] = with_prefix(kernel, "smsp__pcsamp_warps_issue_stalled_");
    // Sampled warp states come in two variants: all samples of a state, and "_not_issued", the
    // samples in which the warp issued nothing — ncu 2025.4 and later sample the latter by
    // default. The plain variant is read where the report has it, else the _not_issued one;
    // stall_variant says which.
    bool any_plain = false;
    for (auto it = sampled_first; it != sampled_last; ++it) {
      std::string reason;
      if (RE2::FullMatch(it->name.str(), kSampled, &reason) && reason != "selected" &&
          !reason.ends_with("_not_issued")) {
        any_plain = true;
      }
    }
    double samples = 0;
    for (auto it = sampled_first; it != sampled_last; ++it) {
      std::string reason;
      if (!RE2::FullMatch(it->name.str(), kSampled, &reason)) continue;
      bool not_issued = reason.ends_with("_not_issued");
      if (not_issued == any_plain) continue;  // the other variant
      if (not_issued) reason.resize(reason.size() - std::string_view("_not_issued").size());
      if (reason == "selected") continue;
      if (reason == "no_instructions") reason = "no_instruction";  // WarpStateStats' spelling
      auto value = it->value.number();
      if (value && !std::isfinite(*value)) v.invalid_counters.push_back(it->name.str());
      if (!value || !std::isfinite(*value)) continue;
      samples += *value;
      if (*value > 0) v.stalls.push_back({reason, 0, *value});
    }
    if (!v.stalls.empty()) v.stall_variant = any_plain ? "sampled" : "sampled_not_issued";
    // Too few samples (a kernel of a few microseconds) say nothing reliable: leave it missing.
    if (samples < kMinimumStallSamples) {
      v.stalls.clear();
    } else {
      for (StallShare& stall : v.stalls) stall.share /= samples;
      v.stalls_from_sampling = true;
    }
  } else {
    for (StallShare& stall : v.stalls) stall.share = total > 0 ? stall.cycles_per_issue / total : 0;
    v.stall_variant = "issue_stalled";
  }
  std::sort(v.stalls.begin(), v.stalls.end(),
            [](const StallShare& a, const StallShare& b) { return a.share > b.share; });
}

std::string pct(double value) { return fmt::format("{:.0f}%", value); }

std::string unit_label(const std::string& unit) {
  static const std::map<std::string, std::string> kLabels = {
      {"dram", "DRAM"},      {"l2", "L2"},
      {"l1", "L1/shared"},   {"tensor", "tensor pipe"},
      {"fp32", "FP32 pipe"}, {"fp64", "FP64 pipe"},
      {"fp16", "FP16 pipe"}, {"alu", "ALU pipe"},
      {"lsu", "LSU pipe"},   {"xu", "XU (transcendental) pipe"}};
  auto it = kLabels.find(unit);
  return it == kLabels.end() ? unit : it->second;
}

void explain_latency(KernelVerdict& v) {
  if (v.blocks && v.sm_count && static_cast<double>(*v.blocks) < *v.sm_count) {
    v.latency_reasons.push_back(fmt::format("too few blocks: {} for {} SMs ({:.2f} waves)",
                                            *v.blocks, *v.sm_count, v.waves_per_sm.value_or(0)));
  } else if (v.waves_per_sm && *v.waves_per_sm < 1) {
    v.latency_reasons.push_back(
        fmt::format("less than one wave: {:.2f} waves per SM", *v.waves_per_sm));
  }
  if (v.theoretical_occupancy && *v.theoretical_occupancy < 0.5 && v.occupancy_limiter != "none") {
    v.latency_reasons.push_back(fmt::format("occupancy limited by {} ({} theoretical)",
                                            v.occupancy_limiter,
                                            pct(*v.theoretical_occupancy * 100)));
  }
  if (v.achieved_occupancy && v.theoretical_occupancy &&
      *v.achieved_occupancy < 0.7 * *v.theoretical_occupancy) {
    v.latency_reasons.push_back(fmt::format("achieved occupancy {} of a theoretical {}",
                                            pct(*v.achieved_occupancy * 100),
                                            pct(*v.theoretical_occupancy * 100)));
  }
  // not_selected is no latency: such a warp was eligible and another was issued instead (ncu's
  // CPIStall text: "sufficient warps to cover warp latencies"). The top stall that is one speaks.
  auto stall = std::find_if(v.stalls.begin(), v.stalls.end(),
                            [](const StallShare& s) { return s.reason != "not_selected"; });
  if (stall != v.stalls.end() && stall->share >= 0.3) {
    v.latency_reasons.push_back(fmt::format("warps mostly stalled on {} ({} of stall cycles)",
                                            stall->reason, pct(stall->share * 100)));
  }
  if (v.duration_ns && *v.duration_ns < 5000) {
    v.latency_reasons.push_back(
        fmt::format("tiny: {:.1f} us, close to launch latency", *v.duration_ns / 1000));
  }
}

// ncu's IssueSlotUtilization rule flags a kernel whose schedulers issue less than 0.6
// instructions a cycle; at or above it, issue is not what latency is starving.
constexpr double kIssueBusyPct = 60;
// HighPipeUtilization calls a pipe "well-utilized" from 60% of its peak (the "Balanced"
// threshold); below it, no math pipe is near a roof.
constexpr double kMathPipeBusyPct = 60;

// The two classes in which the SM's instruction stream, not a roof or latency, binds.
void classify_instruction_bound(KernelVerdict& v, const Thresholds& t) {
  if (v.roofline == Roofline::kLatencyBound && v.issue_slots &&
      v.issue_slots->pct >= kIssueBusyPct && v.issue_slots->pct < t.compute_pct) {
    v.roofline = Roofline::kIssueBound;
  } else if ((v.roofline == Roofline::kComputeBound || v.roofline == Roofline::kRidge) &&
             v.compute_unit && is_overhead_pipe(v.compute_unit->unit) &&
             (!v.math_pipe || v.math_pipe->pct < kMathPipeBusyPct)) {
    v.roofline = Roofline::kOverheadBound;
  }
}

void explain_instruction_bound(KernelVerdict& v) {
  auto top_stall = [&]() -> std::string {
    if (v.stalls.empty()) return "";
    return fmt::format("; top warp stall {} ({} of stall cycles)", v.stalls.front().reason,
                       pct(v.stalls.front().share * 100));
  };
  std::string math = v.math_pipe ? fmt::format("{} at {} of peak", unit_label(v.math_pipe->unit),
                                               pct(v.math_pipe->pct))
                                 : "no math pipe measured";
  if (v.roofline == Roofline::kIssueBound) {
    v.instruction_reasons.push_back(fmt::format(
        "issue slots {} busy (ncu's IssueSlotUtilization target: {}%), the busiest math pipe {}{}",
        pct(v.issue_slots->pct), format_number(kIssueBusyPct), math, top_stall()));
    v.instruction_reasons.push_back(
        "latency is already covered: what helps is fewer instructions (less index and address "
        "arithmetic, unrolled loops), wider ones (vector loads, packed half2/bf16x2 math), or "
        "tensor cores");
  } else if (v.roofline == Roofline::kOverheadBound) {
    v.instruction_reasons.push_back(fmt::format("the SM side is {} at {} of peak while {}{}",
                                                unit_label(v.compute_unit->unit),
                                                pct(v.compute_unit->pct), math, top_stall()));
    v.instruction_reasons.push_back(
        "non-math instructions fill the SM: what helps is fewer of them (register tiling so each "
        "loaded value feeds more math, vector loads, hoisted address arithmetic), not a faster "
        "memory level");
  }
}

// ncu's SOLBottleneck message, read for its class. Its wording since ncu 2020.3: "… low compute
// throughput and memory bandwidth utilization …" and "… grid is too small …" (latency),
// "Compute is more heavily utilized than Memory", "Memory is more heavily utilized than Compute"
// (the side that leans, the memory unit named in later versions: "to identify the L2
// bottleneck"), "Compute and Memory are well-balanced", and "… greater than 80.0% of the available
// compute or memory performance …" (bound; "Start by analyzing DRAM in …" names the unit).
struct SolClass {
  std::string verdict;
  std::string unit;  // dram, l2, l1 where the text names one
};
SolClass classify_sol_message(const std::string& message) {
  SolClass sol;
  auto has = [&](std::string_view text) { return message.find(text) != std::string::npos; };
  if (has("low compute throughput and memory bandwidth")) {
    sol.verdict = "latency";
  } else if (has("grid is too small") || has("grids that are too small")) {
    sol.verdict = "small grid";
  } else if (has("Compute is more heavily utilized")) {
    sol.verdict = "compute";
  } else if (has("Memory is more heavily utilized")) {
    sol.verdict = "memory";
  } else if (has("well-balanced")) {
    sol.verdict = "balanced";
  } else if (has("greater than 80") || has("of the available compute or memory performance")) {
    sol.verdict = "bound";
  }
  static const RE2 kUnit("(?:identify the|analyzing|Start by analyzing) (DRAM|L2|L1)\\b");
  std::string unit;
  if (RE2::PartialMatch(message, kUnit, &unit)) {
    sol.unit = unit == "DRAM" ? "dram" : unit == "L2" ? "l2" : "l1";
  } else if (sol.verdict == "memory" && has("DRAM")) {
    sol.unit = "dram";
  }
  return sol;
}

// kprof's verdict beside SOLBottleneck's, where the report recorded that rule's result.
void second_opinion(const model::Kernel& kernel, KernelVerdict& v, const Thresholds& t) {
  auto rule = std::find_if(kernel.rules.begin(), kernel.rules.end(),
                           [](const model::RuleFinding& r) { return r.rule == "SOLBottleneck"; });
  if (rule == kernel.rules.end() || v.roofline == Roofline::kUnknown) return;
  SolClass sol = classify_sol_message(rule->message);
  if (sol.verdict.empty()) return;
  SecondOpinion o{"SOLBottleneck", sol.verdict, sol.unit, rule->message, true, ""};
  bool ncu_latency = sol.verdict == "latency" || sol.verdict == "small grid";
  switch (v.roofline) {
    case Roofline::kLatencyBound:
      // ncu's latency band ends at 60%, kprof's at the thresholds: between them ncu says which
      // side leans, which kprof's bound_by says too.
      o.agrees = ncu_latency || sol.verdict == "compute" || sol.verdict == "memory" ||
                 sol.verdict == "balanced";
      break;
    case Roofline::kComputeBound:
      o.agrees = sol.verdict == "bound" || sol.verdict == "compute";
      break;
    case Roofline::kMemoryBound:
      o.agrees = sol.verdict == "bound" || sol.verdict == "memory";
      break;
    case Roofline::kRidge:
      o.agrees = sol.verdict == "bound" || sol.verdict == "balanced";
      break;
    case Roofline::kIssueBound:
      o.agrees = !ncu_latency;
      if (!o.agrees) {
        o.note = fmt::format(
            "ncu reads the throughputs under 60% as latency; kprof: the issue slots are {} busy, "
            "so warps are ready and the instruction stream binds",
            pct(v.issue_slots->pct));
      }
      break;
    case Roofline::kOverheadBound:
      o.agrees = false;
      o.note = fmt::format(
          "ncu reads the SM side's {} as a roof; kprof: that is {} instruction traffic with every "
          "math pipe under {}%",
          pct(*v.sm_throughput_pct), unit_label(v.compute_unit->unit),
          format_number(kMathPipeBusyPct));
      break;
    case Roofline::kUnknown:
      return;
  }
  // Where both name a memory unit, they must name the same one.
  if (o.agrees && !sol.unit.empty() && v.memory_unit && v.bound_by == v.memory_unit->unit &&
      sol.unit != v.bound_by) {
    o.agrees = false;
  }
  if (!o.agrees && o.note.empty()) {
    o.note = fmt::format("kprof: SM {} and memory {} of peak against thresholds of {}% and {}%",
                         v.sm_throughput_pct ? pct(*v.sm_throughput_pct) : "—",
                         v.memory_throughput_pct ? pct(*v.memory_throughput_pct) : "—",
                         format_number(t.compute_pct), format_number(t.memory_pct));
  }
  v.second_opinion = std::move(o);
}

void write_headroom(KernelVerdict& v, const Thresholds& t) {
  const UnitUse* unit = nullptr;
  if (v.bound_by == (v.memory_unit ? v.memory_unit->unit : ""))
    unit = v.memory_unit ? &*v.memory_unit : nullptr;
  if (!unit && v.compute_unit && v.bound_by == v.compute_unit->unit) unit = &*v.compute_unit;
  std::string unit_text =
      unit ? fmt::format("{} at {} of peak", unit_label(unit->unit), pct(unit->pct)) : "";
  switch (v.roofline) {
    case Roofline::kComputeBound:
      v.headroom = unit && unit->pct >= t.compute_pct
                       ? "low — " + unit_text + "; only less work or a faster unit helps"
                       : fmt::format("moderate — SM throughput {} of peak{}",
                                     pct(*v.sm_throughput_pct), unit ? "; " + unit_text : "");
      break;
    case Roofline::kMemoryBound:
      v.headroom = "low — " + (unit ? unit_text : "memory at " + pct(*v.memory_throughput_pct)) +
                   "; only less traffic helps (fusion, reuse, lower precision)";
      break;
    case Roofline::kRidge:
      v.headroom = fmt::format("low — compute {} and memory {} of peak, both near their roofs",
                               pct(*v.sm_throughput_pct), pct(*v.memory_throughput_pct));
      break;
    case Roofline::kLatencyBound:
      v.headroom = fmt::format("high — neither compute ({}) nor memory ({}) is near its roof{}",
                               pct(*v.sm_throughput_pct), pct(*v.memory_throughput_pct),
                               v.latency_reasons.empty() ? "" : "; " + v.latency_reasons.front());
      break;
    case Roofline::kIssueBound:
      v.headroom = fmt::format(
          "moderate — the issue slots are {} busy: only fewer or wider instructions help",
          pct(v.issue_slots->pct));
      break;
    case Roofline::kOverheadBound:
      v.headroom = fmt::format(
          "high — {} at {} of peak is instruction overhead, the math pipes are far from theirs",
          unit_label(v.compute_unit->unit), pct(v.compute_unit->pct));
      break;
    case Roofline::kUnknown:
      v.headroom =
          "unknown — the capture lacks the SpeedOfLight throughputs and the sections they can be "
          "derived from (ComputeWorkloadAnalysis, MemoryWorkloadAnalysis)";
      break;
  }
}

}  // namespace

std::vector<std::string> bottleneck_units() {
  std::vector<std::string> units(std::begin(kMemoryUnits), std::end(kMemoryUnits));
  for (auto [prefix, unit] : kPipes) {
    if (std::find(units.begin(), units.end(), unit) == units.end()) units.push_back(unit);
  }
  return units;
}

std::string roofline_name(Roofline roofline) {
  switch (roofline) {
    case Roofline::kComputeBound:
      return "compute-bound";
    case Roofline::kMemoryBound:
      return "memory-bound";
    case Roofline::kRidge:
      return "at the ridge";
    case Roofline::kLatencyBound:
      return "latency-bound";
    case Roofline::kIssueBound:
      return "issue-bound";
    case Roofline::kOverheadBound:
      return "overhead-bound";
    case Roofline::kUnknown:
      break;
  }
  return "unknown";
}

KernelVerdict analyze_kernel(const model::Report& report, const model::Kernel& kernel,
                             const AnalysisConfig& config) {
  Reader reader(report, kernel);
  KernelVerdict v;
  const Thresholds& t = config.thresholds;
  v.duration_ns = reader.number("gpu__time_duration.sum");
  read_throughputs(reader, kernel, v);
  if (v.sm_throughput_pct && v.memory_throughput_pct) {
    bool compute = *v.sm_throughput_pct >= t.compute_pct;
    bool memory = *v.memory_throughput_pct >= t.memory_pct;
    v.roofline = compute && memory ? Roofline::kRidge
                 : compute         ? Roofline::kComputeBound
                 : memory          ? Roofline::kMemoryBound
                                   : Roofline::kLatencyBound;
  }
  // Each unit from SpeedOfLight's breakdown list where the capture has it, else from what it has
  // of the same measurements; bound_by_source says which where it is not the breakdown.
  // The memory unit only from the breakdown (or, below, ncu's SOLBottleneck rule, which reads the
  // breakdown): the headline per-level throughputs (lts__throughput, l1tex__throughput) are
  // maxima over more sub-metrics than the breakdown lists, and their largest named another level
  // than the breakdown on 36 of 45 kernels of the H200's compiled decode capture.
  std::string memory_unit_source, compute_unit_source;
  v.memory_unit = top_unit(reader, kMemoryBreakdown, memory_unit_of);
  v.compute_unit = top_unit(reader, kSmBreakdown, compute_unit_of);
  if (!v.compute_unit && (v.compute_unit = busiest_pipe(reader, kernel, nullptr))) {
    compute_unit_source = "ComputeWorkloadAnalysis's pipe utilisations";
  }
  v.math_pipe = busiest_pipe(reader, kernel, is_math_pipe);
  // Issue Slots Busy over elapsed cycles (ncu 2025's ComputeWorkloadAnalysis); older ncu
  // records it over active cycles only, which reads high on a grid that left SMs idle, so that
  // variant counts only for a grid of at least one full wave.
  if (auto issued = reader.number("sm__inst_issued.avg.pct_of_peak_sustained_elapsed")) {
    v.issue_slots = UnitUse{"issue", "sm__inst_issued.avg.pct_of_peak_sustained_elapsed", *issued};
  } else if (auto waves = reader.number("launch__waves_per_multiprocessor"); waves && *waves >= 1) {
    if (auto active = reader.number("sm__inst_issued.avg.pct_of_peak_sustained_active")) {
      v.issue_slots = UnitUse{"issue", "sm__inst_issued.avg.pct_of_peak_sustained_active", *active};
    } else if (auto per_cycle = reader.number("smsp__issue_active.avg.per_cycle_active")) {
      v.issue_slots = UnitUse{"issue", "smsp__issue_active.avg.per_cycle_active", *per_cycle * 100};
    }
  }
  classify_instruction_bound(v, t);
  if (v.sm_throughput_pct && v.memory_throughput_pct) {
    // As ncu's SOLBottleneck: the side with the higher throughput names the unit — for a
    // latency-bound kernel only when that side is within a quarter of its threshold (ncu's 60%
    // band under an 80% threshold); below that nothing leans and bound_by stays empty. An
    // issue-bound or overhead-bound kernel is bound by the pipe it issues to.
    bool memory_side = *v.memory_throughput_pct > *v.sm_throughput_pct;
    const std::optional<UnitUse>& side = memory_side ? v.memory_unit : v.compute_unit;
    double level = memory_side ? *v.memory_throughput_pct : *v.sm_throughput_pct;
    double threshold = memory_side ? t.memory_pct : t.compute_pct;
    if (v.roofline == Roofline::kIssueBound) {
      if (v.math_pipe) {
        v.bound_by = v.math_pipe->unit;
        v.bound_by_source = "ComputeWorkloadAnalysis's pipe utilisations (the busiest math pipe)";
      }
    } else if (v.roofline == Roofline::kOverheadBound) {
      v.bound_by = v.compute_unit->unit;
      v.bound_by_source = compute_unit_source;
    } else if (side && (v.roofline != Roofline::kLatencyBound || level >= 0.75 * threshold)) {
      v.bound_by = side->unit;
      v.bound_by_source = memory_side ? memory_unit_source : compute_unit_source;
    }
  }
  // Without the breakdown metrics (a details CSV of the SpeedOfLight section's headline rows
  // only), ncu's own SOLBottleneck rule names the side that binds — taken, and said — under the
  // same lean rule as above.
  bool leans = v.sm_throughput_pct && v.memory_throughput_pct &&
               (v.roofline != Roofline::kLatencyBound ||
                std::max(*v.memory_throughput_pct / t.memory_pct,
                         *v.sm_throughput_pct / t.compute_pct) >= 0.75);
  if (v.bound_by.empty() && (!v.memory_unit || !v.compute_unit) && leans) {
    for (const model::RuleFinding& rule : kernel.rules) {
      if (rule.rule != "SOLBottleneck") continue;
      SolClass sol = classify_sol_message(rule.message);
      if (sol.verdict == "memory" || (sol.verdict == "bound" && !sol.unit.empty())) {
        v.bound_by = sol.unit.empty() ? "memory" : sol.unit;
      } else if (sol.verdict == "compute") {
        v.bound_by = "compute";
      }
      if (!v.bound_by.empty()) v.bound_by_source = "ncu's SOLBottleneck rule";
    }
  }
  compute_flops(reader, kernel, v);
  compute_memory(reader, report, kernel, config, v);
  compute_measured_ceilings(report, kernel, config, v);
  compute_occupancy(reader, kernel, v);
  compute_stalls(kernel, v);
  if (v.roofline == Roofline::kLatencyBound) explain_latency(v);
  explain_instruction_bound(v);
  second_opinion(kernel, v, t);
  if (config.stages) {
    StageDecision stage = config.stages->decide(kernel);
    v.stage = std::move(stage.stage);
    v.stage_source = stage_source_name(stage.source);
    v.stage_evidence = std::move(stage.evidence);
  }

  if (config.expectations) {
    const model::Device* device = report.device_of(kernel);
    std::string gpu = device ? device->name : "";
    if (const Expectation* e = config.expectations->find(gpu, kernel)) {
      v.expected_bottleneck = e->expected;
      v.expectation_workload = e->workload;
      std::string measured = v.roofline == Roofline::kLatencyBound ? "latency" : v.bound_by;
      v.contradicts_expectation =
          e->expected != "mixed" && !measured.empty() && measured != e->expected;
    }
  }
  write_headroom(v, t);

  auto need = [&](bool present, const char* field, const char* needs) {
    if (!present) v.missing.push_back(fmt::format("{} (needs {})", field, needs));
  };
  need(v.duration_ns.has_value(), "wall_clock_us", "gpu__time_duration.sum");
  need(v.roofline != Roofline::kUnknown, "roofline",
       "SpeedOfLight: sm__throughput and gpu__compute_memory_throughput, or "
       "ComputeWorkloadAnalysis and MemoryWorkloadAnalysis");
  need((v.memory_unit.has_value() && v.compute_unit.has_value()) || !v.bound_by_source.empty(),
       "bound_by", "SpeedOfLight breakdown metrics");
  if (!v.tflops_withheld.empty()) {
    v.missing.push_back(
        fmt::format("tflops ({}: needs that sm__ops_path_tensor_src_* counter, "
                    "e.g. --preset full)",
                    v.tflops_withheld));
  } else {
    need(v.tflops.has_value(), "tflops",
         "the roofline sections' rates: smsp__sass_thread_inst_executed_op_* and "
         "sm__ops_path_tensor_src_* (SpeedOfLight_RooflineChart, Hierarchical*RooflineChart)");
  }
  need(v.memory_bw_utilization.has_value(), "memory_bw_utilization",
       "dram__bytes.sum.per_second and its peak");
  need(v.arithmetic_intensity.has_value(), "arithmetic_intensity", "FLOP/s and DRAM bytes/s");
  need(v.achieved_occupancy.has_value(), "sm_occupancy",
       "Occupancy: sm__warps_active.avg.pct_of_peak_sustained_active");
  need(!v.occupancy_limiter.empty(), "occupancy_limiter", "launch__occupancy_limit_*");
  need(v.shared_memory_usage_bytes.has_value(), "shared_memory_usage_bytes",
       "launch__shared_mem_per_block");
  need(!v.stalls.empty(), "warp_stall_reasons",
       "WarpStateStats: smsp__average_warps_issue_stalled_*_per_issue_active.ratio, or >= 100 PC "
       "samples (smsp__pcsamp_warps_issue_stalled_*)");
  // Counters ncu wrote as NaN or infinite: named, and every figure that needs one is withheld
  // above (Reader::number gives no value for them).
  for (const std::string& name : reader.invalid()) v.invalid_counters.push_back(name);
  std::sort(v.invalid_counters.begin(), v.invalid_counters.end());
  v.invalid_counters.erase(std::unique(v.invalid_counters.begin(), v.invalid_counters.end()),
                           v.invalid_counters.end());
  if (v.stalls.empty()) v.stall_variant.clear();
  return v;
}

}  // namespace kprof::analysis
