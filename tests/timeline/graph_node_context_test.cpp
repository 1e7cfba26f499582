// A replayed kernel's captured context from the tracer's node table (graph_node_context.h): the
// range labels, batch and layer names, the period search, the clone walk and the three views.
// The whole attribution on a trace is checked against an independent computation by
// graph_attribution_reference.py (ctest graph_attribution_matches_reference).
#include "timeline/graph_node_context.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "timeline/op_attribution.h"

namespace kprof::timeline {
namespace {

TEST(GraphNodeContext, RangeLabels) {
  EXPECT_EQ(range_label("aten::mm, seq = 12, op_id = 5, sizes = [[8, 4096], [4096, 6144]]"),
            "aten::mm");
  EXPECT_EQ(range_label("aten::mm"), "aten::mm");
  EXPECT_EQ(range_label("{'Module': 'model.layers.3.self_attn', 'TrainableParams': {}}"),
            "model.layers.3.self_attn");
  EXPECT_EQ(range_label("{\"Module\": \"top.lm_head\"}"), "top.lm_head");
  EXPECT_EQ(range_label("decode, step 3"), "decode, step 3");  // no operator before the comma
  EXPECT_EQ(range_label("{'Module': ''}"), "{'Module': ''}");
  EXPECT_TRUE(names_operator("aten::mm"));
  EXPECT_TRUE(names_operator("vllm::unified_attention_with_output"));
  EXPECT_TRUE(names_operator("_C::rms_norm"));
  EXPECT_FALSE(names_operator("model.layers.3"));
  EXPECT_FALSE(names_operator("aten::"));
  EXPECT_FALSE(names_operator("a::b c"));
}

TEST(GraphNodeContext, BatchAndLayerNames) {
  EXPECT_EQ(range_batch("bs=8"), 8u);
  EXPECT_EQ(range_batch("batch_size=64"), 64u);
  EXPECT_EQ(range_batch("cuda_graph_bs 16"), 16u);
  EXPECT_EQ(range_batch("CUDAGraph bs 8"), 8u);
  EXPECT_EQ(range_batch("capture batch: 4"), 4u);
  EXPECT_FALSE(range_batch("abs 8"));
  EXPECT_FALSE(range_batch("layers.8"));
  EXPECT_FALSE(range_batch("bs8x"));
  EXPECT_EQ(range_layer("layer 3"), 3u);
  EXPECT_EQ(range_layer("model.layers.12.mlp"), 12u);
  EXPECT_EQ(range_layer("transformer.h.7.attn"), 7u);
  EXPECT_EQ(range_layer("blocks.2"), 2u);
  EXPECT_EQ(range_layer("layer_0"), 0u);
  EXPECT_FALSE(range_layer("LlamaDecoderLayer"));
  EXPECT_FALSE(range_layer("layer_norm"));
  EXPECT_FALSE(range_layer("attn_h8"));
}

// Inductor names each fused kernel after what it fuses and numbers it, so one layer's RMSNorm is
// not the next one's by name (torch.compile of a Llama on the H100: _10, _11, then
// …_add_embedding_…_6): a Triton kernel is compared by its kind alone, other kernels by name.
TEST(GraphNodeContext, GeneratedKernelsCompareByTheirKind) {
  EXPECT_EQ(period_key("triton_per_fused__to_copy__unsafe_view_add_mean_mul_pow_rsqrt_10"),
            "triton_per");
  EXPECT_EQ(period_key("triton_per_fused__to_copy__unsafe_view_add_embedding_mean_mul_pow_rsqrt_6"),
            "triton_per");
  EXPECT_EQ(period_key("triton_poi_fused__unsafe_view_mul_silu_7"), "triton_poi");
  EXPECT_EQ(period_key("triton_red_fused__to_copy_add_embedding_mean_mul_pow_rsqrt_0"),
            "triton_red");
  EXPECT_EQ(period_key("triton_tem_fused_mm_3"), "triton_tem");
  EXPECT_EQ(period_key("nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT"),
            "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT");
  EXPECT_EQ(period_key("triton_"), "triton_");  // no kind: the name
  EXPECT_EQ(period_key("my_triton_per_kernel"), "my_triton_per_kernel");
}

TEST(GraphNodeContext, PeriodSearch) {
  // A prologue of 2, 3 layers of [1 2 3 4], an epilogue of 1 (the layer's first kernel again,
  // as a final norm is: the repetition runs one kernel on and still makes 3 layers).
  std::optional<Period> p = find_period({7, 8, 1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4, 1});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->period, 4u);
  EXPECT_EQ(p->start, 2u);
  EXPECT_EQ(p->layers, 3u);
  // The smallest period: [1 2 1 2 …] is period 2, not 4.
  p = find_period({1, 2, 1, 2, 1, 2, 1, 2});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->period, 2u);
  EXPECT_EQ(p->layers, 4u);
  // A layer whose kernels repeat inside it: [1 1 2] ×3 is period 3.
  p = find_period({1, 1, 2, 1, 1, 2, 1, 1, 2});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->period, 3u);
  EXPECT_EQ(p->layers, 3u);
  // A first layer differing in one kernel (vLLM's plain norm where the others fuse the add),
  // then a final norm: 3 layers of 4. The repetition is first seen one kernel in (from the 2),
  // where the last layer would end on the final norm; the start before it fits as many layers
  // with as few differences and leaves the final norm after them: the first layer opens with
  // its plain norm, as vLLM's does.
  p = find_period({9, 5, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4, 8});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->period, 4u);
  EXPECT_EQ(p->layers, 3u);
  EXPECT_EQ(p->start, 1u);
  // The same at the end: a last layer whose last kernel differs.
  p = find_period({9, 1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 7, 8});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->layers, 3u);
  EXPECT_EQ(p->start, 1u);
  // The phase. The repetition is first seen from index 3 and the window after it differs in one
  // kernel, the graph's last (the shape of torch.compile's Llama graph on the H100, whose LM
  // head's GEMM ends it): starting at 3, the last layer would take that kernel. Starting at 2
  // fits as many layers, as few differences (the first layer's first kernel) and leaves the
  // last kernel after the layers.
  p = find_period({5, 6, 7, 1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 9});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->period, 4u);
  EXPECT_EQ(p->layers, 3u);
  EXPECT_EQ(p->start, 2u);
  // Nothing repeating covers half: none.
  EXPECT_FALSE(find_period({1, 2, 3, 4, 5, 6, 7, 1, 2}));
  EXPECT_FALSE(find_period({1, 2}));
  EXPECT_FALSE(find_period({}));
  EXPECT_FALSE(find_period({5}));
  // One repetition of a 3-kernel layer is not a period; two are.
  EXPECT_FALSE(find_period({1, 2, 3, 9, 9, 8}));
  p = find_period({1, 2, 3, 1, 2, 3});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->period, 3u);
}

// A table by hand: graph 1 captured under "bs=4" with module and operator ranges (2 layers),
// graph 2 with no range (2 layers of [a b], a prologue kernel), and clones.
std::shared_ptr<importers::GraphNodeTable> table() {
  auto t = std::make_shared<importers::GraphNodeTable>();
  t->kernels = {"k_norm", "nvjet_gemm", "[memcpy]", "k_embed"};
  t->ranges = {{"", "bs=4"},
               {"", "{'Module': 'model'}"},
               {"", "{'Module': 'model.layers.0'}"},
               {"", "{'Module': 'model.layers.0.mlp'}"},
               {"", "aten::mm, seq = 1, op_id = 2"},
               {"", "{'Module': 'model.layers.1'}"},
               {"", "{'Module': 'model.layers.1.mlp'}"}};
  t->stacks = {{}, {0, 1, 2}, {0, 1, 2, 3, 4}, {0, 1, 5}, {0, 1, 5, 6, 4}, {0}};
  auto row = [](std::uint64_t node, std::uint64_t graph, std::uint64_t order, std::uint32_t kernel,
                std::uint32_t stack) {
    importers::GraphNode n;
    n.node = node;
    n.graph = graph;
    n.order = order;
    n.kernel = kernel;
    n.stack = stack;
    return n;
  };
  t->nodes = {
      row(10, 1, 1, 0, 1), row(11, 1, 2, 1, 2), row(12, 1, 3, 0, 3),
      row(13, 1, 4, 1, 4), row(14, 1, 0, 2, 5),  // the input copy, under the batch range alone
      row(20, 2, 0, 3, 0), row(21, 2, 1, 0, 0), row(22, 2, 2, 1, 0),
      row(23, 2, 3, 0, 0), row(24, 2, 4, 1, 0)};
  t->clones = {{110, 10},  {111, 11},  {211, 111},  // 211: a clone of a clone of 11
               {300, 301}, {301, 300},              // a cycle
               {400, 999}};                         // a clone whose original was not kept
  return t;
}

TEST(GraphNodeContext, NodesAreFoundThroughTheirClones) {
  GraphNodeContexts contexts(table(), nullptr);
  EXPECT_EQ(contexts.context(11).placement, NodePlacement::kByRanges);
  EXPECT_EQ(contexts.context(211).placement, NodePlacement::kByRanges);
  EXPECT_EQ(contexts.name(contexts.context(211).op), "aten::mm");
  EXPECT_EQ(contexts.context(5).placement, NodePlacement::kNotInTable);
  EXPECT_EQ(contexts.context(300).placement, NodePlacement::kNotPlaced);
  EXPECT_EQ(contexts.context(400).placement, NodePlacement::kNotPlaced);
  NodeContext lost = contexts.context(5);
  EXPECT_FALSE(lost.graph);
  EXPECT_EQ(contexts.name(lost.op), kNoOperator);
  EXPECT_EQ(contexts.name(lost.module), kNoModule);
  EXPECT_EQ(contexts.name(lost.range), kNoRange);
}

TEST(GraphNodeContext, ChainsLongerThanTheBoundAreNotPlaced) {
  auto t = table();
  // 1000 -> 1001 -> … -> 1000 + n -> 10 (a row).
  auto chain = [&](std::uint64_t n) {
    for (std::uint64_t i = 0; i < n; ++i) t->clones.push_back({1000 * n + i, 1000 * n + i + 1});
    t->clones.push_back({1000 * n + n, 10});
    return 1000 * n;
  };
  std::uint64_t within = chain(importers::kMaxCloneChain - 1);
  std::uint64_t past = chain(importers::kMaxCloneChain + 1);
  GraphNodeContexts contexts(t, nullptr);
  EXPECT_EQ(contexts.context(within).placement, NodePlacement::kByRanges);
  EXPECT_EQ(contexts.context(past).placement, NodePlacement::kNotPlaced);
}

TEST(GraphNodeContext, RangesNameTheOperatorModuleAndStack) {
  GraphNodeContexts contexts(table(), nullptr);
  NodeContext gemm = contexts.context(13);
  EXPECT_EQ(contexts.name(gemm.op), "aten::mm");
  EXPECT_EQ(contexts.name(gemm.module), "model.layers.1.mlp");
  EXPECT_EQ(contexts.name(gemm.range),
            "bs=4 / model / model.layers.1 / model.layers.1.mlp / aten::mm");
  NodeContext norm = contexts.context(12);
  EXPECT_EQ(contexts.name(norm.op), "model.layers.1");  // no operator range: the innermost
  EXPECT_EQ(norm.op_from, NodePlacement::kByRanges);
  // The copy under the batch range alone: nothing names it.
  NodeContext copy = contexts.context(14);
  EXPECT_EQ(copy.placement, NodePlacement::kNoContext);
  EXPECT_EQ(contexts.name(copy.op), kNoOperator);
  EXPECT_EQ(contexts.name(copy.range), kNoRange);
  ASSERT_TRUE(gemm.graph);
  const CapturedGraph& g = contexts.graphs()[*gemm.graph];
  EXPECT_EQ(g.bucket, "batch 4");
  EXPECT_EQ(g.batch, 4u);
  EXPECT_EQ(g.nodes, 5u);
  EXPECT_EQ(g.layers_from, GraphLayers::kRanges);
  EXPECT_EQ(g.layers, 2u);
}

TEST(GraphNodeContext, LayersAreInferredWhereNoRangeNamesThem) {
  GraphNodeContexts contexts(table(), nullptr);
  NodeContext second_gemm = contexts.context(24);
  ASSERT_TRUE(second_gemm.graph);
  const CapturedGraph& g = contexts.graphs()[*second_gemm.graph];
  EXPECT_EQ(g.bucket, "graph 2 (5 nodes)");
  EXPECT_EQ(g.layers_from, GraphLayers::kStructure);
  EXPECT_EQ(g.layers, 2u);
  EXPECT_EQ(g.period, 2u);
  EXPECT_EQ(g.prologue, 1u);
  EXPECT_EQ(g.epilogue, 0u);
  EXPECT_EQ(second_gemm.placement, NodePlacement::kInferred);
  EXPECT_EQ(contexts.name(second_gemm.op), "part 2/2 (kernel)");  // no stage table: "kernel"
  EXPECT_EQ(contexts.name(second_gemm.module), "layer 1");
  EXPECT_EQ(contexts.name(second_gemm.range), "layer 1 / part 2/2 (kernel)");
  NodeContext embed = contexts.context(20);
  EXPECT_EQ(contexts.name(embed.op), "prologue (kernel)");
  EXPECT_EQ(contexts.name(embed.module), "prologue");
  EXPECT_EQ(contexts.name(embed.range), "prologue (kernel)");
}

TEST(GraphNodeContext, PartsAreNamedByTheStageTable) {
  analysis::StageTable stages = analysis::load_stage_table();
  GraphNodeContexts contexts(table(), &stages);
  EXPECT_EQ(contexts.name(contexts.context(24).op), "part 2/2 (gemm)");  // nvjet_gemm
}

// The builder over a few events: a graph launch of two replayed kernels (one a clone of a clone
// of a captured node under ranges, one no node of the table) and an eager kernel.
TEST(GraphNodeContext, TheBuilderAttributesReplaysByTheirNodesAndEagerWorkAsBefore) {
  auto events = [](OpAttributionBuilder& builder) {
    importers::TraceEvent launch;
    launch.category = "cuda_runtime";
    launch.name = "cudaGraphLaunch";
    launch.pid = launch.tid = 7;
    launch.process = 7;
    launch.timestamp_us = 10;
    launch.duration_us = 2;
    launch.correlation = 1;
    builder.on_event(launch);
    importers::TraceEvent eager = launch;
    eager.name = "cudaLaunchKernel";
    eager.correlation = 2;
    eager.timestamp_us = 50;
    builder.on_event(eager);
    importers::TraceEvent kernel;
    kernel.category = "kernel";
    kernel.name = "nvjet_gemm";
    kernel.device = 0;
    kernel.correlation = 1;
    kernel.timestamp_us = 20;
    kernel.duration_us = 5;
    kernel.graph_node_id = 211;
    builder.on_event(kernel);
    kernel.timestamp_us = 30;
    kernel.duration_us = 3;
    kernel.graph_node_id = 5;
    builder.on_event(kernel);
    kernel.correlation = 2;
    kernel.timestamp_us = 60;
    kernel.duration_us = 1;
    kernel.graph_node_id.reset();
    builder.on_event(kernel);
  };
  OpAttributionBuilder with_table(AttributeBy::kOp);
  events(with_table);
  with_table.on_graph_nodes(table());
  OpAttribution ops = with_table.finish();
  ASSERT_TRUE(ops.graphs);
  EXPECT_EQ(ops.graphs->replayed.kernels, 2u);
  EXPECT_DOUBLE_EQ(ops.graphs->by_ranges.total_us, 5);
  EXPECT_DOUBLE_EQ(ops.graphs->not_in_table.total_us, 3);
  ASSERT_EQ(ops.ops.size(), 2u);
  EXPECT_EQ(ops.ops[0].name, "aten::mm");
  EXPECT_DOUBLE_EQ(ops.ops[0].total_us, 5);
  EXPECT_EQ(ops.ops[1].name, kNoOperator);  // the unplaced replay and the eager kernel
  EXPECT_EQ(ops.ops[1].kernels, 2u);
  EXPECT_DOUBLE_EQ(ops.ops[1].total_us, 4);
  // No table: exactly as before, everything in the graph launch's (and the eager launch's)
  // bucket. An empty table (the tracer saw no graph made): the same buckets, the replays said to
  // be not in the table.
  for (bool empty_table : {false, true}) {
    OpAttributionBuilder builder(AttributeBy::kOp);
    events(builder);
    if (empty_table) builder.on_graph_nodes(std::make_shared<importers::GraphNodeTable>());
    OpAttribution plain = builder.finish();
    ASSERT_EQ(plain.ops.size(), 1u);
    EXPECT_EQ(plain.ops[0].name, kNoOperator);
    EXPECT_EQ(plain.ops[0].kernels, 3u);
    ASSERT_EQ(plain.graphs.has_value(), empty_table);
    if (empty_table) {
      EXPECT_EQ(plain.graphs->not_in_table.kernels, 2u);
    }
  }
  // A table but no record naming a graph node (eager work): nothing said of graphs.
  OpAttributionBuilder eager_only(AttributeBy::kOp);
  importers::TraceEvent kernel;
  kernel.category = "kernel";
  kernel.name = "k";
  kernel.duration_us = 1;
  eager_only.on_event(kernel);
  eager_only.on_graph_nodes(table());
  EXPECT_FALSE(eager_only.finish().graphs);
}

}  // namespace
}  // namespace kprof::timeline
