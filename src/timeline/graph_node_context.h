// What a graph-replayed kernel was at capture, from kprof's tracer's node table
// (importers/common/graph_node_table.h): its record's "graph node id" is followed through the
// table's clones to the node captured, whose NVTX range stack names its operator, module path
// and whole range context; the node's graph is its batch bucket; where no range names a layer,
// the graph's own kernel sequence is searched for a repeating period, numbered as layers.
//
// Node ids are unique within a process and the table is one process's: a replayed kernel is
// keyed by its node id alone, never by its record's "graph id" (it may be the executable graph's:
// a node's graph is the table's). Pure: no I/O, nothing thrown for data.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/stages.h"
#include "importers/common/graph_node_table.h"

namespace kprof::timeline {

// Where a replayed kernel's context came from, in one view (operator, module or range).
enum class NodePlacement : std::uint8_t {
  kByRanges,    // the NVTX ranges open at its capture named it
  kInferred,    // no range did: its layer and part from its graph's repeating sequence
  kNoContext,   // in the table, but no range was open and its graph does not repeat
  kNotInTable,  // no node of the table has its id, nor is it a clone of one
  kNotPlaced,   // its clone chain is a cycle or longer than importers::kMaxCloneChain
};

// "ranges", "inferred", "no context", "not in table", "not placed".
const char* placement_name(NodePlacement placement);

// How a graph's layers are known.
enum class GraphLayers : std::uint8_t { kNone, kRanges, kStructure };

// One captured graph of the table, as far as the replayed kernels needed it.
struct CapturedGraph {
  std::uint64_t graph = 0;  // the table's graph id
  std::uint64_t nodes = 0;  // its rows in the table
  // Its batch bucket: "batch 8" where its capture-time ranges give the batch ("bs=8",
  // "batch_size=8", "cuda_graph_bs 8", "CUDAGraph bs 8"), else "graph 3 (240 nodes)".
  std::string bucket;
  std::optional<std::uint64_t> batch;
  GraphLayers layers_from = GraphLayers::kNone;
  std::uint64_t layers = 0;  // distinct layers its ranges name, or the repetitions found
  // With kStructure: kernels per layer (the period), and the nodes before the first layer and
  // after the last.
  std::uint64_t period = 0, prologue = 0, epilogue = 0;
};

// A replayed node's context: per view, an index into GraphNodeContexts::names() and where it
// came from. Unplaced nodes (kNotInTable, kNotPlaced) have no graph and name the views' "none"
// buckets (op_attribution.h: kNoOperator, kNoModule, kNoRange).
struct NodeContext {
  NodePlacement placement = NodePlacement::kNotInTable;  // the node's own: not in table, or placed
  std::optional<std::uint32_t> graph;                    // index into GraphNodeContexts::graphs()
  std::uint32_t op = 0, module = 0, range = 0;
  NodePlacement op_from = NodePlacement::kNotInTable, module_from = NodePlacement::kNotInTable,
                range_from = NodePlacement::kNotInTable;
};

// Graphs over this many nodes are not searched for a period (the search is at worst quadratic in
// a graph's nodes); their layers are said unknown.
inline constexpr std::size_t kMaxPeriodSearchNodes = 100'000;

class GraphNodeContexts {
 public:
  // stages: to name a part of an inferred layer by its kernel's operation class (nullptr: the
  // built-in table is not consulted, parts are named by position alone).
  GraphNodeContexts(std::shared_ptr<const importers::GraphNodeTable> table,
                    const analysis::StageTable* stages);
  // The context of a replayed kernel's node id (a graph's layers are worked out the first time
  // one of its nodes is asked for).
  NodeContext context(std::uint64_t node_id);
  const std::vector<CapturedGraph>& graphs() const { return graphs_; }
  const std::string& name(std::uint32_t index) const { return names_[index]; }
  const importers::GraphNodeTable& table() const { return *table_; }

 private:
  std::optional<std::uint32_t> row_of(std::uint64_t node_id, NodePlacement& placement) const;
  std::uint32_t graph_index(std::uint64_t graph);
  std::uint32_t intern(std::string name);
  std::string part_name(std::uint32_t row, std::uint64_t position, const CapturedGraph& g) const;

  std::shared_ptr<const importers::GraphNodeTable> table_;
  const analysis::StageTable* stages_;
  std::vector<std::pair<std::uint64_t, std::uint32_t>> rows_by_id_;    // sorted
  std::vector<std::pair<std::uint64_t, std::uint64_t>> clones_by_id_;  // sorted
  std::map<std::uint64_t, std::vector<std::uint32_t>> rows_by_graph_;  // in capture order
  std::map<std::uint64_t, std::uint32_t> graph_indices_;
  std::vector<CapturedGraph> graphs_;
  // Each range's label (range_label) and what it names, worked out once.
  std::vector<std::string> labels_;
  std::vector<std::optional<std::uint64_t>> range_batches_, range_layers_;
  std::vector<bool> range_operators_;
  std::vector<std::uint32_t> positions_;  // each row's position in its graph's capture order
  std::vector<std::string> names_;
  std::map<std::string, std::uint32_t, std::less<>> name_ids_;
};

// A range's message as kprof names it: an emit_nvtx operator range ("aten::mm, seq = 12,
// op_id = 5, sizes = …") its operator ("aten::mm"); a layerwise-NVTX module range (vLLM's and
// SGLang's PytHooks: "{'Module': 'model.layers.3.self_attn', 'TrainableParams': …}") its module
// path; otherwise the message itself. Domains are not shown.
std::string range_label(std::string_view message);
// The batch a label gives ("bs=8", "batch_size 8", "cuda_graph_bs 8", "CUDAGraph bs 8").
std::optional<std::uint64_t> range_batch(std::string_view label);
// Whether a label names an operator (namespace::name: aten::mm, vllm::unified_attention).
bool names_operator(std::string_view label);
// The layer index a label names ("layer 3", "layers.3", "model.layers.3.mlp", "h.3",
// "blocks.3").
std::optional<std::uint64_t> range_layer(std::string_view label);

// The name a kernel is compared by when its graph's layers are inferred: the name itself, but a
// code generator's kernel only by its generator and kind ("triton_per", "triton_poi",
// "triton_red", "triton_tem"). Inductor numbers and names each fused kernel after what it fuses,
// so the same RMSNorm is "…_add_mean_mul_pow_rsqrt_10" in one layer and
// "…_add_embedding_mean_mul_pow_rsqrt_6" in another (torch.compile of a Llama on the H100:
// with whole names no two layers of its decode graph matched).
std::string period_key(std::string_view kernel_name);

// A repeating kernel sequence: `layers` repetitions of `period` kernels from `start`.
struct Period {
  std::size_t period = 0, start = 0, layers = 0;
};
// The smallest period K repeated N >= 2 times contiguously that covers the most of the sequence,
// at least half of it (a prologue and an epilogue around it allowed); nullopt when none does.
std::optional<Period> find_period(const std::vector<std::uint32_t>& sequence);

}  // namespace kprof::timeline
