// CUDA-graph ids of trace events: "graph id" (uint32 in CUPTI) and "graph node id" (uint64 in
// CUPTI, so above 2^53 a double cannot hold it) as kprof's tracer and newer PyTorch write them.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "importers/chrome_trace/chrome_trace_reader.h"

namespace kprof::importers {
namespace {

struct GraphIds {
  std::optional<std::int64_t> graph;
  std::optional<std::uint64_t> node;
};

class GraphIdSink final : public TraceEventSink {
 public:
  void on_event(const TraceEvent& event) override {
    ids.push_back({event.graph_id, event.graph_node_id});
  }
  std::vector<GraphIds> ids;
};

std::vector<GraphIds> read_ids(const std::string& args) {
  GraphIdSink sink;
  std::string trace = R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, )"
                      R"("dur": 2, "args": )" +
                      args + "}]}";
  read_chrome_trace_bytes("t.json", trace, sink);
  return sink.ids;
}

TEST(ChromeTraceGraphIds, NodeIdsAreReadExactlyAcrossTheWholeUint64Range) {
  // 2^53 + 1 is the first integer a double rounds; 2^64 - 1 the largest CUPTI can write.
  auto ids = read_ids(R"({"graph id": 3, "graph node id": 9007199254740993})");
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_EQ(ids[0].graph, 3);
  EXPECT_EQ(ids[0].node, 9007199254740993ull);
  EXPECT_EQ(read_ids(R"({"graph node id": 18446744073709551615})")[0].node,
            18446744073709551615ull);
  EXPECT_EQ(read_ids(R"({"graph_node_id": 12884901889 })")[0].node, 12884901889ull);
  EXPECT_EQ(read_ids(R"({"Graph Node Id": "42"})")[0].node, 42u);
}

TEST(ChromeTraceGraphIds, AbsentOrUnusableNodeIdsAreNotInvented) {
  auto ids = read_ids(R"({"device": 0})");
  EXPECT_FALSE(ids[0].graph.has_value());
  EXPECT_FALSE(ids[0].node.has_value());
  for (const char* bad :
       {R"({"graph node id": -1})", R"({"graph node id": 1.5})",
        R"({"graph node id": 18446744073709551616})", R"({"graph node id": "12x"})",
        R"({"graph node id": null})", R"({"graph node id": [1]})"}) {
    SCOPED_TRACE(bad);
    auto read = read_ids(bad);
    ASSERT_EQ(read.size(), 1u);
    EXPECT_FALSE(read[0].node.has_value());
  }
}

TEST(ChromeTraceGraphIds, OtherArgumentsAfterTheNodeIdAreStillRead) {
  struct Sink final : TraceEventSink {
    void on_event(const TraceEvent& event) override { correlation = event.correlation; }
    std::optional<std::int64_t> correlation;
  } sink;
  read_chrome_trace_bytes("t.json",
                          R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1,
                             "dur": 2, "args": {"graph node id": [1, {"a": 2}], "correlation": 9}}]})",
                          sink);
  EXPECT_EQ(sink.correlation, 9);
}

}  // namespace
}  // namespace kprof::importers
