// Which launch call enqueued each GPU activity. CUPTI numbers correlation ids per process, so a
// trace of several processes — an Nsight Systems export of a multi-process run, Chrome traces of
// several ranks merged into one file — repeats them, and a join by correlation id alone hands one
// process's kernels to another's launches. Every join is keyed by (process, correlation id):
//   - GPU work whose process the trace names (Nsight Systems' globalPid) is matched exactly;
//   - GPU work of a Chrome trace, whose rows name the device and not the process, takes the one
//     launch with its id when there is one; when several processes launched that id, the process
//     that owns its device (learned from the ids only one process launched, or that only one had
//     launched before the work started), else the last such launch before the work started.
// Used by the step budget (which launch, so which step and whether it came late) and the
// operator attribution (which thread's operator launched it).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

namespace kprof::timeline {

struct LaunchKey {
  std::int64_t process = 0;
  std::int64_t correlation = 0;
  double start_us = 0;
};

struct WorkKey {
  std::optional<std::int64_t> process;  // when the trace says which process's work it is
  std::int64_t device = -1;
  std::int64_t correlation = 0;
  double start_us = 0;
};

inline constexpr std::size_t kNoLaunch = static_cast<std::size_t>(-1);

// A runtime or driver call that enqueues GPU work (a kernel or graph launch, a copy, a fill): the
// calls whose correlation ids GPU activities carry.
bool is_launch_call(std::string_view name);

// For each work item, the index into `launches` of the call that enqueued it, or kNoLaunch.
std::vector<std::size_t> join_launches(const std::vector<LaunchKey>& launches,
                                       const std::vector<WorkKey>& work);
// The same with each work item's key made when the join asks for it (work_at(i), i below
// work_count), for a caller that holds millions of items in its own form.
std::vector<std::size_t> join_launches(const std::vector<LaunchKey>& launches,
                                       std::size_t work_count,
                                       const std::function<WorkKey(std::size_t)>& work_at);

}  // namespace kprof::timeline
