// The capture-time node table (tracer/graph_node_table), pure: per-thread NVTX stacks, interning,
// clones, bounds and the JSON every window's trace carries. The injection that feeds it from
// CUPTI's callbacks runs in tracer_live_test against fake_cupti.
#include "tracer/graph_node_table.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tracer/allocation_counter.h"

namespace kprof::tracer {
namespace {

CreatedNode kernel(std::uint64_t node, std::uint32_t graph, std::uint32_t tid,
                   std::string_view name) {
  CreatedNode n;
  n.node = node;
  n.graph = graph;
  n.tid = tid;
  n.kind = GraphNodeKind::kKernel;
  n.kernel = name;
  n.grid = {{128, 1, 1}};
  n.block = {{256, 1, 1}};
  return n;
}

CreatedNode other(std::uint64_t node, std::uint32_t graph, GraphNodeKind kind) {
  CreatedNode n;
  n.node = node;
  n.graph = graph;
  n.tid = 7;
  n.kind = kind;
  return n;
}

nlohmann::json table_json(const GraphNodeTable& table) {
  return nlohmann::json::parse(graph_nodes_json(table.snapshot()));
}

// The ranges of a row's stack, "domain:name" (or "name" in the default domain), outermost first.
std::vector<std::string> range_names(const nlohmann::json& j, const nlohmann::json& row) {
  std::vector<std::string> out;
  for (const auto& id : j["stacks"][row[12].get<std::size_t>()]) {
    const auto& range = j["ranges"][id.get<std::size_t>()];
    std::string domain = range["domain"];
    out.push_back(domain.empty() ? range["name"].get<std::string>()
                                 : domain + ":" + range["name"].get<std::string>());
  }
  return out;
}

// The example docs/tracer.md shows, byte for byte: two threads, a registered domain, a memcpy
// and a memset node, a host node (counted, not tabled), an unnamed kernel, and a clone made at
// instantiation (its own row dropped, the pair kept).
TEST(GraphNodeTable, SmallExampleIsWrittenExactly) {
  GraphNodeTable table;
  int vllm = 0;
  table.domain_created(&vllm, "vllm");
  RangeStack capturing, other_thread;
  capturing.push_text(nullptr, "bs=8");
  capturing.push_text(&vllm, "layer 0");
  table.node_created(kernel(11, 3, 4242, "_Z6kernelPf"), &capturing);
  CreatedNode copy = other(12, 3, GraphNodeKind::kMemcpy);
  copy.tid = 4242;
  table.node_created(copy, &capturing);
  capturing.pop(&vllm);
  CreatedNode unnamed = kernel(13, 3, 4242, "");
  unnamed.grid = {{1, 1, 1}};
  unnamed.block = {{32, 1, 1}};
  unnamed.shared_bytes = 1024;
  table.node_created(unnamed, &capturing);
  CreatedNode set = other(21, 4, GraphNodeKind::kMemset);
  set.tid = 4243;
  table.node_created(set, &other_thread);
  table.node_created(other(22, 4, GraphNodeKind::kOther), &other_thread);
  table.node_created(kernel(57, 9, 4243, "_Z6kernelPf"), &other_thread);  // instantiation
  table.node_cloned(57, 11, GraphNodeKind::kKernel);

  EXPECT_EQ(graph_nodes_json(table.snapshot()),
            "{\"version\": 1, \"columns\": [\"node\", \"graph\", \"order\", \"tid\", \"kernel\", "
            "\"grid_x\", \"grid_y\", \"grid_z\", \"block_x\", \"block_y\", \"block_z\", "
            "\"shared_bytes\", \"stack\"],\n"
            "\"nodes\": [\n"
            "[11, 3, 0, 4242, 0, 128, 1, 1, 256, 1, 1, 0, 1],\n"
            "[12, 3, 1, 4242, 1, 0, 0, 0, 0, 0, 0, 0, 1],\n"
            "[13, 3, 2, 4242, 2, 1, 1, 1, 32, 1, 1, 1024, 2],\n"
            "[21, 4, 0, 4243, 3, 0, 0, 0, 0, 0, 0, 0, 0]],\n"
            "\"kernels\": [\"_Z6kernelPf\", \"[memcpy]\", \"\", \"[memset]\"],\n"
            "\"stacks\": [[], [0, 1], [0]],\n"
            "\"ranges\": [\n"
            "{\"domain\": \"\", \"name\": \"bs=8\"},\n"
            "{\"domain\": \"vllm\", \"name\": \"layer 0\"}],\n"
            "\"clones\": [[57, 11]],\n"
            "\"counts\": {\"kernel_nodes\": 2, \"copy_nodes\": 2, \"other_nodes\": 1, "
            "\"not_kept\": 0, \"unnamed\": 1, \"ranges_cut\": 0, \"clones_not_kept\": 0}}");
}

TEST(GraphNodeTable, AnEmptyTableStillSaysSo) {
  GraphNodeTable table;
  auto j = table_json(table);
  EXPECT_EQ(j["version"], 1);
  EXPECT_TRUE(j["nodes"].empty());
  EXPECT_TRUE(j["kernels"].empty());
  EXPECT_EQ(j["stacks"], nlohmann::json::parse("[[]]"));  // stacks[0] is always []
  EXPECT_TRUE(j["ranges"].empty());
  EXPECT_TRUE(j["clones"].empty());
  for (const auto& [key, value] : j["counts"].items()) EXPECT_EQ(value, 0) << key;
}

TEST(GraphNodeTable, OrderCountsPerGraphInCreationOrder) {
  GraphNodeTable table;
  RangeStack none;
  // Two graphs captured at once on different threads, interleaved.
  table.node_created(kernel(1, 10, 1, "a"), &none);
  table.node_created(kernel(2, 20, 2, "b"), &none);
  table.node_created(other(3, 10, GraphNodeKind::kMemset), &none);
  table.node_created(other(4, 10, GraphNodeKind::kOther), &none);  // not a row, no order
  table.node_created(kernel(5, 10, 1, "a"), &none);
  table.node_created(kernel(6, 20, 2, "a"), nullptr);  // a thread that never pushed
  auto j = table_json(table);
  ASSERT_EQ(j["nodes"].size(), 5u);
  std::vector<std::vector<std::uint64_t>> node_graph_order;
  for (const auto& row : j["nodes"]) node_graph_order.push_back({row[0], row[1], row[2]});
  EXPECT_EQ(node_graph_order, (std::vector<std::vector<std::uint64_t>>{
                                  {1, 10, 0}, {2, 20, 0}, {3, 10, 1}, {5, 10, 2}, {6, 20, 1}}));
  EXPECT_EQ(j["kernels"], nlohmann::json::parse(R"(["a", "b", "[memset]"])"));
  EXPECT_EQ(j["nodes"][3][4], 0);  // "a" interned once
  EXPECT_EQ(j["counts"]["kernel_nodes"], 4);
  EXPECT_EQ(j["counts"]["copy_nodes"], 1);
  EXPECT_EQ(j["counts"]["other_nodes"], 1);
}

TEST(GraphNodeTable, EachNodeGetsTheStackOfItsOwnThreadAtCreation) {
  GraphNodeTable table;
  std::vector<std::thread> threads;
  // Two capturing threads with different ranges open, at once.
  for (std::uint32_t t : {1u, 2u}) {
    threads.emplace_back([&table, t] {
      RangeStack stack;
      std::string model = "model " + std::to_string(t);
      stack.push_text(nullptr, model.c_str());
      for (std::uint32_t layer = 0; layer < 3; ++layer) {
        std::string name = "layer " + std::to_string(layer);
        stack.push_text(nullptr, name.c_str());
        stack.push_text(nullptr, "self_attn");
        table.node_created(kernel(t * 100 + layer * 2, t, t, "attn"), &stack);
        stack.pop(nullptr);
        table.node_created(kernel(t * 100 + layer * 2 + 1, t, t, "mlp"), &stack);
        stack.pop(nullptr);
      }
      table.node_created(kernel(t * 100 + 99, t, t, "head"), &stack);
    });
  }
  for (auto& thread : threads) thread.join();
  auto j = table_json(table);
  ASSERT_EQ(j["nodes"].size(), 14u);
  for (const auto& row : j["nodes"]) {
    std::uint64_t node = row[0], tid = row[3];
    std::vector<std::string> expected = {"model " + std::to_string(tid)};
    if (node % 100 != 99) {
      expected.push_back("layer " + std::to_string(node % 100 / 2));
      if (node % 2 == 0) expected.push_back("self_attn");
    }
    EXPECT_EQ(range_names(j, row), expected) << node;
  }
  // Interned: 2 models + 3 layers + self_attn = 6 ranges; per thread 3 × 2 + 1 = 7 stacks, + [].
  EXPECT_EQ(j["ranges"].size(), 6u);
  EXPECT_EQ(j["stacks"].size(), 15u);
}

TEST(GraphNodeTable, DomainsAndRegisteredStringsAreNamedAsSeen) {
  GraphNodeTable table;
  int sglang = 0, unknown_domain = 0, layer_name = 0, never_registered = 0;
  table.domain_created(&sglang, "sglang");
  table.string_registered(&layer_name, "decoder layer");
  RangeStack stack;
  stack.push_registered(&sglang, &layer_name);
  stack.push_registered(nullptr, &never_registered);
  stack.push_text(&unknown_domain, "mlp");
  stack.push_wide(nullptr, L"w\u00e9de");
  table.node_created(kernel(1, 1, 1, "k"), &stack);
  auto j = table_json(table);
  EXPECT_EQ(j["ranges"], nlohmann::json::parse(R"json([
      {"domain": "sglang", "name": "decoder layer"},
      {"domain": "", "name": "(registered string)"},
      {"domain": "(unknown domain)", "name": "mlp"},
      {"domain": "", "name": "w?de"}])json"));
  EXPECT_EQ(j["stacks"][1], nlohmann::json::parse("[0, 1, 2, 3]"));
}

TEST(GraphNodeTable, APopClosesTheInnermostRangeOfItsOwnDomain) {
  GraphNodeTable table;
  int a = 0, b = 0;
  table.domain_created(&a, "a");
  table.domain_created(&b, "b");
  RangeStack stack;
  stack.push_text(&a, "a1");
  stack.push_text(&b, "b1");
  stack.push_text(&a, "a2");
  stack.pop(&b);  // b1, under a2
  stack.pop(&b);  // none open in b: ignored
  stack.push_text(&b, "b2");
  table.node_created(kernel(1, 1, 1, "k"), &stack);
  stack.pop(&a);  // a2, under b2
  table.node_created(kernel(2, 1, 1, "k"), &stack);
  auto j = table_json(table);
  EXPECT_EQ(range_names(j, j["nodes"][0]), (std::vector<std::string>{"a:a1", "a:a2", "b:b2"}));
  EXPECT_EQ(range_names(j, j["nodes"][1]), (std::vector<std::string>{"a:a1", "b:b2"}));
  stack.pop(nullptr);  // the default domain has none open: ignored
  EXPECT_EQ(stack.frames().size(), 2u);
}

TEST(GraphNodeTable, AClonesRowIsDroppedAndThePairKept) {
  GraphNodeTable table;
  RangeStack capture, instantiate;
  capture.push_text(nullptr, "layer 0");
  table.node_created(kernel(11, 1, 1, "gemm"), &capture);
  table.node_created(other(12, 1, GraphNodeKind::kMemcpy), &capture);
  table.node_created(other(13, 1, GraphNodeKind::kOther), &capture);
  instantiate.push_text(nullptr, "instantiate");
  // Instantiation: each clone is made (on another thread, with other ranges), then cloned.
  table.node_created(kernel(21, 2, 2, "gemm"), &instantiate);
  table.node_cloned(21, 11, GraphNodeKind::kKernel);
  table.node_created(other(22, 2, GraphNodeKind::kMemcpy), &instantiate);
  table.node_created(kernel(99, 5, 1, "other capture"), &capture);  // another thread, meanwhile
  table.node_cloned(22, 12, GraphNodeKind::kMemcpy);
  table.node_created(other(23, 2, GraphNodeKind::kOther), &instantiate);
  table.node_cloned(23, 13, GraphNodeKind::kOther);  // no kernel record names it: no pair
  // A clone of a clone (cudaGraphClone of an instantiated graph's source, say), and an exec
  // update reporting a pair for a node never seen made.
  table.node_created(kernel(31, 3, 2, "gemm"), &instantiate);
  table.node_cloned(31, 21, GraphNodeKind::kKernel);
  table.node_cloned(41, 11, GraphNodeKind::kKernel);
  auto j = table_json(table);
  std::vector<std::uint64_t> nodes;
  for (const auto& row : j["nodes"]) nodes.push_back(row[0]);
  EXPECT_EQ(nodes, (std::vector<std::uint64_t>{11, 12, 99}));
  EXPECT_EQ(j["clones"], nlohmann::json::parse("[[21, 11], [22, 12], [31, 21], [41, 11]]"));
  EXPECT_EQ(j["counts"]["kernel_nodes"], 2);
  EXPECT_EQ(j["counts"]["copy_nodes"], 1);
  EXPECT_EQ(j["counts"]["other_nodes"], 1);  // the host node; its clone is not counted again
}

TEST(GraphNodeTable, ClonesReportedLongAfterTheyWereMadeAreStillLeftOut) {
  // Were CUPTI to report a whole graph's clones made first and cloned later, more than the
  // table remembers: their rows stay until serialised, and are left out there.
  GraphNodeTable table;
  RangeStack none;
  std::size_t n = GraphNodeTable::kRecent + 10;
  for (std::uint64_t i = 0; i < n; ++i) table.node_created(kernel(1000 + i, 1, 1, "k"), &none);
  for (std::uint64_t i = 0; i < n; ++i) table.node_created(kernel(2000 + i, 2, 1, "k"), &none);
  for (std::uint64_t i = 0; i < n; ++i)
    table.node_cloned(2000 + i, 1000 + i, GraphNodeKind::kKernel);
  EXPECT_EQ(table.snapshot().rows.size(), n + 10);  // the last kRecent were dropped at once
  auto j = table_json(table);
  ASSERT_EQ(j["nodes"].size(), n);
  for (const auto& row : j["nodes"]) EXPECT_LT(row[0].get<std::uint64_t>(), 2000u);
  EXPECT_EQ(j["counts"]["kernel_nodes"], n);
  EXPECT_EQ(j["clones"].size(), n);
}

TEST(GraphNodeTable, NodesAndClonesOverTheBoundAreCounted) {
  GraphNodeLimits limits;
  limits.max_nodes = 3;
  limits.max_clones = 2;
  GraphNodeTable table(limits);
  RangeStack none;
  for (std::uint64_t node = 1; node <= 5; ++node)
    table.node_created(kernel(node, 1, 1, "k"), &none);
  table.node_created(other(6, 1, GraphNodeKind::kOther), &none);  // counted as other, not lost
  // A clone made while the table is full: not kept, and then known to be a clone: uncounted.
  table.node_created(kernel(7, 2, 1, "k"), &none);
  table.node_cloned(7, 1, GraphNodeKind::kKernel);
  table.node_cloned(8, 2, GraphNodeKind::kKernel);
  table.node_cloned(9, 3, GraphNodeKind::kKernel);
  table.node_unread(GraphNodeKind::kMemcpy);
  table.clone_unread(GraphNodeKind::kMemcpy);
  table.clone_unread(GraphNodeKind::kOther);
  auto j = table_json(table);
  EXPECT_EQ(j["nodes"].size(), 3u);
  EXPECT_EQ(j["clones"], nlohmann::json::parse("[[7, 1], [8, 2]]"));
  EXPECT_EQ(j["counts"]["kernel_nodes"], 3);
  EXPECT_EQ(j["counts"]["not_kept"], 3);  // nodes 4 and 5, and the unread one
  EXPECT_EQ(j["counts"]["other_nodes"], 1);
  EXPECT_EQ(j["counts"]["clones_not_kept"], 2);  // [9, 3] and the unread clone
}

TEST(GraphNodeTable, NamesAreCutAtTheBoundOnAUtf8Boundary) {
  GraphNodeLimits limits;
  limits.max_range_bytes = 8;
  GraphNodeTable table(limits);
  RangeStack stack(limits.max_depth, limits.max_range_bytes);
  stack.push_text(nullptr, "1234567\xc3\xa9xyz");  // é straddles byte 8
  stack.push_text(nullptr, "12345678");            // exactly at the bound: whole
  stack.push_text(nullptr, "123456789");
  stack.push_wide(nullptr, L"abcdefghij");
  table.node_created(kernel(1, 1, 1, "k"), &stack);
  auto j = table_json(table);
  std::vector<std::string> names;
  for (const auto& range : j["ranges"]) names.push_back(range["name"]);
  // "123456789" cut is the range "12345678" already interned whole.
  EXPECT_EQ(names, (std::vector<std::string>{"1234567", "12345678", "abcdefgh"}));
  EXPECT_EQ(j["stacks"][1], nlohmann::json::parse("[0, 1, 1, 2]"));
  EXPECT_EQ(j["counts"]["ranges_cut"], 2);
}

TEST(GraphNodeTable, StacksDeeperThanTheBoundKeepTheOutermostAndAreCounted) {
  GraphNodeLimits limits;
  limits.max_depth = 2;
  GraphNodeTable table(limits);
  RangeStack stack(limits.max_depth, limits.max_range_bytes);
  for (const char* name : {"a", "b", "c", "d"}) stack.push_text(nullptr, name);
  EXPECT_EQ(stack.frames().size(), 2u);
  EXPECT_EQ(stack.overflow(), 2u);
  table.node_created(kernel(1, 1, 1, "k"), &stack);
  stack.pop(nullptr);  // d
  stack.pop(nullptr);  // c
  table.node_created(kernel(2, 1, 1, "k"), &stack);
  stack.pop(nullptr);  // b
  table.node_created(kernel(3, 1, 1, "k"), &stack);
  auto j = table_json(table);
  EXPECT_EQ(range_names(j, j["nodes"][0]), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(range_names(j, j["nodes"][1]), (std::vector<std::string>{"a", "b"}));
  EXPECT_NE(j["nodes"][0][12], j["nodes"][1][12]);  // a stack that was cut is its own entry
  EXPECT_EQ(range_names(j, j["nodes"][2]), (std::vector<std::string>{"a"}));
  EXPECT_EQ(j["counts"]["ranges_cut"], 1);
}

TEST(GraphNodeTable, FullRangeOrStackTablesGiveTheEmptyStackAndAreCounted) {
  GraphNodeLimits limits;
  limits.max_ranges = 2;
  limits.max_stacks = 3;  // [] and two more
  GraphNodeTable table(limits);
  RangeStack stack;
  stack.push_text(nullptr, "a");
  table.node_created(kernel(1, 1, 1, "k"), &stack);  // [a]
  stack.push_text(nullptr, "b");
  table.node_created(kernel(2, 1, 1, "k"), &stack);  // [a, b]
  stack.push_text(nullptr, "c");
  table.node_created(kernel(3, 1, 1, "k"), &stack);  // range table full
  table.node_created(kernel(4, 1, 1, "k"), &stack);  // the same stack: counted once
  stack.pop(nullptr);
  stack.pop(nullptr);
  stack.push_text(nullptr, "b");
  stack.push_text(nullptr, "a");
  table.node_created(kernel(5, 1, 1, "k"), &stack);  // [a, b, a]: stack table full
  auto j = table_json(table);
  std::vector<std::uint64_t> stacks;
  for (const auto& row : j["nodes"]) stacks.push_back(row[12]);
  EXPECT_EQ(stacks, (std::vector<std::uint64_t>{1, 2, 0, 0, 0}));
  EXPECT_EQ(j["counts"]["ranges_cut"], 2);
  EXPECT_EQ(j["ranges"].size(), 2u);
  EXPECT_EQ(j["stacks"].size(), 3u);
}

TEST(GraphNodeTable, RegisteredNamesAreBoundedInNumber) {
  GraphNodeLimits limits;
  limits.max_names = 1;
  GraphNodeTable table(limits);
  int first = 0, second = 0;
  table.domain_created(&first, "first");
  table.domain_created(&second, "second");
  table.domain_created(&first, "first again");  // a known handle is renamed, not refused
  RangeStack stack;
  stack.push_text(&first, "x");
  stack.push_text(&second, "y");
  table.node_created(kernel(1, 1, 1, "k"), &stack);
  auto j = table_json(table);
  EXPECT_EQ(j["ranges"][0]["domain"], "first again");
  EXPECT_EQ(j["ranges"][1]["domain"], "(unknown domain)");
}

TEST(GraphNodeTable, SnapshotsTakenWhileNodesAreMadeAreConsistent) {
  GraphNodeTable table;
  constexpr std::uint64_t kPerThread = 3000, kBatch = 500;
  std::atomic<std::size_t> snapshots{0};
  std::atomic<bool> reader_gone{false};
  // Three threads make nodes (and clones) under their own ranges; every kBatch nodes each waits
  // for a snapshot to be taken, so snapshots see the table part-filled, while it grows.
  std::vector<std::thread> threads;
  for (std::uint32_t t = 1; t <= 3; ++t) {
    threads.emplace_back([&, t] {
      RangeStack stack;
      for (std::uint64_t i = 0; i < kPerThread; ++i) {
        std::string name = "r" + std::to_string(i % 7);
        stack.push_text(nullptr, name.c_str());
        std::string kernel_name = "k" + std::to_string(i % 11);
        table.node_created(kernel(t * 1'000'000 + i, t, t, kernel_name), &stack);
        if (i % 5 == 0) {
          table.node_created(kernel(t * 1'000'000 + 500'000 + i, 100 + t, t, kernel_name), &stack);
          table.node_cloned(t * 1'000'000 + 500'000 + i, t * 1'000'000 + i, GraphNodeKind::kKernel);
        }
        stack.pop(nullptr);
        if (i % kBatch == kBatch - 1) {
          std::size_t seen = snapshots;
          while (snapshots == seen && !reader_gone) std::this_thread::yield();
        }
      }
    });
  }
  std::atomic<bool> done{false};
  std::size_t partial = 0;
  std::thread reader([&] {
    struct Gone {  // however the reader ends (a failed ASSERT returns): no writer waits on it
      std::atomic<bool>& flag;
      ~Gone() { flag = true; }
    } gone{reader_gone};
    while (!done) {
      auto j = nlohmann::json::parse(graph_nodes_json(table.snapshot()));
      std::map<std::uint64_t, std::uint64_t> next_order;
      for (const auto& row : j["nodes"]) {
        ASSERT_LT(row[4].get<std::size_t>(), j["kernels"].size());
        ASSERT_LT(row[12].get<std::size_t>(), j["stacks"].size());
        for (const auto& id : j["stacks"][row[12].get<std::size_t>()]) {
          ASSERT_LT(id.get<std::size_t>(), j["ranges"].size());
        }
        std::uint64_t graph = row[1], order = row[2];
        // Captured graphs: every row, in creation order. (A clone's row may be seen between its
        // making and its cloning, its predecessors already dropped: graphs 101-103.)
        if (graph <= 3) {
          ASSERT_EQ(order, next_order[graph]++);
        }
      }
      if (!j["nodes"].empty() && j["nodes"].size() < 3 * kPerThread) ++partial;
      ++snapshots;
    }
  });
  for (auto& thread : threads) thread.join();
  done = true;
  reader.join();
  EXPECT_GE(partial, kPerThread / kBatch - 1);
  auto j = table_json(table);
  EXPECT_EQ(j["nodes"].size(), 3 * kPerThread);
  EXPECT_EQ(j["clones"].size(), 3 * kPerThread / 5);
  for (const auto& row : j["nodes"]) {
    std::uint64_t i = row[0].get<std::uint64_t>() % 1'000'000;
    EXPECT_EQ(range_names(j, row), (std::vector<std::string>{"r" + std::to_string(i % 7)}));
  }
}

TEST(RangeStack, PushesAndPopsAllocateNothingAfterTheFirstPush) {
  if (!testing::counts_allocations()) {
    GTEST_SKIP() << "this sanitizer provides operator new: allocations are not counted here";
  }
  RangeStack stack;
  int domain = 0;
  stack.push_text(nullptr, "first");  // reserves its storage
  stack.pop(nullptr);
  std::string longest(300, 'x');
  std::size_t before = testing::thread_allocations();
  for (int round = 0; round < 1000; ++round) {
    for (int depth = 0; depth < 64; ++depth) {
      if (depth % 3 == 0) {
        stack.push_text(&domain, longest.c_str());  // cut to 256 bytes
      } else if (depth % 3 == 1) {
        stack.push_wide(nullptr, L"wide");
      } else {
        stack.push_registered(nullptr, &domain);
      }
    }
    stack.pop(nullptr);  // the innermost is &domain's: these two close ranges under it
    stack.pop(nullptr);
    for (int more = 0; more < 10; ++more) stack.push_text(nullptr, longest.c_str());  // past 64
    ASSERT_EQ(stack.overflow(), 8u);
    while (!stack.frames().empty() || stack.overflow() > 0)
      stack.pop(stack.overflow() > 0 ? nullptr : stack.frames().back().domain);
  }
  EXPECT_EQ(testing::thread_allocations() - before, 0u);
}

}  // namespace
}  // namespace kprof::tracer
