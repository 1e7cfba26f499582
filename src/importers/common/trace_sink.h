// Where trace readers put events (one at a time, never all held), and what a reading counted.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "importers/common/graph_node_table.h"
#include "importers/common/trace_event.h"

namespace kprof::importers {

class TraceEventSink {
 public:
  virtual ~TraceEventSink() = default;
  virtual void on_event(const TraceEvent& event) = 0;
  // A sink that needs only some categories says so; the reader then hands it the others as
  // bare time spans (on_span) without parsing them fully, which is most of a trace. The Chrome
  // trace reader asks from its parsing thread while on_event and on_span run on the caller's: the
  // answer must depend on the category alone.
  virtual bool wants_category(std::string_view /*category*/) const { return true; }
  virtual void on_span(double /*timestamp_us*/, double /*duration_us*/) {}
  // kprof's tracer's table of captured graph nodes (graph_node_table.h), when the trace carries
  // a valid one: once, after every event. Shared, not copied: it may hold a million rows.
  virtual void on_graph_nodes(std::shared_ptr<const GraphNodeTable> /*table*/) {}
};

struct TraceReadStats {
  std::uint64_t bytes = 0;         // decompressed bytes read
  std::uint64_t events = 0;        // complete events (parsed, or spans of unwanted categories)
  std::uint64_t other_events = 0;  // metadata, flow and instant events, skipped
  // Complete events left out for an impossible time (see implausible_time), not counted in
  // events; the first of them described (where, which, why) for the warning.
  std::uint64_t skipped_events = 0;
  std::string first_skipped;
  // Events larger than any profiler writes (16 MiB), skipped without being held; the first's
  // byte offset.
  std::uint64_t oversized_events = 0;
  std::uint64_t first_oversized_at = 0;
  // What the file was read as, for the user: "Kineto trace, schemaVersion 1", "Nsight Systems
  // SQLite export, schema 3.25.0 (nsys 2026.2.1.210)"; whether the trace's categories were the
  // PyTorch 1.8/1.9 ones (Kernel, Runtime, Operator…), read through the map.
  std::string format;
  bool legacy_categories = false;
  // The GPUs the trace describes (Kineto's deviceProperties, nsys's TARGET_INFO_GPU), by id.
  std::vector<std::pair<std::int64_t, std::string>> device_names;
  // Set when the file is JSON of events but not a profiler timeline (an Nsight Systems export
  // converted to Chrome JSON, a CUPTI counter-range trace): what it is and what to give instead,
  // for the message that would otherwise ask whether CUDA was recorded.
  std::string not_a_timeline;
  // What the producer itself says it lost, one line each, as it says it: Nsight Systems'
  // DIAGNOSTIC_EVENT rows about dropped or lost records, kprof's tracer's "dropped" counts. The
  // figures resting on such a trace are qualified (timeline::LaunchRecords counts what is
  // missing).
  std::vector<std::string> producer_drops;
  // Whether the producer counts its drops (kprof's tracer's summary, zeros included): then
  // producer_drops is the whole truth about lost records.
  bool producer_counts_drops = false;
  // kprof's tracer's graph node table: the rows and clone pairs read (handed to the sink), or
  // why a table the trace carries was ignored ("" when it was read, or there was none) — said
  // once as a warning, the trace then read as one without a table.
  std::uint64_t graph_node_rows = 0, graph_node_clones = 0;
  bool has_graph_nodes = false;
  std::string graph_nodes_ignored;
};

}  // namespace kprof::importers
