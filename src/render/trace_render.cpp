#include "render/trace_render.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/text.h"
#include "common/utf8.h"
#include "render/envelope.h"
#include "render/table.h"

namespace kprof::render {
namespace {

using nlohmann::json;

std::string pct(double share) { return fmt::format("{:.1f}", share * 100); }
std::string ms(double us) { return format_number(us / 1000); }

// A threshold given in percent and stored as a fraction, printed as given (0.6 * 100 is not 60).
std::string percent_of(double fraction) {
  return format_number(std::round(fraction * 100 * 1e6) / 1e6);
}

double busy_fraction(const timeline::Budget& budget) {
  return budget.total_span_us > 0 ? budget.total_busy_us / budget.total_span_us : 0;
}

std::string budget_advice(const timeline::Budget& budget) {
  double busy = busy_fraction(budget);
  if (budget.overall == timeline::StepVerdict::kHostBound) {
    return fmt::format(
        "The GPU is busy only {:.0f}% of the time its work spans: it waits on the host between "
        "kernels. Per-kernel counter work is moot here — a kernel made twice as fast saves at most "
        "{:.0f}% of a step — until launches are batched (CUDA graphs, torch.compile "
        "mode=\"reduce-overhead\") or the host work shrinks.",
        busy * 100, busy * 50);
  }
  if (budget.overall == timeline::StepVerdict::kKernelBound) {
    return fmt::format(
        "The GPU is busy {:.0f}% of the time its work spans: the steps are kernel-bound, so "
        "faster kernels shorten them — rank them (kprof rank) and capture the largest (kprof "
        "analyze).",
        busy * 100);
  }
  return {};
}

// One warning line (no "kprof: " prefix, no newline) naming the trace, how many events were
// skipped and the first of them; "" when none was.
std::string skipped_events_warning(const std::string& path,
                                   const importers::TraceReadStats& stats) {
  if (stats.skipped_events == 0) return {};
  return fmt::format(
      "warning: {}: skipped {} event{} with an impossible time (first {}); "
      "the rest of the trace is used",
      path, stats.skipped_events, stats.skipped_events == 1 ? "" : "s", stats.first_skipped);
}

}  // namespace

std::string trace_warnings(const TraceSource& source) {
  std::string warning = skipped_events_warning(source.path, source.stats);
  return warning.empty() ? "" : "kprof: " + escape_for_terminal(warning) + "\n";
}

json ranking_json(const timeline::Ranking& ranking, const TraceSource& source) {
  json kernels = json::array();
  for (const auto& k : ranking.kernels) {
    kernels.push_back({{"name", k.name},
                       {"kind", k.kind},
                       {"stage", k.stage},
                       {"count", k.count},
                       {"total_us", k.total_us},
                       {"mean_us", k.total_us / static_cast<double>(k.count)},
                       {"min_us", k.min_us},
                       {"max_us", k.max_us},
                       {"share_of_gpu_time", k.share_of_gpu_time},
                       {"share_of_wall", k.share_of_wall}});
  }
  json stage_list = json::array();
  for (const auto& s : ranking.stages) {
    stage_list.push_back({{"stage", s.stage},
                          {"count", s.count},
                          {"total_us", s.total_us},
                          {"share_of_gpu_time", s.share_of_gpu_time}});
  }
  return {{"schema", "kprof.rank/1"},
          {"tool", tool_json(source.argv)},
          {"trace", source.path},
          {"events", source.stats.events},
          {"gpu_events", ranking.gpu_events},
          {"gpu_time_us", ranking.gpu_time_us},
          {"wall_us", ranking.wall_us},
          {"kernels", kernels},
          {"stages", stage_list}};
}

std::string ranking_text(const timeline::Ranking& ranking, const TraceSource& source, size_t top,
                         size_t name_width) {
  std::string out = fmt::format(
      "{}: {} GPU activities ({} kernels, {} memcpy, {} memset) of {} events; GPU time {} ms "
      "(summed durations) over a {} ms trace span; {} distinct names\n",
      escape_for_terminal(source.path), ranking.gpu_events, ranking.kernel_events,
      ranking.memcpy_events, ranking.memset_events, source.stats.events, ms(ranking.gpu_time_us),
      ms(ranking.wall_us), ranking.kernels.size());
  TextTable table({{"#", TextTable::Align::kRight},
                   {"kernel"},
                   {"stage"},
                   {"count", TextTable::Align::kRight},
                   {"total ms", TextTable::Align::kRight},
                   {"mean us", TextTable::Align::kRight},
                   {"% GPU", TextTable::Align::kRight},
                   {"% wall", TextTable::Align::kRight}});
  size_t shown = std::min(top, ranking.kernels.size());
  for (size_t i = 0; i < shown; ++i) {
    const auto& k = ranking.kernels[i];
    table.add_row({std::to_string(i + 1), ellipsize(k.name, name_width), k.stage,
                   std::to_string(k.count), ms(k.total_us),
                   format_number(k.total_us / static_cast<double>(k.count)),
                   pct(k.share_of_gpu_time), pct(k.share_of_wall)});
  }
  out += table.to_string();
  if (shown < ranking.kernels.size()) {
    double rest = 0;
    for (size_t i = shown; i < ranking.kernels.size(); ++i) rest += ranking.kernels[i].total_us;
    out += fmt::format("… {} more names, {}% of GPU time (--top N shows more)\n",
                       ranking.kernels.size() - shown,
                       pct(ranking.gpu_time_us > 0 ? rest / ranking.gpu_time_us : 0));
  }
  TextTable by_stage({{"stage"},
                      {"count", TextTable::Align::kRight},
                      {"total ms", TextTable::Align::kRight},
                      {"% GPU", TextTable::Align::kRight}});
  for (const auto& s : ranking.stages) {
    by_stage.add_row({s.stage, std::to_string(s.count), ms(s.total_us), pct(s.share_of_gpu_time)});
  }
  out += "\nby stage\n" + by_stage.to_string();
  return out;
}

json step_ranking_json(const timeline::Budget& budget, const TraceSource& source) {
  json steps = json::array();
  for (const auto& step : budget.steps) {
    double total = 0;
    for (const auto& [name, us] : step.kernels) total += us;
    json kernels = json::array();
    for (const auto& [name, us] : step.kernels) {
      kernels.push_back({{"name", name},
                         {"total_us", us},
                         {"share_of_step_gpu_time", total > 0 ? us / total : 0}});
    }
    steps.push_back({{"name", step.name},
                     {"gpu_busy_us", step.gpu_busy_us},
                     {"gpu_span_us", step.gpu_span_us},
                     {"kernels", kernels}});
  }
  return {{"schema", "kprof.rank-steps/1"},
          {"tool", tool_json(source.argv)},
          {"trace", source.path},
          {"steps_from", budget.step_selector},
          {"steps", steps}};
}

std::string step_ranking_text(const timeline::Budget& budget, const TraceSource& source, size_t top,
                              size_t name_width) {
  std::string out =
      fmt::format("{}: {} step{} ({})\n", escape_for_terminal(source.path), budget.steps.size(),
                  budget.steps.size() == 1 ? "" : "s", escape_for_terminal(budget.step_selector));
  for (const auto& step : budget.steps) {
    double total = 0;
    for (const auto& [name, us] : step.kernels) total += us;
    out += fmt::format("\n{}: GPU time {} ms, GPU busy {} ms of a {} ms span\n",
                       escape_for_terminal(step.name), ms(total), ms(step.gpu_busy_us),
                       ms(step.gpu_span_us));
    TextTable table({{"#", TextTable::Align::kRight},
                     {"kernel"},
                     {"ms", TextTable::Align::kRight},
                     {"% of step", TextTable::Align::kRight}});
    size_t shown = std::min(top, step.kernels.size());
    for (size_t i = 0; i < shown; ++i) {
      const auto& [name, us] = step.kernels[i];
      table.add_row({std::to_string(i + 1), ellipsize(name, name_width), ms(us),
                     pct(total > 0 ? us / total : 0)});
    }
    out += table.to_string();
  }
  return out;
}

json budget_json(const timeline::Budget& budget, const timeline::BudgetThresholds& thresholds,
                 const TraceSource& source) {
  json steps = json::array();
  for (const auto& s : budget.steps) {
    steps.push_back({{"name", s.name},
                     {"source", s.source},
                     {"start_us", s.start_us},
                     {"host_duration_us", s.host_duration_us},
                     {"gpu_span_us", s.gpu_span_us},
                     {"gpu_busy_us", s.gpu_busy_us},
                     {"host_gap_us", s.host_gap_us},
                     {"busy_fraction", s.busy_fraction},
                     {"gpu_activities", s.gpu_activities},
                     {"launches", s.kernel_launches},
                     {"graph_launches", s.graph_launches},
                     {"verdict", timeline::step_verdict_name(s.verdict)}});
  }
  return {{"schema", "kprof.budget/1"},
          {"tool", tool_json(source.argv)},
          {"trace", source.path},
          {"steps_from", budget.step_selector},
          {"thresholds",
           {{"host_bound_below", thresholds.host_bound_below},
            {"kernel_bound_from", thresholds.kernel_bound_from}}},
          {"busy_fraction", busy_fraction(budget)},
          {"verdict", timeline::step_verdict_name(budget.overall)},
          {"advice", budget_advice(budget)},
          {"steps", steps}};
}

std::string budget_text(const timeline::Budget& budget,
                        const timeline::BudgetThresholds& thresholds, const TraceSource& source) {
  TextTable table({{"step"},
                   {"host ms", TextTable::Align::kRight},
                   {"GPU span ms", TextTable::Align::kRight},
                   {"GPU busy ms", TextTable::Align::kRight},
                   {"host gap ms", TextTable::Align::kRight},
                   {"busy %", TextTable::Align::kRight},
                   {"launches", TextTable::Align::kRight},
                   {"graphs", TextTable::Align::kRight},
                   {"verdict"}});
  for (const auto& s : budget.steps) {
    table.add_row({s.name, ms(s.host_duration_us), ms(s.gpu_span_us), ms(s.gpu_busy_us),
                   ms(s.host_gap_us), fmt::format("{:.1f}", s.busy_fraction * 100),
                   std::to_string(s.kernel_launches), std::to_string(s.graph_launches),
                   timeline::step_verdict_name(s.verdict)});
  }
  std::string out =
      fmt::format("{}: {} step{} ({}) — {}: GPU busy {:.1f}% of its span\n",
                  escape_for_terminal(source.path), budget.steps.size(),
                  budget.steps.size() == 1 ? "" : "s", escape_for_terminal(budget.step_selector),
                  timeline::step_verdict_name(budget.overall), busy_fraction(budget) * 100);
  out += table.to_string();
  out += fmt::format(
      "thresholds: host-bound below {}% GPU busy (of the GPU span of a step's work), "
      "kernel-bound from {}%, mixed between\n",
      percent_of(thresholds.host_bound_below), percent_of(thresholds.kernel_bound_from));
  std::string advice = budget_advice(budget);
  if (!advice.empty()) out += advice + "\n";
  return out;
}

}  // namespace kprof::render
