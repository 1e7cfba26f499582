#include "timeline/trace_diff.h"

#include <algorithm>
#include <cmath>

#include "timeline/kernel_ranking.h"

namespace kprof::timeline {
namespace {

SampleSummary summarize(const std::vector<double>& values) {
  SampleSummary summary;
  summary.count = values.size();
  for (double v : values) summary.total_us += v;
  summary.mean_us = values.empty() ? 0 : summary.total_us / static_cast<double>(values.size());
  summary.median_us = analysis::median(values);
  return summary;
}

analysis::RunningStats running(const std::vector<double>& values) {
  analysis::RunningStats stats;
  for (double v : values) stats.add(v);
  return stats;
}

// The two samples' means compared: significant (Welch, p < alpha) and larger than the threshold.
Comparison compare(std::string name, const std::vector<double>& before,
                   const std::vector<double>& after, const TraceDiffOptions& options) {
  Comparison c;
  c.name = std::move(name);
  c.before = summarize(before);
  c.after = summarize(after);
  if (before.empty()) {
    c.change = TraceChange::kOnlyAfter;
    return c;
  }
  if (after.empty()) {
    c.change = TraceChange::kOnlyBefore;
    return c;
  }
  if (c.before.mean_us > 0) {
    c.change_pct = (c.after.mean_us - c.before.mean_us) / c.before.mean_us * 100;
  }
  auto test = analysis::welch_t_test(running(before), running(after));
  if (!test) {
    c.change = TraceChange::kNotEnoughSamples;
    return c;
  }
  c.p_value = test->p;
  if (c.change_pct && test->p < options.alpha && std::fabs(*c.change_pct) > options.threshold_pct) {
    c.change = *c.change_pct > 0 ? TraceChange::kRegressed : TraceChange::kImproved;
  }
  return c;
}

void order(std::vector<Comparison>& list) {
  auto rank = [](const Comparison& c) {
    return c.change == TraceChange::kRegressed ? 0 : c.change == TraceChange::kImproved ? 1 : 2;
  };
  std::stable_sort(list.begin(), list.end(), [&](const Comparison& a, const Comparison& b) {
    if (rank(a) != rank(b)) return rank(a) < rank(b);
    return std::fabs(a.after.total_us - a.before.total_us) >
           std::fabs(b.after.total_us - b.before.total_us);
  });
}

std::vector<double> step_spans(const Budget& budget) {
  std::vector<double> spans;
  for (const StepBudget& step : budget.steps) {
    if (step.gpu_activities > 0) spans.push_back(step.gpu_span_us);
  }
  return spans;
}

}  // namespace

std::string trace_change_name(TraceChange change) {
  switch (change) {
    case TraceChange::kImproved:
      return "improved";
    case TraceChange::kRegressed:
      return "regressed";
    case TraceChange::kNeutral:
      return "neutral";
    case TraceChange::kNotEnoughSamples:
      return "not enough samples to judge";
    case TraceChange::kOnlyBefore:
      return "only before";
    case TraceChange::kOnlyAfter:
      return "only after";
  }
  return "";
}

void TraceProfileBuilder::on_event(const importers::TraceEvent& event) {
  budget_.on_event(event);
  std::string_view category = event.category;
  bool kernel = category == "kernel";
  if (!kernel && category != "gpu_memcpy" && category != "gpu_memset") return;
  ++profile_.gpu_events;
  profile_.gpu_time_us += event.duration_us;
  if (kernel) profile_.kernel_time_us += event.duration_us;
  std::string key = normalize_kernel_name(event.name);
  auto it = profile_.names.find(key);
  if (it == profile_.names.end()) {
    TraceProfile::Name entry;
    entry.stage = kernel ? stages_.stage_of_name(std::string(event.name)) : "memory";
    it = profile_.names.emplace(std::move(key), std::move(entry)).first;
  }
  arrivals_.push_back({&it->second, it->second.durations_us.size(), event.duration_us, kernel});
  it->second.durations_us.push_back(event.duration_us);
}

TraceProfile TraceProfileBuilder::finish(const std::string& step_regex) {
  profile_.budget = budget_.finish(step_regex, {});
  // Work enqueued before the profiler's window is in neither side's figures (as in kprof rank).
  const std::vector<bool>& before = profile_.budget.pre_window;
  std::map<TraceProfile::Name*, std::vector<bool>> drop;
  for (std::size_t i = 0; i < arrivals_.size() && i < before.size(); ++i) {
    if (!before[i]) continue;
    const Arrival& a = arrivals_[i];
    --profile_.gpu_events;
    profile_.gpu_time_us -= a.duration_us;
    if (a.kernel) profile_.kernel_time_us -= a.duration_us;
    std::vector<bool>& marks = drop[a.name];
    marks.resize(a.name->durations_us.size(), false);
    marks[a.index] = true;
  }
  for (auto& [name, marks] : drop) {
    std::vector<double> kept;
    for (std::size_t i = 0; i < name->durations_us.size(); ++i) {
      if (!marks[i]) kept.push_back(name->durations_us[i]);
    }
    name->durations_us = std::move(kept);
  }
  for (auto it = profile_.names.begin(); it != profile_.names.end();) {
    it = it->second.durations_us.empty() ? profile_.names.erase(it) : std::next(it);
  }
  return std::move(profile_);
}

TraceDiff diff_traces(const TraceProfile& before, const TraceProfile& after,
                      const TraceDiffOptions& options) {
  TraceDiff diff;
  diff.before_gpu_time_us = before.gpu_time_us;
  diff.after_gpu_time_us = after.gpu_time_us;
  diff.before_kernel_time_us = before.kernel_time_us;
  diff.after_kernel_time_us = after.kernel_time_us;
  diff.before_gpu_events = before.gpu_events;
  diff.after_gpu_events = after.gpu_events;
  diff.before_pre_window = before.budget.pre_window_activities;
  diff.after_pre_window = after.budget.pre_window_activities;
  diff.before_pre_window_us = before.budget.pre_window_us;
  diff.after_pre_window_us = after.budget.pre_window_us;
  diff.before_steps = before.budget.step_selector;
  diff.after_steps = after.budget.step_selector;
  static const std::vector<double> kNone;
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> stages;
  std::map<std::string, std::string> stage_of;
  for (const auto& [name, entry] : before.names) stage_of[name] = entry.stage;
  for (const auto& [name, entry] : after.names) stage_of.emplace(name, entry.stage);
  for (const auto& [name, stage] : stage_of) {
    auto b = before.names.find(name);
    auto a = after.names.find(name);
    const std::vector<double>& bd = b == before.names.end() ? kNone : b->second.durations_us;
    const std::vector<double>& ad = a == after.names.end() ? kNone : a->second.durations_us;
    Comparison c = compare(name, bd, ad, options);
    c.stage = stage;
    diff.kernels.push_back(std::move(c));
    auto& pooled = stages[stage];
    pooled.first.insert(pooled.first.end(), bd.begin(), bd.end());
    pooled.second.insert(pooled.second.end(), ad.begin(), ad.end());
  }
  for (const auto& [stage, pooled] : stages) {
    diff.stages.push_back(compare(stage, pooled.first, pooled.second, options));
  }
  order(diff.kernels);
  order(diff.stages);
  diff.before_steps_us = step_spans(before.budget);
  diff.after_steps_us = step_spans(after.budget);
  diff.step = compare("step", diff.before_steps_us, diff.after_steps_us, options);
  return diff;
}

}  // namespace kprof::timeline
