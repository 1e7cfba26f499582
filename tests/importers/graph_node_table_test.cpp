// kprof's tracer's graph node table (the "graph_nodes" of its summary, docs/tracer.md): read into
// the model, refused whole when it is not one (one warning, the trace read as one without it),
// handed to the sink once, after every event; a trace without one reads as before.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "importers/chrome_trace/chrome_trace_reader.h"
#include "importers/chrome_trace/graph_node_table_reader.h"

namespace kprof::importers {
namespace {

// A table of two nodes of graph 3 (a GEMM under two ranges, a copy with none), one cloned.
std::string table_json(const std::string& nodes =
                           "[[12884901889, 3, 0, 4242, 0, 128, 1, 1, 256, "
                           "1, 1, 1024, 1], [12884901890, 3, 1, 4242, 1, "
                           "0, 0, 0, 0, 0, 0, 0, 0]]",
                       const std::string& clones = "[[442381631489, 12884901889]]") {
  return R"({"version": 1,
  "columns": ["node", "graph", "order", "tid", "kernel", "grid_x", "grid_y", "grid_z",
              "block_x", "block_y", "block_z", "shared_bytes", "stack"],
  "nodes": )" +
         nodes + R"(,
  "kernels": ["_Z6kernelPf", "[memcpy]"],
  "stacks": [[], [0, 1]],
  "ranges": [{"domain": "", "name": "layer 0"}, {"domain": "vllm", "name": "aten::mm, seq = 1"}],
  "clones": )" +
         clones + R"(,
  "counts": {"kernel_nodes": 1, "copy_nodes": 1, "other_nodes": 2, "not_kept": 0,
             "unnamed": 0, "ranges_cut": 0, "clones_not_kept": 0, "a_later_count": 7}})";
}

TEST(GraphNodeTable, ReadsEveryColumnAndList) {
  GraphNodeTable t = parse_graph_node_table(table_json());
  ASSERT_EQ(t.nodes.size(), 2u);
  EXPECT_EQ(t.nodes[0].node, 12884901889u);
  EXPECT_EQ(t.nodes[0].graph, 3u);
  EXPECT_EQ(t.nodes[1].order, 1u);
  EXPECT_EQ(t.nodes[0].tid, 4242);
  EXPECT_EQ(t.kernels[t.nodes[0].kernel], "_Z6kernelPf");
  EXPECT_EQ(t.kernels[t.nodes[1].kernel], "[memcpy]");
  EXPECT_EQ(t.nodes[0].grid, (std::array<std::uint32_t, 3>{128, 1, 1}));
  EXPECT_EQ(t.nodes[0].block, (std::array<std::uint32_t, 3>{256, 1, 1}));
  EXPECT_EQ(t.nodes[0].shared_bytes, 1024u);
  ASSERT_EQ(t.stacks[t.nodes[0].stack].size(), 2u);
  EXPECT_EQ(t.ranges[t.stacks[t.nodes[0].stack][1]].domain, "vllm");
  EXPECT_EQ(t.ranges[t.stacks[t.nodes[0].stack][1]].name, "aten::mm, seq = 1");
  ASSERT_EQ(t.clones.size(), 1u);
  EXPECT_EQ(t.clones[0].first, 442381631489u);
  EXPECT_EQ(t.clones[0].second, 12884901889u);
  EXPECT_EQ(t.counts.copy_nodes, 1u);
  EXPECT_EQ(t.counts.other_nodes, 2u);
}

TEST(GraphNodeTable, ColumnsAreReadByNameAndUnknownOnesIgnored) {
  std::string reordered = R"({"version": 1,
    "columns": ["stack", "later", "node", "graph", "order", "tid", "kernel", "grid_x", "grid_y",
                "grid_z", "block_x", "block_y", "block_z", "shared_bytes"],
    "nodes": [[0, "anything", 18446744073709551615, 1, 0, -1, 0, 1, 2, 3, 4, 5, 6, 7]],
    "kernels": ["k"], "stacks": [[]], "ranges": []})";
  GraphNodeTable t = parse_graph_node_table(reordered);
  ASSERT_EQ(t.nodes.size(), 1u);
  EXPECT_EQ(t.nodes[0].node, 18446744073709551615u);  // uint64, read exactly
  EXPECT_EQ(t.nodes[0].tid, -1);
  EXPECT_EQ(t.nodes[0].grid, (std::array<std::uint32_t, 3>{1, 2, 3}));
  EXPECT_EQ(t.nodes[0].shared_bytes, 7u);
  EXPECT_TRUE(t.clones.empty());  // no "clones": none
}

TEST(GraphNodeTable, NamesAreBoundedAndValidUtf8) {
  std::string long_name(600, 'x');
  auto text = [&](const std::string& kernel) {
    return R"({"version": 1, "columns": ["node", "graph", "order", "tid", "kernel",
    "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "shared_bytes", "stack"],
    "nodes": [], "kernels": [")" +
           kernel + R"("], "stacks": [[]], "ranges": [{"name": ")" + long_name + R"("}]})";
  };
  // A name cut inside a character: the cut character is replaced, what precedes it kept.
  std::string kernel = std::string(kMaxGraphKernelNameBytes - 3, 'k') + "\\u00e9";
  GraphNodeTable t = parse_graph_node_table(text("\\u00e9" + kernel));
  EXPECT_EQ(t.ranges[0].name.size(), kMaxGraphRangeNameBytes);
  EXPECT_EQ(t.ranges[0].domain, "");
  ASSERT_EQ(t.kernels.size(), 1u);
  EXPECT_EQ(t.kernels[0].rfind("\xc3\xa9kkk", 0), 0u);
  EXPECT_LE(t.kernels[0].size(), kMaxGraphKernelNameBytes + 2);
  EXPECT_EQ(t.kernels[0].find("\xc3\xa9", 2), std::string::npos);
  // A lone surrogate is no string JSON text can hold: the table is refused, not guessed at.
  EXPECT_THROW(parse_graph_node_table(text("\\ud800")), GraphNodeTableError);
}

// Each break of the format: refused whole, with where it is.
TEST(GraphNodeTable, RefusesWhatIsNotVersionOnesTable) {
  struct Case {
    std::string json, where;
  };
  std::string deep = "[";
  for (int i = 0; i < 65; ++i) deep += std::string(i ? "," : "") + "0";
  deep += "]";
  std::vector<Case> cases = {
      {"[]", "graph_nodes"},
      {R"({"version": 2})", "version 2"},
      {table_json("[[1, 3, 0, 4242, 0, 128, 1, 1, 256, 1, 1, 1024]]"), "nodes[0]: 12 values"},
      {table_json("[[1, 3, 0, 4242, 5, 128, 1, 1, 256, 1, 1, 1024, 0]]"), "kernel 5"},
      {table_json("[[1, 3, 0, 4242, 0, 128, 1, 1, 256, 1, 1, 1024, 9]]"), "stack 9"},
      {table_json("[[1, 3, 0, 4242, 0, -128, 1, 1, 256, 1, 1, 1024, 0]]"), "grid_x -128"},
      {table_json("[[1, 3, 0, 4242, 0, 4294967296, 1, 1, 256, 1, 1, 1024, 0]]"), "grid_x"},
      {table_json("[[1, 3, 0, 4242, 0, 1.5, 1, 1, 256, 1, 1, 1024, 0]]"), "wanted integers"},
      {table_json("[[1, 3, 0, 4242, 0, \"1\", 1, 1, 256, 1, 1, 1024, 0]]"), "wanted integers"},
      {table_json("[[1, 3, 0, 4242, 0, 1, 1, 1, 256, 1, 1, 1024, 0], "
                  "[1, 3, 1, 4242, 0, 1, 1, 1, 256, 1, 1, 1024, 0]]"),
       "node 1 in two rows"},
      {table_json("[[18446744073709551616, 3, 0, 4242, 0, 1, 1, 1, 256, 1, 1, 1024, 0]]"),
       "wanted integers"},
      {table_json("[[1, 3, 0, 4242, 0, 1, 1, 1, 256, 1, 1, 1024, 0]]", "[[1, 2, 3]]"), "clones[0]"},
      {R"({"version": 1, "columns": ["node"], "nodes": [], "kernels": [], "stacks": [],
           "ranges": []})",
       "columns: no \"graph\""},
      {R"({"version": 1, "columns": ["node", "graph", "order", "tid", "kernel", "grid_x",
           "grid_y", "grid_z", "block_x", "block_y", "block_z", "shared_bytes", "stack"],
           "nodes": [], "kernels": [], "stacks": [)" +
           deep + R"(], "ranges": [{"name": "r"}]})",
       "deeper than 64"},
      {R"({"version": 1, "columns": ["node", "graph", "order", "tid", "kernel", "grid_x",
           "grid_y", "grid_z", "block_x", "block_y", "block_z", "shared_bytes", "stack"],
           "nodes": [], "kernels": [], "stacks": [[3]], "ranges": []})",
       "range 3"},
      {R"({"version": 1, "columns": ["node", "graph", "order", "tid", "kernel", "grid_x",
           "grid_y", "grid_z", "block_x", "block_y", "block_z", "shared_bytes", "stack"],
           "nodes": [], "kernels": [], "stacks": [], "ranges": [{"domain": ""}]})",
       "no \"name\""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.json);
    try {
      parse_graph_node_table(c.json);
      ADD_FAILURE() << "read, not refused";
    } catch (const GraphNodeTableError& error) {
      EXPECT_NE(std::string(error.what()).find(c.where), std::string::npos) << error.what();
    }
  }
}

class TableSink final : public TraceEventSink {
 public:
  void on_event(const TraceEvent&) override {
    ++events;
    EXPECT_FALSE(table) << "an event after the table";
  }
  void on_graph_nodes(std::shared_ptr<const GraphNodeTable> t) override {
    ++calls;
    table = std::move(t);
  }
  std::shared_ptr<const GraphNodeTable> table;
  int events = 0, calls = 0;
};

std::string trace_with(const std::string& graph_nodes, bool before_events = false) {
  std::string summary =
      R"("kprof": {"format": "kprof.trace/1", "dropped": {"cupti_dropped_records": 3})" +
      (graph_nodes.empty() ? "" : ", \"graph_nodes\": " + graph_nodes) + "}";
  std::string events =
      R"("traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2, "args": )"
      R"({"graph node id": 442381631489}}, {"ph": "X", "cat": "kernel", "name": "k", "ts": 4, )"
      R"("dur": 2, "args": {}}])";
  return "{" + (before_events ? summary + ",\n" + events : events + ",\n" + summary) + "}";
}

TEST(GraphNodeTable, TheReaderHandsItOverOnceAfterEveryEvent) {
  for (bool before : {false, true}) {
    SCOPED_TRACE(before ? "summary before the events" : "summary last, as the tracer writes it");
    TableSink sink;
    TraceReadStats stats =
        read_chrome_trace_bytes("t.json", trace_with(table_json(), before), sink, {16, 16, false});
    EXPECT_EQ(sink.events, 2);
    EXPECT_EQ(sink.calls, 1);
    ASSERT_TRUE(sink.table);
    EXPECT_EQ(sink.table->nodes.size(), 2u);
    EXPECT_TRUE(stats.has_graph_nodes);
    EXPECT_EQ(stats.graph_node_rows, 2u);
    EXPECT_EQ(stats.graph_node_clones, 1u);
    EXPECT_EQ(stats.graph_nodes_ignored, "");
    ASSERT_EQ(stats.producer_drops.size(), 1u);  // the drop counts beside it still read
  }
}

TEST(GraphNodeTable, ABadTableIsIgnoredWithOneReasonAndTheRestRead) {
  for (const std::string& bad : {std::string(R"({"version": 1, "columns": 3})"),
                                 table_json("[[1, 3, 0, 4242, 7, 1, 1, 1, 1, 1, 1, 0, 0]]"),
                                 std::string(R"({"version": 1, "nodes": [[1, 2}]})")}) {
    SCOPED_TRACE(bad);
    TableSink sink;
    TraceReadStats stats = read_chrome_trace_bytes("t.json", trace_with(bad), sink);
    EXPECT_EQ(sink.events, 2);
    EXPECT_EQ(sink.calls, 0);
    EXPECT_FALSE(stats.has_graph_nodes);
    EXPECT_NE(stats.graph_nodes_ignored, "");
    EXPECT_TRUE(stats.producer_counts_drops);
    ASSERT_EQ(stats.producer_drops.size(), 1u);
  }
}

TEST(GraphNodeTable, ATraceWithoutOneReadsAsBefore) {
  TableSink sink;
  TraceReadStats stats = read_chrome_trace_bytes("t.json", trace_with(""), sink);
  EXPECT_EQ(sink.events, 2);
  EXPECT_EQ(sink.calls, 0);
  EXPECT_FALSE(stats.has_graph_nodes);
  EXPECT_EQ(stats.graph_nodes_ignored, "");
}

}  // namespace
}  // namespace kprof::importers
