#include "timeline/step_budget.h"

#include <re2/re2.h>

#include <algorithm>

#include "common/error.h"
#include "timeline/kernel_ranking.h"

namespace kprof::timeline {
namespace {

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

// Where each engine's per-step annotation comes from (read in their public sources):
//   PyTorch: torch.profiler.profile.step() records "ProfilerStep#N".
//   vLLM: vllm/v1/worker/gpu_worker.py, Worker.annotate_profile(): record_function
//     "execute_context_{n}({tokens})_generation_{n}({tokens})" (and a variant with a leading
//     "execute_{n}_"); earlier v1 releases "execute_new_{n}_cached_{n}".
//   SGLang: python/sglang/srt/model_executor/model_runner.py, ModelRunner.forward (PR #23419):
//     record_function "step[decode bs=N]", "step[prefill bs=N toks=T]", "step[mixed …]",
//     "step[idle]", "step[MODE bs=N]".
//   TensorRT-LLM: tensorrt_llm/_torch/pyexecutor/model_engine.py, @nvtx_range("_forward_step")
//     on PyTorchModelEngine._forward_step (NVTX: an nsys export's ranges).
const std::vector<StepMarker>& builtin_step_markers() {
  static const std::vector<StepMarker> markers = {
      {"PyTorch", "^ProfilerStep#\\d+$", "torch.profiler.profile.step()"},
      {"vLLM",
       "^execute_(new_\\d+_cached_\\d+|(\\d+_)?context_\\d+\\(.*\\)_generation_\\d+\\(.*\\))$",
       "vllm/v1/worker/gpu_worker.py annotate_profile"},
      {"SGLang", "^step\\[[^\\]]*\\]$", "python/sglang/srt/model_executor/model_runner.py forward"},
      {"TensorRT-LLM", "^_forward_step$", "tensorrt_llm/_torch/pyexecutor/model_engine.py"},
  };
  return markers;
}

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
    if (added) {
      names_.push_back(std::move(name));
      communication_.push_back(stages_ != nullptr && category == "kernel" &&
                               stages_->stage_of_name(std::string(event.name)) == "communication");
    }
    activities_.push_back({event.timestamp_us, end, event.correlation, event.device.value_or(-1),
                           it->second, category == "kernel", communication_[it->second]});
  } else if (category == "cuda_runtime" || category == "cuda_driver") {
    if (event.correlation && is_launch(event.name)) {
      launches_[*event.correlation] = {event.timestamp_us, end, event.pid,
                                       event.name.find("GraphLaunch") != std::string_view::npos};
    }
  } else if (category == "user_annotation" || category == "gpu_user_annotation") {
    annotations_.push_back({std::string(event.name), event.timestamp_us, event.duration_us,
                            event.pid, category == "gpu_user_annotation"});
  }
}

namespace {

struct StepWork {
  double start, end;
  std::optional<std::int64_t> correlation;
  std::int64_t device;
  std::uint32_t name;
  bool kernel;
  bool communication;
};

void add_device(DeviceBudget& into, const DeviceBudget& part) {
  into.gpu_activities += part.gpu_activities;
  into.kernels += part.kernels;
  into.kernel_time_us += part.kernel_time_us;
  into.gpu_span_us += part.gpu_span_us;
  into.gpu_busy_us += part.gpu_busy_us;
  into.host_idle_us += part.host_idle_us;
  into.device_idle_us += part.device_idle_us;
  into.exposed_communication_us += part.exposed_communication_us;
  into.busy_fraction = into.gpu_span_us > 0 ? into.gpu_busy_us / into.gpu_span_us : 0;
}

double host_fed(double busy, double host_gap) {
  return busy + host_gap > 0 ? busy / (busy + host_gap) : 1;
}

}  // namespace

Budget BudgetBuilder::finish(const std::string& step_regex, const BudgetThresholds& t) const {
  Budget budget;
  std::vector<const Annotation*> steps;
  std::vector<std::pair<std::string, std::string>> candidates;  // pattern, description
  if (step_regex.empty()) {
    for (const StepMarker& marker : builtin_step_markers()) {
      candidates.emplace_back(marker.pattern, std::string(marker.engine) + " step annotations");
    }
  } else {
    candidates.emplace_back(step_regex, "/" + step_regex + "/");
  }
  for (const auto& [regex, description] : candidates) {
    RE2 pattern(regex, RE2::Quiet);
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
    if (!steps.empty()) {
      budget.step_selector = description;
      break;
    }
  }
  // ProfilerStep#N keeps the name it always had in kprof's output.
  if (budget.step_selector == "PyTorch step annotations") {
    budget.step_selector = "ProfilerStep#N annotations";
  }
  std::vector<StepBudget> results;
  auto summarize = [&](StepBudget& step, std::vector<StepWork> work) {
    std::map<std::uint32_t, double> per_name;
    for (const StepWork& w : work) per_name[w.name] += w.end - w.start;
    for (const auto& [id, total] : per_name) step.kernels.emplace_back(names_[id], total);
    std::stable_sort(step.kernels.begin(), step.kernels.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    step.gpu_activities = work.size();
    if (work.empty()) return;
    std::sort(work.begin(), work.end(), [](const StepWork& a, const StepWork& b) {
      return a.device != b.device ? a.device < b.device : a.start < b.start;
    });
    // Per device: walk its work in start order; an idle interval before an item is the host's
    // when that item's launch call ended after the device had run out of work (or its launch is
    // not in the trace), the device's own otherwise.
    for (size_t i = 0; i < work.size();) {
      DeviceBudget device;
      device.device = work[i].device;
      double first = work[i].start, frontier = work[i].end, open_start = work[i].start;
      double last = work[i].end;
      // The union of the device's other-than-communication work, walked alongside.
      double other_busy = 0, other_start = 0, other_frontier = 0;
      bool other_open = false;
      size_t j = i;
      for (; j < work.size() && work[j].device == device.device; ++j) {
        const StepWork& w = work[j];
        if (!w.communication) {
          if (!other_open || w.start > other_frontier) {
            if (other_open) other_busy += other_frontier - other_start;
            other_start = w.start;
            other_frontier = w.end;
            other_open = true;
          }
          other_frontier = std::max(other_frontier, w.end);
        }
        ++device.gpu_activities;
        if (w.kernel) {
          ++device.kernels;
          device.kernel_time_us += w.end - w.start;
        }
        last = std::max(last, w.end);
        if (w.start > frontier) {
          device.gpu_busy_us += frontier - open_start;
          double gap = w.start - frontier;
          auto launch = w.correlation ? launches_.find(*w.correlation) : launches_.end();
          if (launch == launches_.end() || launch->second.end > frontier) {
            device.host_idle_us += gap;
          } else {
            device.device_idle_us += gap;
          }
          open_start = w.start;
        }
        frontier = std::max(frontier, w.end);
      }
      device.gpu_busy_us += frontier - open_start;
      if (other_open) other_busy += other_frontier - other_start;
      device.exposed_communication_us = std::max(0.0, device.gpu_busy_us - other_busy);
      device.gpu_span_us = last - first;
      device.busy_fraction = device.gpu_span_us > 0 ? device.gpu_busy_us / device.gpu_span_us : 1;
      step.gpu_span_us += device.gpu_span_us;
      step.gpu_busy_us += device.gpu_busy_us;
      step.host_gap_us += device.host_idle_us;
      step.device_idle_us += device.device_idle_us;
      step.exposed_communication_us += device.exposed_communication_us;
      step.devices.push_back(device);
      i = j;
    }
    step.busy_fraction = step.gpu_span_us > 0 ? step.gpu_busy_us / step.gpu_span_us : 1;
    step.host_fed_fraction = host_fed(step.gpu_busy_us, step.host_gap_us);
    step.verdict = classify(step.host_fed_fraction, t);
  };
  auto work_of = [](const Activity& a) {
    return StepWork{a.start, a.end, a.correlation, a.device, a.name, a.kernel, a.communication};
  };
  if (steps.empty()) {
    budget.step_selector =
        step_regex.empty()
            ? "the whole trace (no step annotations kprof knows; --step picks others)"
            : "the whole trace (no annotation matches /" + step_regex + "/)";
    StepBudget whole;
    whole.name = "trace";
    whole.source = "whole trace";
    std::vector<StepWork> work;
    for (const Activity& a : activities_) work.push_back(work_of(a));
    for (const auto& [id, launch] : launches_) {
      ++whole.kernel_launches;
      whole.graph_launches += launch.graph;
    }
    summarize(whole, std::move(work));
    results.push_back(whole);
  }
  // Indexes, so that each step looks only at its own launches and work (a long trace has
  // thousands of steps): launches by time, launched work by its launch's time, all work by start.
  std::vector<std::pair<double, const Launch*>> launches_by_time;
  std::vector<std::pair<double, std::size_t>> work_by_launch_time, work_by_start;
  double longest = 0;
  if (!steps.empty()) {
    for (const auto& [id, launch] : launches_) launches_by_time.emplace_back(launch.time, &launch);
    for (std::size_t i = 0; i < activities_.size(); ++i) {
      const Activity& activity = activities_[i];
      work_by_start.emplace_back(activity.start, i);
      longest = std::max(longest, activity.end - activity.start);
      if (!activity.correlation) continue;
      auto launch = launches_.find(*activity.correlation);
      if (launch != launches_.end()) work_by_launch_time.emplace_back(launch->second.time, i);
    }
    std::sort(launches_by_time.begin(), launches_by_time.end(),
              [](const auto& x, const auto& y) { return x.first < y.first; });
    std::sort(work_by_launch_time.begin(), work_by_launch_time.end());
    std::sort(work_by_start.begin(), work_by_start.end());
  }
  auto from = [](const auto& sorted, double time) {
    return std::lower_bound(sorted.begin(), sorted.end(), time,
                            [](const auto& entry, double t) { return entry.first < t; });
  };
  for (const Annotation* a : steps) {
    StepBudget step;
    step.name = a->name;
    step.start_us = a->start;
    step.host_duration_us = a->duration;
    std::vector<std::size_t> taken;  // indexes into activities_, put back in trace order below
    double end = a->start + a->duration;
    if (!a->gpu_side) {
      step.source = "cpu annotation";
      for (auto it = from(launches_by_time, a->start);
           it != launches_by_time.end() && it->first <= end; ++it) {
        if (it->second->pid != a->pid) continue;
        ++step.kernel_launches;
        step.graph_launches += it->second->graph;
      }
      for (auto it = from(work_by_launch_time, a->start);
           it != work_by_launch_time.end() && it->first <= end; ++it) {
        if (launches_.at(*activities_[it->second].correlation).pid == a->pid) {
          taken.push_back(it->second);
        }
      }
    } else {
      step.source = "gpu annotation";
      for (auto it = from(work_by_start, a->start - longest);
           it != work_by_start.end() && it->first < end; ++it) {
        if (activities_[it->second].end > a->start) taken.push_back(it->second);
      }
    }
    std::sort(taken.begin(), taken.end());
    std::vector<StepWork> work;
    for (std::size_t i : taken) {
      StepWork w = work_of(activities_[i]);
      if (a->gpu_side) {
        w.start = std::max(w.start, a->start);
        w.end = std::min(w.end, end);
      }
      work.push_back(w);
    }
    summarize(step, std::move(work));
    results.push_back(step);
  }
  std::sort(results.begin(), results.end(),
            [](const StepBudget& x, const StepBudget& y) { return x.start_us < y.start_us; });
  std::map<std::int64_t, DeviceBudget> devices;
  for (const StepBudget& step : results) {
    budget.total_busy_us += step.gpu_busy_us;
    budget.total_span_us += step.gpu_span_us;
    budget.total_host_gap_us += step.host_gap_us;
    budget.total_device_idle_us += step.device_idle_us;
    budget.total_exposed_communication_us += step.exposed_communication_us;
    for (const DeviceBudget& part : step.devices) {
      DeviceBudget& device = devices[part.device];
      device.device = part.device;
      add_device(device, part);
    }
  }
  for (const auto& [id, device] : devices) budget.devices.push_back(device);
  budget.steps = std::move(results);
  if (budget.total_span_us > 0) {
    budget.overall = classify(host_fed(budget.total_busy_us, budget.total_host_gap_us), t);
  }
  return budget;
}

}  // namespace kprof::timeline
