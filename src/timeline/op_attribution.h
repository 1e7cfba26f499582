// GPU time per PyTorch operator (`kprof rank --by op`) or nn.Module (`--by module`): each GPU
// activity is linked by its correlation id to the CUDA runtime/driver call that launched it, and
// that call to the innermost `cpu_op` (or `nn.Module: …` python_function) on the same thread
// whose span holds the call's start.
//
// Events arrive in file order, which is not time order (Kineto writes CPU ops, runtime calls and
// GPU activities in separate runs), so nothing can be resolved while reading: the builder keeps
// one small record per CPU op (or module frame), per launch call and per correlation id of GPU
// work — memory proportional to the CPU ops and launches of the trace, never to its bytes — and
// resolves them in finish() with one sweep per thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "importers/common/trace_sink.h"

namespace kprof::timeline {

enum class AttributeBy { kOp, kModule };

// The bucket of GPU work no operator (module) launched: no launch call with its correlation id,
// or a launch call outside every cpu_op (module frame) of its thread.
inline constexpr std::string_view kNoOperator = "(no operator)";
inline constexpr std::string_view kNoModule = "(no module)";

struct OpStats {
  std::string name;           // the op's name; for modules the path "Outer_0/Inner_1"
  std::uint64_t kernels = 0;  // GPU activities (kernels, memcpy, memset) it launched
  double total_us = 0;        // their summed durations
  double share = 0;           // of gpu_time_us
};

struct OpAttribution {
  AttributeBy by = AttributeBy::kOp;
  std::vector<OpStats> ops;  // largest total first; the no-operator bucket among them
  double gpu_time_us = 0;
  std::uint64_t gpu_events = 0;
  std::uint64_t cpu_ops = 0;       // cpu_op events (module frames for --by module) read
  std::uint64_t launches = 0;      // runtime/driver calls with a correlation id
  std::uint64_t unattributed = 0;  // GPU activities in the no-operator bucket
};

class OpAttributionBuilder final : public importers::TraceEventSink {
 public:
  explicit OpAttributionBuilder(AttributeBy by) : by_(by) {}
  void on_event(const importers::TraceEvent& event) override;
  bool wants_category(std::string_view category) const override;
  OpAttribution finish() const;

 private:
  using Thread = std::pair<std::int64_t, std::int64_t>;  // pid, tid
  struct Span {
    double start, end;
    std::uint32_t name;  // index into names_
  };
  struct Launch {
    double time;
    std::int64_t correlation;
    std::int64_t process;
  };
  struct Work {
    std::uint64_t count = 0;
    double total_us = 0;
    double first_start = 0;
  };
  // GPU work by what it can be joined on: its process where the trace says (-1 where not), its
  // device and its correlation id (numbered per process: see launch_join.h).
  using WorkId = std::tuple<std::int64_t, std::int64_t, std::int64_t>;
  AttributeBy by_;
  std::map<Thread, std::vector<Span>> spans_;
  std::map<Thread, std::vector<Launch>> launches_;
  std::map<WorkId, Work> work_;
  Work uncorrelated_;
  std::vector<std::string> names_;
  std::map<std::string, std::uint32_t, std::less<>> name_ids_;
  double gpu_time_us_ = 0;
  std::uint64_t gpu_events_ = 0, spans_read_ = 0, launches_read_ = 0;
};

}  // namespace kprof::timeline
