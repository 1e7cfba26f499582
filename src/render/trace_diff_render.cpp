#include "render/trace_diff_render.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "common/text.h"
#include "common/utf8.h"
#include "render/envelope.h"
#include "render/report_json.h"
#include "render/table.h"

namespace kprof::render {
namespace {

using nlohmann::json;
using timeline::Comparison;
using timeline::TraceChange;

std::string us(double value) { return format_number(value); }

std::string optional_us(const std::optional<double>& value) {
  return value ? format_number(*value) : "—";
}

std::string signed_pct(const std::optional<double>& value) {
  return value ? fmt::format("{:+.1f}", *value) : "—";
}

std::string p_text(const std::optional<double>& p) {
  if (!p) return "—";
  return *p < 1e-4 ? "<1e-4" : fmt::format("{:.4f}", *p);
}

// A p-value to 10 significant digits: the incomplete beta's continued fraction and libm's
// lgamma/exp agree no further between builds (x86-64 and aarch64 differed in the 14th digit).
// strtod, not stod: a subnormal p (thousands of launches, |t| near 50) sets ERANGE, on which
// std::stod throws out_of_range and `kprof diff` would fail instead of printing p ≈ 0.
json p_json(const std::optional<double>& p) {
  if (!p) return nullptr;
  return std::strtod(fmt::format("{:.10g}", *p).c_str(), nullptr);
}

json side_json(const timeline::SampleSummary& s) {
  return {{"count", s.count},
          {"total_us", s.total_us},
          {"mean_us", s.mean_us},
          {"median_us", optional_json(s.median_us)}};
}

json comparison_json(const Comparison& c, bool with_stage) {
  json out = {{"name", c.name},
              {"before", side_json(c.before)},
              {"after", side_json(c.after)},
              {"change_pct", optional_json(c.change_pct)},
              {"p_value", p_json(c.p_value)},
              {"change", timeline::trace_change_name(c.change)}};
  if (with_stage) out["stage"] = c.stage;
  return out;
}

void add_rows(TextTable& table, const std::vector<Comparison>& list, size_t shown,
              size_t name_width, bool with_stage) {
  for (size_t i = 0; i < shown && i < list.size(); ++i) {
    const Comparison& c = list[i];
    std::vector<std::string> row = {ellipsize(c.name, name_width)};
    if (with_stage) row.push_back(c.stage);
    row.insert(
        row.end(),
        {fmt::format("{}/{}", c.before.count, c.after.count), us(c.before.total_us),
         us(c.after.total_us), optional_us(c.before.median_us), optional_us(c.after.median_us),
         signed_pct(c.change_pct), p_text(c.p_value), timeline::trace_change_name(c.change)});
    table.add_row(row);
  }
}

std::vector<TextTable::Column> columns(const std::string& first, bool with_stage) {
  std::vector<TextTable::Column> cols = {{first}};
  if (with_stage) cols.push_back({"stage"});
  for (const char* name :
       {"n", "before us", "after us", "median before", "median after", "Δ mean %", "p"}) {
    cols.push_back({name, TextTable::Align::kRight});
  }
  cols.push_back({"change"});
  return cols;
}

std::string steps_text(const std::vector<double>& spans) {
  std::string out;
  for (double s : spans) out += (out.empty() ? "" : " ") + us(s);
  return out.empty() ? "none" : out;
}

}  // namespace

std::string trace_diff_text(const timeline::TraceDiff& diff, const std::string& before,
                            const std::string& after, const timeline::TraceDiffOptions& options,
                            size_t top, size_t name_width) {
  std::string out = fmt::format(
      "{} → {}\nGPU time (summed durations): {} us → {} us ({} → {} GPU activities)\n",
      escape_for_terminal(before), escape_for_terminal(after), us(diff.before_gpu_time_us),
      us(diff.after_gpu_time_us), diff.before_gpu_events, diff.after_gpu_events);
  const Comparison& step = diff.step;
  out +=
      fmt::format("steps before ({}): {} GPU span us: {}\n", escape_for_terminal(diff.before_steps),
                  step.before.count, steps_text(diff.before_steps_us));
  out +=
      fmt::format("steps after ({}): {} GPU span us: {}\n", escape_for_terminal(diff.after_steps),
                  step.after.count, steps_text(diff.after_steps_us));
  out += fmt::format(
      "step: mean {} us → {} us, median {} us → {} us, {}%, p {}: {}\n", us(step.before.mean_us),
      us(step.after.mean_us), optional_us(step.before.median_us), optional_us(step.after.median_us),
      signed_pct(step.change_pct), p_text(step.p_value), timeline::trace_change_name(step.change));
  TextTable stages(columns("stage", false));
  add_rows(stages, diff.stages, diff.stages.size(), name_width, false);
  out += "\nby stage\n" + stages.to_string();
  TextTable kernels(columns("kernel", true));
  size_t shown = std::min(top, diff.kernels.size());
  add_rows(kernels, diff.kernels, shown, name_width, true);
  out += "\nby kernel\n" + kernels.to_string();
  if (shown < diff.kernels.size()) {
    out += fmt::format("… {} more names (--top N shows more)\n", diff.kernels.size() - shown);
  }
  out += fmt::format(
      "A kernel, stage or the step changed when its mean launch (step) duration moved by more "
      "than {}% and Welch's t-test over the repeated launches (steps) gives p < {}; with fewer "
      "than two on a side there is no noise estimate and no verdict. The step verdict is the "
      "gate: exit 6 when it regressed.\n",
      format_number(options.threshold_pct), format_number(options.alpha));
  return out;
}

json trace_diff_json(const timeline::TraceDiff& diff, const std::string& before,
                     const std::string& after, const timeline::TraceDiffOptions& options,
                     const std::vector<std::string>& argv) {
  json kernels = json::array(), stages = json::array();
  for (const auto& c : diff.kernels) kernels.push_back(comparison_json(c, true));
  for (const auto& c : diff.stages) stages.push_back(comparison_json(c, false));
  return with_envelope("kprof.trace-diff/1", argv,
                       {{"before", before},
                        {"after", after},
                        {"alpha", options.alpha},
                        {"threshold_pct", options.threshold_pct},
                        {"before_gpu_time_us", diff.before_gpu_time_us},
                        {"after_gpu_time_us", diff.after_gpu_time_us},
                        {"before_gpu_events", diff.before_gpu_events},
                        {"after_gpu_events", diff.after_gpu_events},
                        {"step",
                         {{"before_steps", diff.before_steps},
                          {"after_steps", diff.after_steps},
                          {"before_spans_us", diff.before_steps_us},
                          {"after_spans_us", diff.after_steps_us},
                          {"comparison", comparison_json(diff.step, false)}}},
                        {"verdict", timeline::trace_change_name(diff.step.change)},
                        {"regressed", diff.regressed()},
                        {"stages", stages},
                        {"kernels", kernels}});
}

}  // namespace kprof::render
