// `kprof report --annotate OUT.json`: the trace's GPU timeline written back as Chrome trace-event
// JSON (the JSON Object Format: {"traceEvents": [...], "otherData": {...}}), which Perfetto's UI
// and chrome://tracing open, with kprof's findings on the slices. Each GPU activity is an "X"
// slice on its device (pid) and stream (tid); a kernel of a captured group carries in `args` the
// group's verdict, binding unit, stage, share of the pipeline, estimated saving and the capture it
// came from. Each step is a slice on a "kprof steps" track with its budget; each idle interval
// inside a step is a slice on its device's "kprof idle" track, named by what the device waited
// for (host gap, device-side idle, dependency wait) — the intervals kprof budget sums.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "analysis/stages.h"
#include "timeline/fix_list.h"
#include "timeline/step_budget.h"

namespace kprof::render {

struct AnnotatedTraceInput {
  const timeline::Budget* budget = nullptr;  // taken with BudgetBuilder::keep_timeline()
  const timeline::FixList* fixes = nullptr;
  const analysis::StageTable* stages = nullptr;  // a stage for every kernel, captured or not
  std::string trace_path;
  std::vector<std::string> report_paths;
  std::vector<std::pair<std::int64_t, std::string>> device_names;  // from the trace, by id
  std::vector<std::string> argv;
};

// What was written, for the line kprof prints.
struct AnnotatedTraceCounts {
  std::size_t slices = 0;     // GPU activities
  std::size_t annotated = 0;  // kernels joined to a captured group
  std::size_t steps = 0;
  std::size_t idle = 0;  // idle intervals
};

// Track ids of kprof's own rows: the steps' process and each device's idle thread (device ids
// and stream ids are small non-negative numbers in every trace kprof reads).
inline constexpr std::int64_t kStepsPid = 1000000000;
inline constexpr std::int64_t kIdleTid = 1000000000;

std::string annotated_trace_json(const AnnotatedTraceInput& input, AnnotatedTraceCounts* counts);

// Which fix-list group a kernel of the timeline belongs to: same canonical name and, where the
// trace records it, the same grid and block (a name captured in another configuration is not
// that group); without a configuration in the trace, the first group of the name. The fix list
// joins the trace the same way (timeline/trace_join.h).
class FixGroupIndex {
 public:
  explicit FixGroupIndex(const timeline::FixList* fixes);
  struct Match {
    const timeline::FixGroup* group = nullptr;
    std::size_t rank = 0;  // 1-based position in the fix list
    std::string how;       // how it was matched where not by name and configuration
  };
  Match find(const timeline::TimelineItem& item);

 private:
  const timeline::FixList* fixes_;
  std::map<std::string, std::vector<std::size_t>> groups_of_;  // canonical name -> indexes
  std::map<std::string, std::string> canonical_;               // trace spelling -> canonical
};

}  // namespace kprof::render
