#include "timeline/step_budget.h"

#include <re2/re2.h>

#include <algorithm>

#include "common/error.h"
#include "timeline/kernel_ranking.h"

namespace kprof::timeline {
namespace {

double union_length(std::vector<std::pair<double, double>> intervals) {
  std::sort(intervals.begin(), intervals.end());
  double total = 0, start = 0, end = 0;
  bool open = false;
  for (auto [s, e] : intervals) {
    if (!open) {
      start = s, end = e, open = true;
    } else if (s <= end) {
      end = std::max(end, e);
    } else {
      total += end - start;
      start = s, end = e;
    }
  }
  if (open) total += end - start;
  return total;
}

StepVerdict classify(double busy_fraction, const BudgetThresholds& t) {
  if (busy_fraction >= t.kernel_bound_from) return StepVerdict::kKernelBound;
  if (busy_fraction < t.host_bound_below) return StepVerdict::kHostBound;
  return StepVerdict::kMixed;
}

bool is_launch(std::string_view name) {
  return name.find("LaunchKernel") != std::string_view::npos ||
         name.find("GraphLaunch") != std::string_view::npos ||
         name.find("Memcpy") != std::string_view::npos ||
         name.find("Memset") != std::string_view::npos;
}

}  // namespace

std::string step_verdict_name(StepVerdict verdict) {
  switch (verdict) {
    case StepVerdict::kHostBound:
      return "host-bound";
    case StepVerdict::kKernelBound:
      return "kernel-bound";
    case StepVerdict::kMixed:
      return "mixed";
    case StepVerdict::kNoGpuWork:
      break;
  }
  return "no GPU work";
}

void BudgetBuilder::on_event(const importers::TraceEvent& event) {
  std::string_view category = event.category;
  double end = event.timestamp_us + event.duration_us;
  if (category == "kernel" || category == "gpu_memcpy" || category == "gpu_memset") {
    std::string name = normalize_kernel_name(event.name);
    auto [it, added] = name_ids_.emplace(name, static_cast<std::uint32_t>(names_.size()));
    if (added) names_.push_back(std::move(name));
    activities_.push_back({event.timestamp_us, end, event.correlation, it->second});
  } else if (category == "cuda_runtime" || category == "cuda_driver") {
    if (event.correlation && is_launch(event.name)) {
      launches_[*event.correlation] = {event.timestamp_us,
                                       event.name.find("GraphLaunch") != std::string_view::npos};
    }
  } else if (category == "user_annotation" || category == "gpu_user_annotation") {
    annotations_.push_back({std::string(event.name), event.timestamp_us, event.duration_us,
                            category == "gpu_user_annotation"});
  }
}

Budget BudgetBuilder::finish(const std::string& step_regex, const BudgetThresholds& t) const {
  Budget budget;
  std::vector<const Annotation*> steps;
  RE2 pattern(step_regex.empty() ? "^ProfilerStep#\\d+$" : step_regex, RE2::Quiet);
  if (!pattern.ok()) {
    throw std::invalid_argument("--step \"" + step_regex +
                                "\" is not a valid regular expression: " + pattern.error());
  }
  // CPU-side annotations first: their launches tell which GPU work belongs to them.
  for (bool gpu_side : {false, true}) {
    for (const Annotation& a : annotations_) {
      if (a.gpu_side == gpu_side && RE2::PartialMatch(a.name, pattern)) steps.push_back(&a);
    }
    if (!steps.empty()) break;
  }
  budget.step_selector = step_regex.empty() ? "ProfilerStep#N annotations" : "/" + step_regex + "/";
  std::vector<StepBudget> results;
  auto summarize = [&](StepBudget& step, std::vector<std::pair<double, double>> intervals,
                       const std::vector<std::uint32_t>& names) {
    std::map<std::uint32_t, double> per_name;
    for (size_t i = 0; i < names.size(); ++i) {
      per_name[names[i]] += intervals[i].second - intervals[i].first;
    }
    for (const auto& [id, total] : per_name) step.kernels.emplace_back(names_[id], total);
    std::stable_sort(step.kernels.begin(), step.kernels.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    step.gpu_activities = intervals.size();
    if (intervals.empty()) return;
    double first = intervals.front().first, last = intervals.front().second;
    for (auto [s, e] : intervals) first = std::min(first, s), last = std::max(last, e);
    step.gpu_span_us = last - first;
    step.gpu_busy_us = union_length(std::move(intervals));
    step.host_gap_us = step.gpu_span_us - step.gpu_busy_us;
    step.busy_fraction = step.gpu_span_us > 0 ? step.gpu_busy_us / step.gpu_span_us : 1;
    step.verdict = classify(step.busy_fraction, t);
  };
  if (steps.empty()) {
    budget.step_selector =
        step_regex.empty() ? "the whole trace (no ProfilerStep#N annotations; --step picks others)"
                           : "the whole trace (no annotation matches /" + step_regex + "/)";
    StepBudget whole;
    whole.name = "trace";
    whole.source = "whole trace";
    std::vector<std::pair<double, double>> intervals;
    std::vector<std::uint32_t> names;
    for (const Activity& a : activities_) {
      intervals.emplace_back(a.start, a.end);
      names.push_back(a.name);
    }
    for (const auto& [id, launch] : launches_) {
      ++whole.kernel_launches;
      whole.graph_launches += launch.graph;
    }
    summarize(whole, std::move(intervals), names);
    results.push_back(whole);
  }
  for (const Annotation* a : steps) {
    StepBudget step;
    step.name = a->name;
    step.start_us = a->start;
    step.host_duration_us = a->duration;
    std::vector<std::pair<double, double>> intervals;
    std::vector<std::uint32_t> names;
    double end = a->start + a->duration;
    if (!a->gpu_side) {
      step.source = "cpu annotation";
      for (const auto& [id, launch] : launches_) {
        if (launch.time >= a->start && launch.time <= end) {
          ++step.kernel_launches;
          step.graph_launches += launch.graph;
        }
      }
      for (const Activity& activity : activities_) {
        if (!activity.correlation) continue;
        auto launch = launches_.find(*activity.correlation);
        if (launch != launches_.end() && launch->second.time >= a->start &&
            launch->second.time <= end) {
          intervals.emplace_back(activity.start, activity.end);
          names.push_back(activity.name);
        }
      }
    } else {
      step.source = "gpu annotation";
      for (const Activity& activity : activities_) {
        if (activity.start < end && activity.end > a->start) {
          intervals.emplace_back(std::max(activity.start, a->start), std::min(activity.end, end));
          names.push_back(activity.name);
        }
      }
    }
    summarize(step, std::move(intervals), names);
    results.push_back(step);
  }
  std::sort(results.begin(), results.end(),
            [](const StepBudget& x, const StepBudget& y) { return x.start_us < y.start_us; });
  for (const StepBudget& step : results) {
    budget.total_busy_us += step.gpu_busy_us;
    budget.total_span_us += step.gpu_span_us;
  }
  budget.steps = std::move(results);
  if (budget.total_span_us > 0) {
    budget.overall = classify(budget.total_busy_us / budget.total_span_us, t);
  }
  return budget;
}

}  // namespace kprof::timeline
