#include "render/verdict_render.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "common/text.h"
#include "common/utf8.h"
#include "render/envelope.h"
#include "render/report_json.h"
#include "render/table.h"

namespace kprof::render {
namespace {

using nlohmann::json;

std::string cell(const std::optional<double>& value, double scale = 1) {
  if (!value || std::isnan(*value)) return "—";
  double scaled = *value * scale;
  return scaled != 0 && std::fabs(scaled) < 0.0005 ? "~0" : format_number(scaled);
}

std::string thresholds_text(const analysis::Thresholds& t) {
  return fmt::format(
      "compute-bound: SM throughput ≥ {}% of peak; memory-bound: memory throughput "
      "≥ {}%; both: at the ridge; neither: latency-bound",
      format_number(t.compute_pct), format_number(t.memory_pct));
}

std::string top_stall(const analysis::KernelVerdict& v) {
  if (v.stalls.empty()) return "—";
  return fmt::format("{} {:.0f}%", v.stalls.front().reason, v.stalls.front().share * 100);
}

std::string limiter_cell(const analysis::KernelVerdict& v) {
  if (!v.achieved_occupancy && !v.theoretical_occupancy) return "—";
  std::string text =
      fmt::format("{}/{}", cell(v.achieved_occupancy, 100), cell(v.theoretical_occupancy, 100));
  if (!v.occupancy_limiter.empty() && v.occupancy_limiter != "none") {
    text += " " + v.occupancy_limiter;
  }
  return text;
}

std::string short_ceiling_name(const std::string& ceiling) {
  for (const char* suffix : {"_bandwidth", "_flops"}) {
    std::string_view tail(suffix);
    if (ceiling.size() > tail.size() && ceiling.ends_with(tail)) {
      return ceiling.substr(0, ceiling.size() - tail.size());
    }
  }
  return ceiling;
}

// The ceiling the kernel came closest to: "dram 97% (peak 83%)".
std::string measured_ceiling_cell(const analysis::KernelVerdict& v) {
  if (v.measured_ceilings.empty()) return "—";
  const analysis::CeilingUse& top = v.measured_ceilings.front();
  std::string text =
      fmt::format("{} {:.0f}%", short_ceiling_name(top.ceiling), top.fraction_of_measured * 100);
  if (top.fraction_of_peak) text += fmt::format(" (peak {:.0f}%)", *top.fraction_of_peak * 100);
  return text;
}

}  // namespace

std::string csv_field(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string share_cell(const AnalyzedKernel& k) {
  if (!k.share) return "not in trace";
  return fmt::format("{:.1f}", k.share->fraction_of_pipeline * 100);
}

std::string speedup_cell(const AnalyzedKernel& k) {
  if (!k.share) return "—";
  return std::isinf(k.share->max_e2e_speedup) ? "∞"
                                              : fmt::format("{:.2f}×", k.share->max_e2e_speedup);
}

std::string verdict_table(const std::vector<AnalyzedKernel>& kernels,
                          const analysis::Thresholds& thresholds, size_t name_width) {
  bool joined =
      std::any_of(kernels.begin(), kernels.end(), [](const AnalyzedKernel& k) { return k.joined; });
  bool calibrated = std::any_of(kernels.begin(), kernels.end(), [](const AnalyzedKernel& k) {
    return !k.verdict.measured_ceilings.empty();
  });
  std::vector<TextTable::Column> columns = {
      {"id", TextTable::Align::kRight}, {"kernel"}, {"us", TextTable::Align::kRight}};
  if (joined) {
    columns.push_back({"% pipe", TextTable::Align::kRight});
    columns.push_back({"max e2e", TextTable::Align::kRight});
  }
  TextTable table = [&] {
    std::vector<TextTable::Column> rest = {{"verdict"},
                                           {"bound by"},
                                           {"SM %", TextTable::Align::kRight},
                                           {"mem %", TextTable::Align::kRight},
                                           {"TFLOP/s", TextTable::Align::kRight},
                                           {"DRAM BW", TextTable::Align::kRight},
                                           {"occ % ach/theo limiter"},
                                           {"top stall"},
                                           {"stage"}};
    if (calibrated) rest.insert(rest.begin() + 6, TextTable::Column{"measured ceiling"});
    columns.insert(columns.end(), rest.begin(), rest.end());
    return TextTable(columns);
  }();
  std::set<std::string> missing;
  std::vector<std::pair<std::string, std::string>> notes;  // contradiction -> kernel ids
  for (const AnalyzedKernel& k : kernels) {
    const analysis::KernelVerdict& v = k.verdict;
    missing.insert(v.missing.begin(), v.missing.end());
    std::string verdict = analysis::roofline_name(v.roofline);
    if (v.contradicts_expectation) verdict += " (!)";
    std::vector<std::string> row = {std::to_string(k.kernel->id),
                                    ellipsize(k.kernel->display_name(), name_width),
                                    cell(v.duration_ns, 1e-3)};
    if (joined) {
      row.push_back(share_cell(k));
      row.push_back(speedup_cell(k));
    }
    std::vector<std::string> rest = {
        verdict,
        v.bound_by.empty() ? "—" : v.bound_by,
        cell(v.sm_throughput_pct),
        cell(v.memory_throughput_pct),
        cell(v.tflops),
        v.memory_bw_utilization ? fmt::format("{:.0f}%", *v.memory_bw_utilization * 100) : "—",
        limiter_cell(v),
        top_stall(v),
        v.stage.empty() ? "—" : v.stage};
    if (calibrated) rest.insert(rest.begin() + 6, measured_ceiling_cell(v));
    row.insert(row.end(), rest.begin(), rest.end());
    table.add_row(std::move(row));
    if (v.contradicts_expectation) {
      std::string key = fmt::format(
          "expected {} ({}), measured {}", v.expected_bottleneck, v.expectation_workload,
          v.roofline == analysis::Roofline::kLatencyBound ? "latency-bound" : v.bound_by);
      auto it = std::find_if(notes.begin(), notes.end(),
                             [&](const auto& note) { return note.first == key; });
      if (it == notes.end()) {
        notes.push_back({key, std::to_string(k.kernel->id)});
      } else {
        it->second += ", " + std::to_string(k.kernel->id);
      }
    }
  }
  std::string out = table.to_string();
  out += "thresholds: " + thresholds_text(thresholds) + "\n";
  if (calibrated) {
    out +=
        "measured ceiling: the rate the kernel came closest to, as % of what `kprof calibrate` "
        "measured on this GPU (the --gpus calibration), and as % of the datasheet's or ncu's "
        "peak\n";
  }
  // Latency-bound says why, longest kernels first (the table is usually sorted that way).
  size_t explained = 0, unexplained = 0;
  for (const AnalyzedKernel& k : kernels) {
    const analysis::KernelVerdict& v = k.verdict;
    if (v.roofline != analysis::Roofline::kLatencyBound || v.latency_reasons.empty()) continue;
    if (explained == 8) {
      ++unexplained;
      continue;
    }
    if (explained++ == 0) out += "why latency-bound:\n";
    std::string reasons;
    for (const auto& reason : v.latency_reasons) reasons += (reasons.empty() ? "" : "; ") + reason;
    out +=
        fmt::format("  {} {}: {}\n", k.kernel->id, ellipsize(k.kernel->display_name(), name_width),
                    escape_for_terminal(reasons));
  }
  if (unexplained)
    out += fmt::format("  … and {} more (--json has every kernel's reasons)\n", unexplained);
  for (const auto& [what, ids] : notes) {
    out +=
        fmt::format("(!) contradicts its expected bottleneck: {} — kernel{} {}\n",
                    escape_for_terminal(what), ids.find(',') == std::string::npos ? "" : "s", ids);
  }
  if (!missing.empty()) {
    out += "not derivable from this capture:";
    for (const auto& m : missing) out += "\n  " + escape_for_terminal(m);
    out += "\n";
  }
  return out;
}

json verdict_json(const std::vector<AnalyzedKernel>& kernels,
                  const std::vector<const model::Report*>& reports,
                  const analysis::AnalysisConfig& config, const std::vector<std::string>& argv) {
  json gpu = nullptr;
  if (!reports.empty() && !reports.front()->devices.empty()) {
    const model::Device& device = reports.front()->devices.front();
    const hardware::GpuSpec* spec =
        config.gpus ? config.gpus->find_for_device(device.name) : nullptr;
    gpu = {{"name", device.name},
           {"cc", device.compute_capability()},
           {"sm_count", optional_json(device.number("device__attribute_multiprocessor_count"))},
           {"database_entry", spec ? json(spec->name) : json(nullptr)}};
  }
  json list = json::array();
  for (const AnalyzedKernel& k : kernels) {
    const analysis::KernelVerdict& v = k.verdict;
    json stalls = json::object();
    for (const auto& stall : v.stalls) stalls[stall.reason] = stall.share;
    auto unit_json = [](const std::optional<analysis::UnitUse>& unit) -> json {
      if (!unit) return nullptr;
      return {{"unit", unit->unit}, {"metric", unit->metric}, {"pct_of_peak", unit->pct}};
    };
    json flops = json::object();
    for (const auto& [precision, rate] : v.flops_per_second) flops[precision] = rate;
    json limits = json::object();
    for (const auto& [name, blocks] : v.occupancy_block_limits) limits[name] = blocks;
    json ceilings = json::array();
    for (const analysis::CeilingUse& use : v.measured_ceilings) {
      ceilings.push_back({{"ceiling", use.ceiling},
                          {"rate", use.rate},
                          {"unit", use.unit},
                          {"achieved", use.achieved},
                          {"measured_ceiling", use.measured_ceiling},
                          {"pct_of_measured_ceiling", use.fraction_of_measured * 100},
                          {"peak", optional_json(use.peak)},
                          {"pct_of_peak", use.fraction_of_peak ? json(*use.fraction_of_peak * 100)
                                                               : json(nullptr)},
                          {"peak_source", use.peak_source}});
    }
    json expectation = nullptr;
    if (!v.expected_bottleneck.empty()) {
      expectation = {{"expected", v.expected_bottleneck},
                     {"workload", v.expectation_workload},
                     {"contradicted", v.contradicts_expectation}};
    }
    list.push_back({
        {"report", k.report->path},
        {"launch", k.kernel->id},
        {"target", k.kernel->display_name()},
        {"demangled", k.kernel->demangled_name},
        {"mangled", k.kernel->mangled_name},
        {"grid", {k.kernel->grid.x, k.kernel->grid.y, k.kernel->grid.z}},
        {"block", {k.kernel->block.x, k.kernel->block.y, k.kernel->block.z}},
        {"roofline", analysis::roofline_name(v.roofline)},
        {"bound_by", v.bound_by.empty() ? json(nullptr) : json(v.bound_by)},
        {"units", {{"memory", unit_json(v.memory_unit)}, {"compute", unit_json(v.compute_unit)}}},
        {"sm_throughput_pct", optional_json(v.sm_throughput_pct)},
        {"memory_throughput_pct", optional_json(v.memory_throughput_pct)},
        {"tflops", optional_json(v.tflops)},
        {"flops_per_second", flops},
        {"dram_bytes_per_second", optional_json(v.dram_bytes_per_second)},
        {"dram_peak_bytes_per_second", optional_json(v.dram_peak_bytes_per_second)},
        {"dram_peak_source", v.dram_peak_source},
        {"memory_bw_utilization", optional_json(v.memory_bw_utilization)},
        {"arithmetic_intensity", optional_json(v.arithmetic_intensity)},
        {"measured_ceilings", ceilings},
        {"sm_occupancy", optional_json(v.achieved_occupancy)},
        {"theoretical_occupancy", optional_json(v.theoretical_occupancy)},
        {"occupancy_limiter",
         v.occupancy_limiter.empty() ? json(nullptr) : json(v.occupancy_limiter)},
        {"occupancy_block_limits", limits},
        {"shared_memory_usage_bytes", optional_json(v.shared_memory_usage_bytes)},
        {"registers_per_thread", optional_json(v.registers_per_thread)},
        {"waves_per_sm", optional_json(v.waves_per_sm)},
        {"warp_stall_reasons", stalls},
        {"latency_reasons", v.latency_reasons},
        {"wall_clock_us", v.duration_ns ? json(*v.duration_ns / 1000) : json(nullptr)},
        {"fraction_of_pipeline", k.share ? json(k.share->fraction_of_pipeline) : json(nullptr)},
        {"max_e2e_speedup", k.share && !std::isinf(k.share->max_e2e_speedup)
                                ? json(k.share->max_e2e_speedup)
                                : json(nullptr)},
        {"trace", k.joined
                      ? (k.share ? json{{"total_us", k.share->time.total_us},
                                        {"launches", k.share->time.count},
                                        {"matched_launch_config", k.share->matched_launch_config}}
                                 : json("not in trace"))
                      : json(nullptr)},
        {"pipeline_stage", v.stage},
        {"expected_bottleneck", expectation},
        {"optimization_headroom", v.headroom},
        {"ncu_rules", rules_json(*k.kernel)},
        {"missing", v.missing},
    });
  }
  return {{"schema", "kprof.analysis/1"},
          {"tool", tool_json(argv)},
          {"gpu", gpu},
          {"thresholds",
           {{"compute_pct", config.thresholds.compute_pct},
            {"memory_pct", config.thresholds.memory_pct}}},
          {"tables",
           {{"gpus", config.gpus ? config.gpus->origin : ""},
            {"stages", config.stages ? config.stages->origin : ""},
            {"expectations", config.expectations ? config.expectations->origin : ""}}},
          {"kernels", list}};
}

std::string verdict_csv(const std::vector<AnalyzedKernel>& kernels,
                        const analysis::Thresholds& thresholds) {
  std::string out =
      "report,launch,kernel,stage,wall_clock_us,roofline,bound_by,sm_throughput_pct,"
      "memory_throughput_pct,tflops,memory_bw_utilization,arithmetic_intensity,sm_occupancy,"
      "theoretical_occupancy,occupancy_limiter,registers_per_thread,top_stall,top_stall_share,"
      "expected_bottleneck,contradicts_expectation,optimization_headroom,compute_threshold_pct,"
      "memory_threshold_pct\n";
  auto number = [](const std::optional<double>& value) {
    return value && !std::isnan(*value) ? fmt::format("{}", *value) : std::string();
  };
  for (const AnalyzedKernel& k : kernels) {
    const analysis::KernelVerdict& v = k.verdict;
    std::vector<std::string> fields = {
        csv_field(k.report->path),
        std::to_string(k.kernel->id),
        csv_field(k.kernel->display_name()),
        csv_field(v.stage),
        number(v.duration_ns ? std::optional<double>(*v.duration_ns / 1000) : std::nullopt),
        csv_field(analysis::roofline_name(v.roofline)),
        csv_field(v.bound_by),
        number(v.sm_throughput_pct),
        number(v.memory_throughput_pct),
        number(v.tflops),
        number(v.memory_bw_utilization),
        number(v.arithmetic_intensity),
        number(v.achieved_occupancy),
        number(v.theoretical_occupancy),
        csv_field(v.occupancy_limiter),
        number(v.registers_per_thread),
        csv_field(v.stalls.empty() ? "" : v.stalls.front().reason),
        v.stalls.empty() ? "" : fmt::format("{}", v.stalls.front().share),
        csv_field(v.expected_bottleneck),
        v.contradicts_expectation ? "true" : "false",
        csv_field(v.headroom),
        fmt::format("{}", thresholds.compute_pct),
        fmt::format("{}", thresholds.memory_pct)};
    for (size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + fields[i];
    out += "\n";
  }
  return out;
}

std::string nothing_joined(const std::vector<AnalyzedKernel>& kernels,
                           const std::vector<std::string>& report_paths,
                           const std::string& trace_path,
                           const std::vector<std::string>& longest_traced) {
  auto listed = [](const std::vector<std::string>& names, size_t total) {
    std::string text;
    for (size_t i = 0; i < names.size() && i < 3; ++i) {
      text += (i ? ", " : "") + ellipsize(names[i], 60);
    }
    return total > 3 ? text + fmt::format(", … ({} names)", total) : text;
  };
  std::vector<std::string> captured;
  for (const auto& k : kernels) {
    const std::string& name = k.kernel->display_name();
    if (std::find(captured.begin(), captured.end(), name) == captured.end())
      captured.push_back(name);
  }
  std::sort(captured.begin(), captured.end());
  std::string reports;
  for (const std::string& path : report_paths) reports += (reports.empty() ? "" : ", ") + path;
  return fmt::format(
      "nothing in common: none of the captured kernels of {} ({}) is in {}, so no kernel was "
      "joined; {}",
      reports, captured.empty() ? "none" : listed(captured, captured.size()), trace_path,
      longest_traced.empty()
          ? "the trace has no kernels"
          : "the trace's longest kernels are " + listed(longest_traced, longest_traced.size()));
}

}  // namespace kprof::render
