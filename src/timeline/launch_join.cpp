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
namespace {

// The last of `candidates` (in start order) that started by `start`, else the first: a launch
// call precedes its work, and of two with one id in one process the nearer is the one.
std::size_t nearest_before(std::span<const std::size_t> candidates,
                           const std::vector<LaunchKey>& launches, double start) {
  std::size_t chosen = candidates.front();
  for (std::size_t index : candidates) {
    if (launches[index].start_us > start) break;
    chosen = index;
  }
  return chosen;
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
                                       const std::vector<WorkKey>& work) {
  // Launch indexes by (correlation id, start): each id's candidates are one contiguous run.
  std::vector<std::size_t> order(launches.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const LaunchKey& x = launches[a];
    const LaunchKey& y = launches[b];
    return x.correlation != y.correlation ? x.correlation < y.correlation : x.start_us < y.start_us;
  });
  auto candidates_of = [&](std::int64_t correlation) -> std::span<const std::size_t> {
    auto first = std::lower_bound(
        order.begin(), order.end(), correlation,
        [&](std::size_t index, std::int64_t id) { return launches[index].correlation < id; });
    auto last = first;
    while (last != order.end() && launches[*last].correlation == correlation) ++last;
    return {first, last};
  };

  std::vector<std::size_t> joined(work.size(), kNoLaunch);
  std::map<std::int64_t, std::map<std::int64_t, std::uint64_t>> votes;  // device -> process
  std::vector<std::size_t> ambiguous;
  for (std::size_t w = 0; w < work.size(); ++w) {
    const WorkKey& item = work[w];
    std::span<const std::size_t> candidates = candidates_of(item.correlation);
    if (candidates.empty()) continue;
    if (item.process) {
      std::vector<std::size_t> own = of_process(candidates, launches, *item.process);
      if (!own.empty()) joined[w] = nearest_before(own, launches, item.start_us);
      continue;
    }
    std::optional<std::int64_t> process = launches[candidates.front()].process;
    for (std::size_t index : candidates) {
      if (launches[index].process != *process) {
        process = only_process_before(candidates, launches, item.start_us);
        break;
      }
    }
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
    const WorkKey& item = work[w];
    std::span<const std::size_t> candidates = candidates_of(item.correlation);
    if (auto it = owner.find(item.device); it != owner.end()) {
      std::vector<std::size_t> own = of_process(candidates, launches, it->second);
      if (!own.empty()) {
        joined[w] = nearest_before(own, launches, item.start_us);
        continue;
      }
    }
    joined[w] = nearest_before(candidates, launches, item.start_us);
  }
  return joined;
}

}  // namespace kprof::timeline
