#include "pipeline/plan_trace.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <algorithm>
#include <map>
#include <optional>
#include <stdexcept>

#include "common/error.h"
#include "model/kernel_names.h"
#include "pipeline/trace_files.h"
#include "render/trace_render.h"
#include "timeline/kernel_ranking.h"
#include "timeline/step_budget.h"

namespace kprof::pipeline {
namespace {

// The name ncu's --kernel-name matches for a trace's kernel name: its function name (ncu's
// default base), or the whole demangled name.
std::string matched_name(const std::string& normalised, const std::string& name_base) {
  if (name_base == "demangled" || name_base == "mangled") return normalised;
  std::string function = model::function_base_name(normalised);
  return function.empty() ? normalised : function;
}

}  // namespace

PlanTrace read_plan_trace(const std::string& path, const std::vector<std::string>& argv,
                          const std::string& kernel_regex, const std::string& name_base,
                          const std::string& step_regex) {
  RE2 filter(kernel_regex.empty() ? std::string(".") : kernel_regex, RE2::Quiet);
  if (!filter.ok()) {
    throw UsageError(fmt::format("--kernel-name: invalid regular expression: {}", filter.error()));
  }
  timeline::BudgetBuilder builder;
  builder.keep_timeline();
  render::TraceSource source{path, argv, read_trace_file(path, builder)};
  timeline::Budget budget;
  try {
    budget = builder.finish(step_regex, {});
  } catch (const std::invalid_argument& error) {
    throw UsageError(error.what());
  }
  std::uint64_t kernel_work = 0;
  for (const timeline::StepBudget& step : budget.steps) kernel_work += step.work.size();
  if (budget.steps.empty() || kernel_work == 0) {
    throw InputError(ExitCode::kInputInvalid, path, InputPosition::none(),
                     "no kernel launches in the trace's steps: was the profiler recording CUDA?");
  }
  PlanTrace plan;
  plan.path = path;
  plan.step_selector = budget.step_selector;
  plan.steps = budget.steps.size();
  plan.warnings = render::trace_warnings(source, &budget.launch_records);
  // Each distinct trace name matched once (a serving trace repeats a few hundred names).
  std::map<std::string, std::optional<std::size_t>, std::less<>> kernel_of_name;
  std::map<std::string, std::uint64_t, std::less<>> launches_of_unmatched;
  double wall_us = 0;
  for (std::size_t s = 0; s < budget.steps.size(); ++s) {
    const timeline::StepBudget& step = budget.steps[s];
    wall_us += step.wall_end_us - step.wall_start_us;
    std::vector<std::size_t> work = step.work;
    std::stable_sort(work.begin(), work.end(), [&](std::size_t a, std::size_t b) {
      return budget.timeline[a].start_us < budget.timeline[b].start_us;
    });
    std::map<std::size_t, std::uint64_t> in_this_step;
    for (std::size_t index : work) {
      const timeline::TimelineItem& item = budget.timeline[index];
      if (item.category != "kernel") continue;
      ++plan.kernel_launches;
      auto [found, added] = kernel_of_name.try_emplace(item.name);
      std::string normalised;
      if (added) {
        normalised = timeline::normalize_kernel_name(item.name);
        if (RE2::PartialMatch(matched_name(normalised, name_base), filter)) {
          auto same = std::find_if(plan.kernels.begin(), plan.kernels.end(),
                                   [&](const PlanTraceKernel& k) { return k.name == normalised; });
          if (same == plan.kernels.end()) {
            PlanTraceKernel kernel;
            kernel.name = normalised;
            kernel.function_name = matched_name(normalised, "function");
            plan.kernels.push_back(kernel);
            same = plan.kernels.end() - 1;
          }
          found->second = static_cast<std::size_t>(same - plan.kernels.begin());
        }
      }
      if (!found->second) {
        ++launches_of_unmatched[normalised.empty() ? timeline::normalize_kernel_name(item.name)
                                                   : normalised];
        continue;
      }
      PlanTraceKernel& kernel = plan.kernels[*found->second];
      ++kernel.launches;
      kernel.mean_us += item.duration_us;  // summed here, divided below
      kernel.max_us = std::max(kernel.max_us, item.duration_us);
      kernel.most_in_a_step = std::max(kernel.most_in_a_step, ++in_this_step[*found->second]);
      plan.launches.push_back({*found->second, s, item.duration_us});
    }
  }
  plan.mean_step_wall_us = wall_us / static_cast<double>(plan.steps);
  for (PlanTraceKernel& kernel : plan.kernels) {
    kernel.mean_us =
        kernel.launches > 0 ? kernel.mean_us / static_cast<double>(kernel.launches) : 0;
    kernel.launches_per_step =
        static_cast<double>(kernel.launches) / static_cast<double>(plan.steps);
  }
  if (plan.launches.empty()) {
    // By the name the filter is matched against: several instantiations share one.
    std::map<std::string, std::uint64_t> by_matched_name;
    for (const auto& [name, launches] : launches_of_unmatched)
      by_matched_name[matched_name(name, name_base)] += launches;
    std::vector<std::pair<std::string, std::uint64_t>> names(by_matched_name.begin(),
                                                             by_matched_name.end());
    std::stable_sort(names.begin(), names.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    for (std::size_t i = 0; i < names.size() && i < 5; ++i)
      plan.closest_names.push_back(names[i].first);
  }
  return plan;
}

}  // namespace kprof::pipeline
