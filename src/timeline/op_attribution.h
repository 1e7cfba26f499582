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
//
// A CUDA/HIP graph replay's kernels all carry the correlation id of their one cudaGraphLaunch,
// whose caller is no operator: they would land in the no-operator bucket. Given the trace of
// the graph's capture (rank --graph-capture), where each captured launch call was made inside
// its operator but ran nothing, each replayed kernel takes the operator of its captured launch:
// the replay's kernels in start order and the captured graph's launches in call order, matched
// by name — the k-th replayed kernel of a name to the k-th captured launch of that name (HIP's
// launch events name their kernel) — or by position where the capture's launch events name no
// kernel (CUDA's). The captured graph a replay is matched against is the one whose launches share
// the most names with it (by position: the nearest in size). Graph and node ids are not used:
// a capture trace's launch calls carry neither.
//
// A trace of kprof's own tracer needs no capture trace: it carries the table of every graph node
// the process captured (on_graph_nodes), and each replayed kernel record its node's id. Such
// kernels are kept per node id (memory follows the table, not the replays) and at finish() take
// their captured node's context (graph_node_context.h): its innermost operator range (--by op),
// its module ranges (--by module) or its whole range stack (--by range), else its layer and part
// inferred from its graph's repetition. There the node table wins over --graph-capture.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "analysis/stages.h"
#include "importers/common/trace_sink.h"
#include "timeline/graph_node_context.h"
#include "timeline/launch_join.h"

namespace kprof::timeline {

// kRange: the whole stack of ranges — a replayed graph node's NVTX ranges at capture, an eager
// launch's annotations (user_annotation: NVTX ranges, record_function) open around it.
enum class AttributeBy { kOp, kModule, kRange };

// The bucket of GPU work no operator (module, range) launched: no launch call with its
// correlation id, or a launch call outside every cpu_op (module frame, annotation) of its thread;
// a replayed graph node neither a range nor its graph's repetition places.
inline constexpr std::string_view kNoOperator = "(no operator)";
inline constexpr std::string_view kNoModule = "(no module)";
inline constexpr std::string_view kNoRange = "(no range)";
std::string_view no_bucket_name(AttributeBy by);

struct OpStats {
  std::string name;           // the op's name; for modules the path "Outer_0/Inner_1"
  std::uint64_t kernels = 0;  // GPU activities (kernels, memcpy, memset) it launched
  double total_us = 0;        // their summed durations
  double share = 0;           // of gpu_time_us
};

// A captured launch: the kernel it named (normalised; empty where the runtime event does not say)
// and the operator or module path it was made in.
struct CapturedGraphLaunch {
  std::string kernel;
  std::string bucket;
};

// What a trace of graph capture holds: per captured graph — the launch calls made since the
// process's previous graph instantiation (cudaGraphInstantiate) up to the next, whose work never
// ran — its launches in call order.
struct GraphCapture {
  std::vector<std::vector<CapturedGraphLaunch>> graphs;
  std::uint64_t launches = 0;  // captured launches in all graphs
  bool named = false;          // the launch events name their kernels (matched by name)
};

// How a replay trace's graph launches were matched to a capture (OpAttribution::replay).
struct ReplayMatch {
  std::uint64_t graph_launches = 0;    // graph launches whose kernels ran in the trace
  std::uint64_t replayed_kernels = 0;  // GPU activities those launches enqueued
  std::uint64_t matched = 0;           // of them, given their captured launch's operator
  double unmatched_us = 0;             // the rest, left under the graph launch's own bucket
  std::uint64_t captured_graphs = 0, captured_launches = 0;
  // Graph launches several captured graphs matched equally well, with different operators:
  // left unmatched.
  std::uint64_t ambiguous_graph_launches = 0;
  bool by_name = false;
  std::string capture_trace;  // the capture trace's path (set by the caller)
};

// GPU time of one kernel (its normalised name) launched under one operator (or module path) and
// in one step phase: OpAttributionBuilder::keep_launched_kernels(), for the stage of a kernel
// its operator decides (kprof rank).
struct LaunchedKernel {
  std::string kernel;  // normalised name
  std::string op;      // the operator or module path; "" when none launched it
  // The batch of the step annotation (vLLM's execute_context_P(T)_generation_D(T), SGLang's
  // step[decode bs=N]) around the launch call on its thread; nullopt without one.
  std::optional<bool> decode_only_step;
  std::uint64_t count = 0;
  double total_us = 0;
};

// GPU time and activities of one share of the graph-replayed work.
struct ReplayShare {
  std::uint64_t kernels = 0;
  double total_us = 0;
};

// One captured graph whose nodes the trace replayed.
struct ReplayedGraph {
  CapturedGraph graph;
  std::uint64_t kernels = 0;  // its replayed GPU activities
  double total_us = 0;
  std::uint64_t replays = 0;  // the most times one of its nodes ran: its launches in the trace
};

// How the replayed kernels of a trace with a node table were attributed (OpAttribution::graphs).
struct GraphNodeAttribution {
  std::uint64_t table_nodes = 0, table_clones = 0;
  importers::GraphNodeCounts counts;  // what the tracer could not table
  // GPU activities whose record names a graph node: by the view's placement (ranges, inferred
  // layers, or neither), and why the unattributed ones are (NodePlacement).
  ReplayShare replayed, by_ranges, inferred, unattributed;
  ReplayShare no_context, not_in_table, not_placed;
  std::vector<ReplayedGraph> graphs;   // by bucket, then graph id
  bool graph_capture_ignored = false;  // --graph-capture was given: the table won
};

struct OpAttribution {
  AttributeBy by = AttributeBy::kOp;
  std::vector<OpStats> ops;  // largest total first; the no-operator bucket among them
  double gpu_time_us = 0;
  std::uint64_t gpu_events = 0;
  std::uint64_t cpu_ops = 0;          // cpu_op events (module frames for --by module) read
  std::uint64_t launches = 0;         // runtime/driver calls with a correlation id
  std::uint64_t unattributed = 0;     // GPU activities in the no-operator bucket
  std::optional<ReplayMatch> replay;  // with use_graph_capture() only (and no node table)
  // For a trace carrying a graph node table whose GPU records name graph nodes.
  std::optional<GraphNodeAttribution> graphs;
  // GPU work naming no process whose correlation id several processes launched: its operator is
  // inferred (launch_join.h), and said so.
  JoinReport shared_ids;
  // With keep_launched_kernels() only: every kernel's time by launching operator and step phase
  // (a graph replay's kernels by their captured launch's operator, given a capture).
  std::vector<LaunchedKernel> launched_kernels;
};

class OpAttributionBuilder final : public importers::TraceEventSink {
 public:
  explicit OpAttributionBuilder(AttributeBy by) : by_(by) {}
  void on_event(const importers::TraceEvent& event) override;
  bool wants_category(std::string_view category) const override;
  void on_graph_nodes(std::shared_ptr<const importers::GraphNodeTable> table) override {
    graph_nodes_ = std::move(table);
  }
  // The stage table that names an inferred layer's parts by their kernels' operation class
  // (nullptr: by position alone). It must outlive finish().
  void use_stage_table(const analysis::StageTable* stages) { stages_ = stages; }
  OpAttribution finish() const;
  // The trace read was one of graph capture: its captured launches, by graph. Empty graphs when
  // it holds none (no launch call whose work did not run).
  GraphCapture finish_capture() const;
  // Before reading a replay trace: attribute its graph launches' kernels through this capture.
  // Each GPU activity is then kept (name, start, duration) until finish().
  void use_graph_capture(GraphCapture capture) { capture_ = std::move(capture); }
  // Also report the time of these kernels (normalised names) by operator and by the step
  // annotation around their launch (OpAttribution::launched_kernels); reads the step annotations
  // (user_annotation) for it. Other GPU work is then left out of the operators' totals (unless a
  // graph capture is used: a replay is matched whole), which keeps memory to those kernels'.
  void keep_launched_kernels(std::set<std::string, std::less<>> kernels) {
    keep_kernels_ = true;
    kept_kernels_ = std::move(kernels);
  }

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
    std::uint32_t kernel;  // the kernel the call names (index into kernel_names_; 0: none)
    bool enqueues;         // a kernel launch, copy or fill (not a graph launch, not other calls)
    bool graph;            // a graph launch
  };
  struct Work {
    std::uint64_t count = 0;
    double total_us = 0;
    // Of them, the activities whose record names a graph node: kept per node too (node_work_),
    // and attributed by it where the trace carries a node table.
    std::uint64_t node_count = 0;
    double node_us = 0;
    double first_start = 0;
    // The kernel (index into kernel_names_) all its activities ran; 0: none, or copies and
    // fills; kMixedKernels: several (a graph launch's).
    std::uint32_t kernel = 0;
  };
  static constexpr std::uint32_t kMixedKernels = static_cast<std::uint32_t>(-1);
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
  std::vector<std::string> kernel_names_{""};  // normalised; 0 is "no name"
  std::map<std::string, std::uint32_t, std::less<>> kernel_name_ids_;
  std::uint32_t kernel_id(std::string_view name);
  std::map<std::int64_t, std::vector<double>> instantiations_;  // per process
  // A replay's GPU activities one by one (with use_graph_capture() only).
  struct Item {
    WorkId id;
    std::uint32_t kernel;
    double start, duration;
  };
  std::optional<GraphCapture> capture_;
  std::vector<Item> items_;
  // Each launch call's bucket (operator or module path), launches in per-thread sweep order.
  struct BucketedLaunch {
    const Launch* launch;
    std::string bucket;
    std::optional<bool> decode_only_step;  // with keep_launched_kernels() only
  };
  bool keep_kernels_ = false;
  std::set<std::string, std::less<>> kept_kernels_;
  // Step annotations whose name tells the batch (step_batch), per thread: their spans and
  // whether each step was decode-only.
  struct StepSpan {
    double start, end;
    bool decode_only;
  };
  std::map<Thread, std::vector<StepSpan>> step_spans_;
  // Kernel time by (kernel, bucket, decode-only step), gathered in finish().
  using LaunchedMap =
      std::map<std::tuple<std::uint32_t, std::string, std::optional<bool>>, LaunchedKernel>;
  void add_launched(LaunchedMap& to, std::uint32_t kernel, const std::string& bucket,
                    std::optional<bool> decode_only, std::uint64_t count, double total_us) const;
  std::vector<BucketedLaunch> bucketed_launches() const;
  void attribute_replays(const std::map<WorkId, std::size_t>& graph_launch_of,
                         const std::vector<BucketedLaunch>& launches,
                         std::map<std::string, OpStats, std::less<>>& buckets,
                         OpAttribution& result, LaunchedMap& launched) const;
  double gpu_time_us_ = 0;
  std::uint64_t gpu_events_ = 0, spans_read_ = 0, launches_read_ = 0;
  // GPU work per graph node id (kernel: index into kernel_names_, kept with
  // keep_launched_kernels() only), and the trace's node table.
  struct NodeWork {
    std::uint64_t count = 0;
    double total_us = 0;
    std::uint32_t kernel = 0;
  };
  std::map<std::uint64_t, NodeWork> node_work_;
  std::shared_ptr<const importers::GraphNodeTable> graph_nodes_;
  const analysis::StageTable* stages_ = nullptr;
  // The part of a work item launched eagerly (all of it without a node table).
  Work eager_part(const Work& work) const;
  void attribute_graph_nodes(std::map<std::string, OpStats, std::less<>>& buckets,
                             OpAttribution& result, LaunchedMap& launched) const;
};

}  // namespace kprof::timeline
