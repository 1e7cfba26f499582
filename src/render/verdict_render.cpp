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
#include "render/verdict_columns.h"

namespace kprof::render {
namespace {

using nlohmann::json;

std::string thresholds_text(const analysis::Thresholds& t) {
  return fmt::format(
      "compute-bound: SM throughput ≥ {}% of peak; memory-bound: memory throughput "
      "≥ {}%; both: at the ridge; neither: latency-bound, or issue-bound with the issue slots "
      "≥ 60% busy; an SM side of non-math instructions (every math pipe < 60%): overhead-bound",
      format_number(t.compute_pct), format_number(t.memory_pct));
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

std::string verdict_table(const std::vector<AnalyzedKernel>& kernels,
                          const analysis::Thresholds& thresholds, size_t name_width) {
  bool joined =
      std::any_of(kernels.begin(), kernels.end(), [](const AnalyzedKernel& k) { return k.joined; });
  bool calibrated = std::any_of(kernels.begin(), kernels.end(), [](const AnalyzedKernel& k) {
    return !k.verdict.measured_ceilings.empty();
  });
  const CellContext context{&thresholds, name_width};
  const std::vector<const VerdictColumn*> shown = table_columns(joined, calibrated);
  std::vector<TextTable::Column> columns;
  for (const VerdictColumn* column : shown)
    columns.push_back({std::string(column->table_header), column->align});
  TextTable table(columns);
  std::set<std::string> missing;
  std::vector<std::pair<std::string, std::string>> notes;  // contradiction -> kernel ids
  for (const AnalyzedKernel& k : kernels) {
    const analysis::KernelVerdict& v = k.verdict;
    missing.insert(v.missing.begin(), v.missing.end());
    std::vector<std::string> row;
    for (const VerdictColumn* column : shown) row.push_back(column->table_cell(k, context));
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
  // Issue-bound and overhead-bound say why and what helps, every kernel (they are rare).
  for (analysis::Roofline roofline :
       {analysis::Roofline::kIssueBound, analysis::Roofline::kOverheadBound}) {
    bool first = true;
    for (const AnalyzedKernel& k : kernels) {
      const analysis::KernelVerdict& v = k.verdict;
      if (v.roofline != roofline || v.instruction_reasons.empty()) continue;
      if (first) out += "why " + analysis::roofline_name(roofline) + ":\n";
      first = false;
      std::string reasons;
      for (const auto& reason : v.instruction_reasons) {
        reasons += (reasons.empty() ? "" : "; ") + reason;
      }
      out += fmt::format("  {} {}: {}\n", k.kernel->id,
                         ellipsize(k.kernel->display_name(), name_width),
                         escape_for_terminal(reasons));
    }
  }
  // Where ncu's own SOLBottleneck rule, recorded in the report, reads the kernel otherwise.
  bool first_disagreement = true;
  for (const AnalyzedKernel& k : kernels) {
    const auto& opinion = k.verdict.second_opinion;
    if (!opinion || opinion->agrees) continue;
    if (first_disagreement) out += "where ncu's rules read it otherwise:\n";
    first_disagreement = false;
    out += fmt::format("  {} {}: kprof {}, ncu's {} {}{} — {}\n", k.kernel->id,
                       ellipsize(k.kernel->display_name(), name_width),
                       analysis::roofline_name(k.verdict.roofline), opinion->rule, opinion->verdict,
                       opinion->unit.empty() ? "" : " (" + opinion->unit + ")",
                       escape_for_terminal(opinion->note));
  }
  for (const auto& [what, ids] : notes) {
    out +=
        fmt::format("(!) contradicts its expected bottleneck: {} — kernel{} {}\n",
                    escape_for_terminal(what), ids.find(',') == std::string::npos ? "" : "s", ids);
  }
  // Figures kprof took from ncu's own verdicts, where the capture lacks what kprof derives them
  // from (a details CSV of SpeedOfLight's headline rows, a GPU kprof's database lacks).
  std::vector<std::pair<std::string, std::string>> bound_by_sources;  // source -> kernel ids
  std::string from_ncu_pct;
  for (const AnalyzedKernel& k : kernels) {
    std::string id = std::to_string(k.kernel->id);
    // An issue-bound kernel's pipe is named in its "why issue-bound" line.
    if (!k.verdict.bound_by.empty() && !k.verdict.bound_by_source.empty() &&
        k.verdict.roofline != analysis::Roofline::kIssueBound) {
      auto it = std::find_if(bound_by_sources.begin(), bound_by_sources.end(),
                             [&](const auto& s) { return s.first == k.verdict.bound_by_source; });
      if (it == bound_by_sources.end()) {
        bound_by_sources.push_back({k.verdict.bound_by_source, id});
      } else {
        it->second += ", " + id;
      }
    }
    if (k.verdict.memory_bw_from_ncu_pct) {
      from_ncu_pct += (from_ncu_pct.empty() ? "" : ", ") + id;
    }
  }
  for (const AnalyzedKernel& k : kernels) {
    if (k.verdict.invalid_counters.empty()) continue;
    std::string names;
    for (const std::string& name : k.verdict.invalid_counters) {
      names += (names.empty() ? "" : ", ") + name;
    }
    out += fmt::format(
        "kernel {}: counters ncu wrote as NaN or infinite, every figure needing them withheld: "
        "{}\n",
        k.kernel->id, escape_for_terminal(names));
  }
  for (const auto& [source, ids] : bound_by_sources) {
    out += "bound by from " + source +
           (source.rfind("ncu's SOLBottleneck", 0) == 0
                ? " (the capture has no breakdown metrics)"
                : " (the capture has no SpeedOfLight breakdown)") +
           ": kernel" + std::string(ids.find(',') == std::string::npos ? " " : "s ") + ids + "\n";
  }
  // Stages the names left open and the counters decided (StageTable::decide), one line each.
  for (const AnalyzedKernel& k : kernels) {
    if (k.verdict.stage_source != "counters") continue;
    out += fmt::format("stage of kernel {} from its {}\n", k.kernel->id,
                       escape_for_terminal(k.verdict.stage_evidence));
  }
  if (!from_ncu_pct.empty()) {
    out +=
        "DRAM BW is ncu's DRAM Throughput (the capture lacks DRAM bytes/s or their peak): kernel" +
        std::string(from_ncu_pct.find(',') == std::string::npos ? " " : "s ") + from_ncu_pct + "\n";
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
        {"bound_by_source", v.bound_by.empty()          ? json(nullptr)
                            : v.bound_by_source.empty() ? json("breakdown metrics")
                                                        : json(v.bound_by_source)},
        {"units", {{"memory", unit_json(v.memory_unit)}, {"compute", unit_json(v.compute_unit)}}},
        {"sm_throughput_pct", optional_json(v.sm_throughput_pct)},
        {"memory_throughput_pct", optional_json(v.memory_throughput_pct)},
        {"throughput_source",
         v.throughput_source.empty() ? json(nullptr) : json(v.throughput_source)},
        {"issue_slots_busy_pct", v.issue_slots ? json(v.issue_slots->pct) : json(nullptr)},
        {"math_pipe", unit_json(v.math_pipe)},
        {"instruction_reasons", v.instruction_reasons},
        {"second_opinion",
         v.second_opinion
             ? json{{"rule", v.second_opinion->rule},
                    {"ncu_verdict", v.second_opinion->verdict},
                    {"ncu_unit",
                     v.second_opinion->unit.empty() ? json(nullptr) : json(v.second_opinion->unit)},
                    {"agrees", v.second_opinion->agrees},
                    {"note",
                     v.second_opinion->note.empty() ? json(nullptr) : json(v.second_opinion->note)}}
             : json(nullptr)},
        {"tflops", optional_json(v.tflops)},
        {"flops_per_second", flops},
        {"dram_bytes_per_second", optional_json(v.dram_bytes_per_second)},
        {"dram_peak_bytes_per_second", optional_json(v.dram_peak_bytes_per_second)},
        {"dram_peak_source", v.dram_peak_source},
        {"memory_bw_utilization", optional_json(v.memory_bw_utilization)},
        {"memory_bw_source", !v.memory_bw_utilization ? json(nullptr)
                             : v.memory_bw_from_ncu_pct
                                 ? json("ncu's DRAM Throughput (gpu__dram_throughput)")
                                 : json("dram bytes/s over the peak")},
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
        {"stall_variant", v.stall_variant.empty() ? json(nullptr) : json(v.stall_variant)},
        {"invalid_counters", v.invalid_counters},
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
        {"stage_source", v.stage_source.empty() ? json(nullptr) : json(v.stage_source)},
        {"stage_evidence", v.stage_evidence.empty() ? json(nullptr) : json(v.stage_evidence)},
        {"expected_bottleneck", expectation},
        {"optimization_headroom", v.headroom},
        {"ncu_rules", rules_json(*k.kernel)},
        {"missing", v.missing},
    });
  }
  json notes = json::array();
  for (const model::Report* report : reports) {
    for (const json& note : reading_notes_json(*report)) {
      notes.push_back({{"report", report->path}, {"note", note}});
    }
  }
  return {{"schema", "kprof.analysis/1"},
          {"tool", tool_json(argv)},
          {"gpu", gpu},
          {"reading_notes", notes},
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
  const CellContext context{&thresholds, 0};
  const std::vector<const VerdictColumn*> fields = csv_columns();
  std::string out;
  for (size_t i = 0; i < fields.size(); ++i)
    out += (i ? "," : "") + std::string(fields[i]->csv_header);
  out += "\n";
  for (const AnalyzedKernel& k : kernels) {
    for (size_t i = 0; i < fields.size(); ++i) {
      out += (i ? "," : "") + fields[i]->csv_cell(k, context);
    }
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
