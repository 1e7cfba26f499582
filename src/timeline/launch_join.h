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

// Launch calls against the GPU records that carry their ids: a profiler that dropped records
// (CUPTI's buffers full: an Nsight Systems export with 24,801 of 24,944 launch calls without a
// GPU row) leaves launches whose work is in no row, and every figure taken from the rows — the
// shares, the busy time, a "host-bound" verdict — rests on the part it kept. Kernel and graph
// launches only: a launch inside a stream capture enqueues nothing, nor does a zero-byte copy or
// fill.
struct LaunchRecords {
  std::uint64_t launch_calls = 0;
  std::uint64_t without_gpu_record = 0;  // of them, those no GPU activity carries the id of
  // Set where the trace's producer counts what it dropped itself (kprof's tracer: exact counts,
  // TraceReadStats::producer_drops): its word is taken over this comparison, which cannot tell
  // the launches of a stream capture it does not record from lost ones.
  bool producer_counts_drops = false;
  // Missing records are said (and the figures qualified) from this share of the launches and this
  // many on: a trace cut at its window's end loses the last launches' work on each stream (a few),
  // a profiler that ran out of buffers thousands.
  static constexpr double kIncompleteShare = 0.05;
  static constexpr std::uint64_t kIncompleteCount = 20;
  bool incomplete() const {
    return !producer_counts_drops && without_gpu_record >= kIncompleteCount &&
           static_cast<double>(without_gpu_record) >=
               kIncompleteShare * static_cast<double>(launch_calls);
  }
};

// A runtime or driver call that enqueues GPU work (a kernel or graph launch, a copy, a fill): the
// calls whose correlation ids GPU activities carry.
bool is_launch_call(std::string_view name);

// What a launch call enqueues, by its name: a copy, a fill, else kernels (a graph launch too).
enum class LaunchKind : std::uint8_t { kKernel, kMemcpy, kMemset };
LaunchKind launch_kind(std::string_view call_name);

// What the join could not take from the trace itself: GPU work naming no process whose
// correlation id several processes launched (ranks' traces merged into one file), each given to
// a process by the rules above — the process owning its device, else the latest launch before
// it. Said to the user: such an attribution is inferred, not recorded.
struct JoinReport {
  std::uint64_t shared_id_work = 0;    // work items whose id several processes launched
  std::uint64_t by_device_owner = 0;   // of them, given to their device's process
  std::uint64_t by_latest_launch = 0;  // of them, given to the latest launch before them
};

// For each work item, the index into `launches` of the call that enqueued it, or kNoLaunch.
std::vector<std::size_t> join_launches(const std::vector<LaunchKey>& launches,
                                       const std::vector<WorkKey>& work,
                                       JoinReport* report = nullptr);
// The same with each work item's key made when the join asks for it (work_at(i), i below
// work_count), for a caller that holds millions of items in its own form.
std::vector<std::size_t> join_launches(const std::vector<LaunchKey>& launches,
                                       std::size_t work_count,
                                       const std::function<WorkKey(std::size_t)>& work_at,
                                       JoinReport* report = nullptr);

}  // namespace kprof::timeline
