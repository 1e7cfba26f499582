#include "timeline/launch_join.h"

#include <algorithm>
#include <map>
#include <span>

namespace kprof::timeline {

bool is_launch_call(std::string_view name) {
  // cudaLaunchCooperativeKernel and cuLaunchCooperativeKernel name no "LaunchKernel".
  for (std::string_view word :
       {"LaunchKernel", "LaunchCooperativeKernel", "GraphLaunch", "Memcpy", "Memset"}) {
    if (name.find(word) != std::string_view::npos) return true;
  }
  return false;
}
LaunchKind launch_kind(std::string_view call_name) {
  if (call_name.find("Memcpy") != std::string_view::npos) return LaunchKind::kMemcpy;
  if (call_name.find("Memset") != std::string_view::npos) return LaunchKind::kMemset;
  return LaunchKind::kKernel;
}

namespace {

// The last of `candidates` (in start order) that started by `start`, else the first: a launch
// call precedes its work, and of two with one id in one process the nearer is the one. A binary
// search: a trace that repeats ids (several ranks' traces merged, a trace built by repeating one)
// has thousands of candidates for each.
std::size_t nearest_before(std::span<const std::size_t> candidates,
                           const std::vector<LaunchKey>& launches, double start) {
  auto after = std::upper_bound(
      candidates.begin(), candidates.end(), start,
      [&](double time, std::size_t index) { return time < launches[index].start_us; });
  return after == candidates.begin() ? candidates.front() : *std::prev(after);
}

// The candidates of one process, in start order (a copy: a handful at most).
std::vector<std::size_t> of_process(std::span<const std::size_t> candidates,
                                    const std::vector<LaunchKey>& launches, std::int64_t process) {
  std::vector<std::size_t> kept;
  for (std::size_t index : candidates) {
    if (launches[index].process == process) kept.push_back(index);
  }
  return kept;
}

// The one process among the candidates that started by `start`, if only one had.
std::optional<std::int64_t> only_process_before(std::span<const std::size_t> candidates,
                                                const std::vector<LaunchKey>& launches,
                                                double start) {
  std::optional<std::int64_t> only;
  for (std::size_t index : candidates) {
    if (launches[index].start_us > start) break;
    if (only && *only != launches[index].process) return std::nullopt;
    only = launches[index].process;
  }
  return only;
}

}  // namespace

std::vector<std::size_t> join_launches(const std::vector<LaunchKey>& launches,
                                       const std::vector<WorkKey>& work, JoinReport* report) {
  return join_launches(
      launches, work.size(), [&](std::size_t i) { return work[i]; }, report);
}

std::vector<std::size_t> join_launches(const std::vector<LaunchKey>& launches,
                                       std::size_t work_count,
                                       const std::function<WorkKey(std::size_t)>& work_at,
                                       JoinReport* report) {
  JoinReport unused;
  JoinReport& said = report ? *report : unused;
  // Launch indexes by (correlation id, start): each id's candidates are one contiguous run.
  std::vector<std::size_t> order(launches.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const LaunchKey& x = launches[a];
    const LaunchKey& y = launches[b];
    return x.correlation != y.correlation ? x.correlation < y.correlation : x.start_us < y.start_us;
  });
  // Each id's run of candidates, and whether one process launched them all (nearly always: then
  // no candidate needs looking at one by one).
  struct Run {
    std::int64_t correlation;
    std::size_t begin, end;
    bool one_process;
  };
  std::vector<Run> runs;
  for (std::size_t k = 0; k < order.size();) {
    const LaunchKey& first = launches[order[k]];
    Run run{first.correlation, k, k, true};
    for (; run.end < order.size() && launches[order[run.end]].correlation == first.correlation;
         ++run.end) {
      run.one_process = run.one_process && launches[order[run.end]].process == first.process;
    }
    runs.push_back(run);
    k = run.end;
  }
  auto run_of = [&](std::int64_t correlation) -> const Run* {
    auto found =
        std::lower_bound(runs.begin(), runs.end(), correlation,
                         [](const Run& run, std::int64_t id) { return run.correlation < id; });
    return found != runs.end() && found->correlation == correlation ? &*found : nullptr;
  };
  auto candidates_of = [&](const Run* run) -> std::span<const std::size_t> {
    if (!run) return {};
    return {order.begin() + static_cast<std::ptrdiff_t>(run->begin),
            order.begin() + static_cast<std::ptrdiff_t>(run->end)};
  };

  std::vector<std::size_t> joined(work_count, kNoLaunch);
  std::map<std::int64_t, std::map<std::int64_t, std::uint64_t>> votes;  // device -> process
  std::vector<std::size_t> ambiguous;
  for (std::size_t w = 0; w < work_count; ++w) {
    const WorkKey item = work_at(w);
    const Run* run = run_of(item.correlation);
    std::span<const std::size_t> candidates = candidates_of(run);
    if (candidates.empty()) continue;
    const std::int64_t first_process = launches[candidates.front()].process;
    if (item.process) {
      if (run->one_process) {
        if (*item.process == first_process) {
          joined[w] = nearest_before(candidates, launches, item.start_us);
        }
        continue;
      }
      std::vector<std::size_t> own = of_process(candidates, launches, *item.process);
      if (!own.empty()) joined[w] = nearest_before(own, launches, item.start_us);
      continue;
    }
    if (run->one_process) {
      joined[w] = nearest_before(candidates, launches, item.start_us);
      ++votes[item.device][first_process];
      continue;
    }
    ++said.shared_id_work;
    std::optional<std::int64_t> process = only_process_before(candidates, launches, item.start_us);
    if (!process) {
      ambiguous.push_back(w);
      continue;
    }
    joined[w] = nearest_before(of_process(candidates, launches, *process), launches, item.start_us);
    ++votes[item.device][*process];
  }
  std::map<std::int64_t, std::int64_t> owner;  // device -> the process most of its work came from
  for (const auto& [device, by_process] : votes) {
    owner[device] =
        std::max_element(by_process.begin(), by_process.end(), [](const auto& a, const auto& b) {
          return a.second < b.second;
        })->first;
  }
  for (std::size_t w : ambiguous) {
    const WorkKey item = work_at(w);
    std::span<const std::size_t> candidates = candidates_of(run_of(item.correlation));
    if (auto it = owner.find(item.device); it != owner.end()) {
      std::vector<std::size_t> own = of_process(candidates, launches, it->second);
      if (!own.empty()) {
        joined[w] = nearest_before(own, launches, item.start_us);
        ++said.by_device_owner;
        continue;
      }
    }
    joined[w] = nearest_before(candidates, launches, item.start_us);
    ++said.by_latest_launch;
  }
  return joined;
}

}  // namespace kprof::timeline
