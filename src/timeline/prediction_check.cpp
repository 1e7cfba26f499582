#include "timeline/prediction_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "analysis/statistics.h"
#include "common/error.h"
#include "common/json_table.h"
#include "model/kernel_names.h"

namespace kprof::timeline {
namespace {

using nlohmann::json;

std::string dims_text(const json& value) {
  if (!value.is_array()) return "";
  std::string text;
  for (const json& x : value) {
    if (!x.is_number_integer()) return "";
    if (!text.empty()) text += ",";
    text += std::to_string(x.get<long long>());
  }
  return text;
}

std::optional<double> number_at(const json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

// Kernel time per step of one side: the matched names' total over its steps (the whole trace
// when it has none). Work outside the steps (a warm-up) is counted in; steps of a trace that
// kprof budget splits cover nearly all of its kernels.
double per_step(double total_us, std::uint64_t steps) {
  return steps > 0 ? total_us / static_cast<double>(steps) : total_us;
}

}  // namespace

Prediction parse_prediction(const std::string& path, std::string_view text) {
  json document = parse_json_table(path, text);
  auto refuse = [&](const std::string& why) {
    throw InputError(ExitCode::kInputInvalid, path, InputPosition::none(), why);
  };
  if (!document.is_object() || document.value("schema", "") != "kprof.analysis/1") {
    refuse("not a kprof report --json answer (\"schema\" is not \"kprof.analysis/1\")");
  }
  auto fix_list = document.find("fix_list");
  if (fix_list == document.end() || !fix_list->is_object()) {
    refuse("no fix list in this answer: it comes from `kprof report --trace TRACE REPORT --json`");
  }
  Prediction p;
  p.path = path;
  auto steps = fix_list->find("steps");
  if (steps != fix_list->end() && steps->is_number_unsigned())
    p.steps = steps->get<std::uint64_t>();
  p.step_us = number_at(*fix_list, "step_us");
  auto opportunities = fix_list->find("opportunities");
  if (opportunities == fix_list->end() || !opportunities->is_array()) {
    refuse("fix_list.opportunities is missing or not a list");
  }
  std::size_t index = 0;
  for (const json& o : *opportunities) {
    if (!o.is_object() || !o.contains("kernel") || !o["kernel"].is_string()) {
      refuse(fmt::format("fix_list.opportunities[{}] has no kernel name", index));
    }
    PredictedGroup g;
    g.kernel = o["kernel"].get<std::string>();
    g.canonical = o.contains("canonical_name") && o["canonical_name"].is_string()
                      ? o["canonical_name"].get<std::string>()
                      : model::canonical_kernel_name(g.kernel);  // answers of kprof 0.x before it
    g.grid = dims_text(o.value("grid", json()));
    g.block = dims_text(o.value("block", json()));
    if (o.contains("bound_by") && o["bound_by"].is_string()) g.bound_by = o["bound_by"];
    if (auto saving = number_at(o, "estimated_saving_us")) {
      g.saving_us_per_step = per_step(*saving, p.steps);
      p.total_saving_us_per_step += *g.saving_us_per_step;
    }
    ++index;
    // A group split per batch bucket (a tracer trace's node table) is one group in the traces
    // compared: its rows' savings add up, its trace time is looked up once.
    auto same = std::find_if(p.groups.begin(), p.groups.end(), [&](const PredictedGroup& q) {
      return q.canonical == g.canonical && q.grid == g.grid && q.block == g.block;
    });
    if (same != p.groups.end() && o.contains("bucket") && o["bucket"].is_string()) {
      if (g.saving_us_per_step) {
        same->saving_us_per_step = same->saving_us_per_step.value_or(0) + *g.saving_us_per_step;
      }
      continue;
    }
    p.groups.push_back(std::move(g));
  }
  return p;
}

PredictionCheck check_prediction(const Prediction& prediction, const TraceProfile& before,
                                 const TraceProfile& after, const TraceDiff& diff) {
  PredictionCheck check;
  check.predicted_step_saving_us = prediction.total_saving_us_per_step;
  check.before_steps = diff.before_steps_us.size();
  check.after_steps = diff.after_steps_us.size();
  // The median step: one slow step (a host hiccup: 4.3 ms among 3.5 ms steps on the H200's eager
  // recording) moves the mean by more than a kernel's gain.
  check.before_step_us = analysis::median(diff.before_steps_us).value_or(before.gpu_time_us);
  check.after_step_us = analysis::median(diff.after_steps_us).value_or(after.gpu_time_us);
  check.step_improved = diff.step.change == TraceChange::kImproved;
  if (check.before_steps == 0 || check.after_steps == 0) {
    check.notes.push_back(
        "a trace without steps: its whole GPU time stands for the step (kprof budget finds "
        "none; --step REGEX names them)");
  }
  // The traces' names by canonical spelling, as the fix list matched the capture to its trace.
  std::map<std::string, std::vector<std::string>> before_names, after_names;
  for (const auto& [name, data] : before.names) {
    before_names[model::canonical_kernel_name(name)].push_back(name);
  }
  for (const auto& [name, data] : after.names) {
    after_names[model::canonical_kernel_name(name)].push_back(name);
  }
  auto total_of = [](const TraceProfile& profile, const std::vector<std::string>& names) {
    double total = 0;
    for (const std::string& name : names) {
      for (double us : profile.names.at(name).durations_us) total += us;
    }
    return total;
  };
  // One canonical name can head several groups (grids differ): the traces' time of a name is
  // compared once, on its first group, and the later groups say so.
  std::map<std::string, std::size_t> first_group;
  for (const PredictedGroup& g : prediction.groups) {
    GroupOutcome outcome;
    outcome.predicted = g;
    auto b = before_names.find(g.canonical);
    auto a = after_names.find(g.canonical);
    outcome.in_before = b != before_names.end();
    outcome.in_after = a != after_names.end();
    auto [first, added] = first_group.try_emplace(g.canonical, check.groups.size());
    if (added) {
      if (outcome.in_before) {
        outcome.trace_names = b->second;
        outcome.before_us_per_step = per_step(total_of(before, b->second), check.before_steps);
      }
      if (outcome.in_after) {
        for (const std::string& name : a->second) {
          if (std::find(outcome.trace_names.begin(), outcome.trace_names.end(), name) ==
              outcome.trace_names.end()) {
            outcome.trace_names.push_back(name);
          }
        }
        outcome.after_us_per_step = per_step(total_of(after, a->second), check.after_steps);
      }
      check.realised_kernel_saving_us += outcome.realised_us_per_step();
    } else {
      check.notes.push_back(fmt::format(
          "{} (grid {}, block {}): the traces' time of this name is compared on group {} (a "
          "trace's kernel time is per name)",
          g.kernel, g.grid, g.block, first->second + 1));
    }
    check.groups.push_back(std::move(outcome));
  }
  // The step kept a gain when kprof diff calls it improved (Welch over the steps) and its median
  // moved by at least half of what the kernels gained.
  const double step_gain = check.realised_step_saving_us();
  auto step_kept = [&](double gain) { return check.step_improved && step_gain >= 0.5 * gain; };
  for (GroupOutcome& g : check.groups) {
    double gain = g.realised_us_per_step();
    bool improved = g.in_before && gain >= 1.0 && gain >= 0.05 * g.before_us_per_step;
    g.improved_step_did_not = improved && !step_kept(gain);
  }
  check.kernels_improved_step_did_not =
      check.realised_kernel_saving_us >= 1.0 && !step_kept(check.realised_kernel_saving_us);
  return check;
}

}  // namespace kprof::timeline
