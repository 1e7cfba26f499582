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
      "{} → {}\nGPU time (summed durations): {} us → {} us ({} → {} GPU activities); kernels "
      "alone {} us → {} us\n",
      escape_for_terminal(before), escape_for_terminal(after), us(diff.before_gpu_time_us),
      us(diff.after_gpu_time_us), diff.before_gpu_events, diff.after_gpu_events,
      us(diff.before_kernel_time_us), us(diff.after_kernel_time_us));
  if (diff.before_pre_window + diff.after_pre_window > 0) {
    out += fmt::format(
        "left out, enqueued before the profiler's window (correlation ids below every launch the "
        "trace recorded): {} GPU activities ({} us) → {} ({} us)\n",
        diff.before_pre_window, us(diff.before_pre_window_us), diff.after_pre_window,
        us(diff.after_pre_window_us));
  }
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
                        {"before_kernel_time_us", diff.before_kernel_time_us},
                        {"after_kernel_time_us", diff.after_kernel_time_us},
                        {"before_gpu_events", diff.before_gpu_events},
                        {"after_gpu_events", diff.after_gpu_events},
                        {"before_pre_window_gpu_events", diff.before_pre_window},
                        {"after_pre_window_gpu_events", diff.after_pre_window},
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

namespace {

std::string us_text(double us) { return format_number(us); }

// "81 %" of the prediction, or "—" when nothing was predicted.
std::string share_of_prediction(double realised, const std::optional<double>& predicted) {
  if (!predicted || *predicted <= 0) return "—";
  return fmt::format("{:.0f}%", realised / *predicted * 100);
}

}  // namespace

std::string prediction_text(const timeline::PredictionCheck& check,
                            const timeline::Prediction& prediction, size_t top, size_t name_width) {
  TextTable table({{"#", TextTable::Align::kRight},
                   {"kernel"},
                   {"grid / block"},
                   {"bound by"},
                   {"predicted µs", TextTable::Align::kRight},
                   {"before µs", TextTable::Align::kRight},
                   {"after µs", TextTable::Align::kRight},
                   {"realised µs", TextTable::Align::kRight},
                   {"of predicted", TextTable::Align::kRight},
                   {""}});
  size_t shown = 0;
  for (const timeline::GroupOutcome& g : check.groups) {
    if (top != 0 && shown == top) break;
    ++shown;
    const timeline::PredictedGroup& p = g.predicted;
    table.add_row({std::to_string(shown), ellipsize(escape_for_terminal(p.kernel), name_width),
                   p.grid + " / " + p.block, p.bound_by.empty() ? "—" : p.bound_by,
                   p.saving_us_per_step ? us_text(*p.saving_us_per_step) : "—",
                   g.in_before ? us_text(g.before_us_per_step) : "not in trace",
                   g.in_after ? us_text(g.after_us_per_step) : "not in trace",
                   us_text(g.realised_us_per_step()),
                   share_of_prediction(g.realised_us_per_step(), p.saving_us_per_step),
                   g.improved_step_did_not ? "kernel faster, step not" : ""});
  }
  std::string out = fmt::format(
      "predicted ({}: {} group{}) against realised, per step ({} steps before, {} after):\n",
      escape_for_terminal(prediction.path), prediction.groups.size(),
      prediction.groups.size() == 1 ? "" : "s", check.before_steps, check.after_steps);
  out += table.to_string();
  if (top != 0 && check.groups.size() > top) {
    out += fmt::format("… {} more (--top 0 shows all)\n", check.groups.size() - top);
  }
  const double realised = check.realised_step_saving_us();
  out += fmt::format(
      "step: predicted {} µs of {} µs, realised {} µs ({}): median step {} µs before, {} µs "
      "after; the predicted kernels gained {} µs\n",
      us_text(check.predicted_step_saving_us),
      prediction.step_us ? us_text(*prediction.step_us) : us_text(check.before_step_us),
      us_text(realised),
      share_of_prediction(realised, check.predicted_step_saving_us > 0
                                        ? std::optional<double>(check.predicted_step_saving_us)
                                        : std::nullopt) +
          " of the prediction",
      us_text(check.before_step_us), us_text(check.after_step_us),
      us_text(check.realised_kernel_saving_us));
  if (check.kernels_improved_step_did_not) {
    out += fmt::format(
        "kernels improved, step did not: the kernels gained {} µs a step, the step {} µs — the "
        "gain went into idle (a host-bound or dependency-bound step: `kprof budget` of the after "
        "trace says which) or into other work\n",
        us_text(check.realised_kernel_saving_us), us_text(realised));
  }
  for (const std::string& note : check.notes) out += "note: " + escape_for_terminal(note) + "\n";
  out +=
      "per step: a name's trace time over the trace's steps (kprof budget's; the whole trace "
      "without steps), the step's median GPU span; realised = before − after; predicted = the "
      "fix list's estimated saving over its steps. A kernel is flagged when it gained ≥ 5% and "
      "≥ 1 µs a step while the step was not improved (Welch) or kept less than half of it.\n";
  return out;
}

nlohmann::json prediction_json(const timeline::PredictionCheck& check,
                               const timeline::Prediction& prediction) {
  using nlohmann::json;
  json groups = json::array();
  for (const timeline::GroupOutcome& g : check.groups) {
    const timeline::PredictedGroup& p = g.predicted;
    groups.push_back({{"kernel", p.kernel},
                      {"canonical_name", p.canonical},
                      {"grid", p.grid},
                      {"block", p.block},
                      {"bound_by", p.bound_by.empty() ? json(nullptr) : json(p.bound_by)},
                      {"predicted_saving_us_per_step",
                       p.saving_us_per_step ? json(*p.saving_us_per_step) : json(nullptr)},
                      {"in_before", g.in_before},
                      {"in_after", g.in_after},
                      {"trace_names", g.trace_names},
                      {"before_us_per_step", g.before_us_per_step},
                      {"after_us_per_step", g.after_us_per_step},
                      {"realised_saving_us_per_step", g.realised_us_per_step()},
                      {"kernel_improved_step_did_not", g.improved_step_did_not}});
  }
  return {{"prediction", prediction.path},
          {"predicted_steps", prediction.steps},
          {"before_steps", check.before_steps},
          {"after_steps", check.after_steps},
          {"predicted_step_saving_us", check.predicted_step_saving_us},
          {"before_step_us", check.before_step_us},
          {"after_step_us", check.after_step_us},
          {"step_improved", check.step_improved},
          {"realised_step_saving_us", check.realised_step_saving_us()},
          {"realised_kernel_saving_us", check.realised_kernel_saving_us},
          {"kernels_improved_step_did_not", check.kernels_improved_step_did_not},
          {"groups", groups},
          {"notes", check.notes}};
}

}  // namespace kprof::render
