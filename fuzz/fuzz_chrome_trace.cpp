// libFuzzer target for the streaming Chrome trace reader. Each input is read twice, with the
// plain-event fast path and with simdjson alone (chrome_trace_reader.h EventParsing): the fast
// path must give every event field for field as simdjson does, and the same error, or abort.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "importers/chrome_trace/chrome_trace_reader.h"

namespace {

std::string optional_text(const std::optional<std::int64_t>& value) {
  return value ? std::to_string(*value) : "-";
}

class RecordingSink final : public kprof::importers::TraceEventSink {
 public:
  void on_event(const kprof::importers::TraceEvent& e) override {
    char times[96];
    std::snprintf(times, sizeof times, "%a|%a", e.timestamp_us, e.duration_us);
    std::string line = std::string(e.category) + "|" + std::string(e.name) + "|" + times + "|" +
                       std::to_string(e.pid) + "|" + std::to_string(e.tid) + "|" +
                       optional_text(e.process) + "|" + optional_text(e.device) + "|" +
                       optional_text(e.stream) + "|" + optional_text(e.correlation) + "|" +
                       optional_text(e.external_id) + "|" + optional_text(e.graph_id) + "|" +
                       (e.graph_node_id ? std::to_string(*e.graph_node_id) : "-") + "|" +
                       std::string(e.launched_kernel);
    for (const auto* value : {&e.registers_per_thread, &e.shared_memory}) {
      std::snprintf(times, sizeof times, "|%a", value->value_or(-0.5));
      line += times;
    }
    for (const auto& dims : {e.grid, e.block}) {
      for (int d = 0; d < 3; ++d) line += "|" + optional_text(dims[d]);
    }
    lines.push_back(std::move(line));
  }
  // The node table: what a sink sees of it, for both parsings to agree on.
  void on_graph_nodes(std::shared_ptr<const kprof::importers::GraphNodeTable> t) override {
    std::string line = "graph_nodes|" + std::to_string(t->nodes.size()) + "|" +
                       std::to_string(t->clones.size()) + "|" + std::to_string(t->kernels.size()) +
                       "|" + std::to_string(t->stacks.size()) + "|" +
                       std::to_string(t->ranges.size());
    for (const auto& node : t->nodes) {
      line += "|" + std::to_string(node.node) + ":" + std::to_string(node.graph) + ":" +
              t->kernels[node.kernel] + ":" + std::to_string(t->stacks[node.stack].size());
    }
    lines.push_back(std::move(line));
  }
  std::vector<std::string> lines;
};

std::vector<std::string> read(std::string_view bytes, kprof::importers::EventParsing parsing) {
  RecordingSink sink;
  try {
    auto stats = kprof::importers::read_chrome_trace_bytes(
        "fuzz.json", bytes, sink, {}, kprof::importers::kNativeScanIsa, parsing);
    sink.lines.push_back("stats|" + std::to_string(stats.events) + "|" +
                         std::to_string(stats.other_events) + "|" +
                         std::to_string(stats.skipped_events) + "|" + stats.first_skipped + "|" +
                         stats.graph_nodes_ignored);
  } catch (const kprof::InputError& error) {
    sink.lines.push_back(std::string("error|") + error.what());
  }
  return sink.lines;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (read(bytes, kprof::importers::EventParsing::kPlainFirst) !=
      read(bytes, kprof::importers::EventParsing::kSimdjsonOnly)) {
    std::fprintf(stderr, "the plain-event fast path and simdjson read this input differently\n");
    std::abort();
  }
  return 0;
}
