#include "timeline/graph_node_context.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "model/kernel_names.h"
#include "timeline/kernel_ranking.h"  // normalize_kernel_name
#include "timeline/op_attribution.h"  // kNoOperator, kNoModule

namespace kprof::timeline {
namespace {

// The text between the quotes after `key` in a Python dict's repr ({'Module': 'a.b', …}).
std::optional<std::string_view> dict_value(std::string_view text, std::string_view key) {
  for (char quote : {'\'', '"'}) {
    std::string opening = fmt::format("{{{0}{1}{0}: {0}", quote, key);
    if (text.rfind(opening, 0) != 0) continue;
    std::string_view rest = text.substr(opening.size());
    std::size_t end = rest.find(quote);
    if (end != std::string_view::npos && end > 0) return rest.substr(0, end);
  }
  return std::nullopt;
}

std::string joined(const std::vector<std::string_view>& parts, std::string_view separator) {
  std::string text;
  for (std::string_view part : parts) {
    if (!text.empty()) text += separator;
    text += part;
  }
  return text;
}

}  // namespace

const char* placement_name(NodePlacement placement) {
  switch (placement) {
    case NodePlacement::kByRanges:
      return "ranges";
    case NodePlacement::kInferred:
      return "inferred";
    case NodePlacement::kNoContext:
      return "no context";
    case NodePlacement::kNotInTable:
      return "not in table";
    case NodePlacement::kNotPlaced:
      return "not placed";
  }
  return "";
}

std::string range_label(std::string_view message) {
  if (auto module = dict_value(message, "Module")) return std::string(*module);
  std::size_t comma = message.find(", ");
  if (comma != std::string_view::npos && names_operator(message.substr(0, comma))) {
    return std::string(message.substr(0, comma));
  }
  return std::string(message);
}

bool names_operator(std::string_view label) {
  static const RE2 kOperator("[A-Za-z_][A-Za-z0-9_.]*::[A-Za-z_][A-Za-z0-9_.]*");
  return RE2::FullMatch(re2::StringPiece(label.data(), label.size()), kOperator);
}

std::optional<std::uint64_t> range_batch(std::string_view label) {
  static const RE2 kBatch(
      "(?i)(?:^|[^a-z0-9])(?:cuda_graph_bs|batch_size|bs|batch)\\s*[=: ]\\s*(\\d{1,12})(?:\\D|$)");
  std::uint64_t batch = 0;
  if (RE2::PartialMatch(re2::StringPiece(label.data(), label.size()), kBatch, &batch)) return batch;
  return std::nullopt;
}

std::optional<std::uint64_t> range_layer(std::string_view label) {
  static const RE2 kLayer(
      "(?i)(?:^|[^a-z0-9])(?:(?:layers?|blocks?)[._ ]?(\\d{1,9})|h\\.(\\d{1,9}))(?:\\D|$)");
  std::string named, gpt2;
  if (!RE2::PartialMatch(re2::StringPiece(label.data(), label.size()), kLayer, &named, &gpt2)) {
    return std::nullopt;
  }
  return std::stoull(named.empty() ? gpt2 : named);
}

std::string period_key(std::string_view kernel_name) {
  static const RE2 kGenerated("(triton_(?:per|poi|red|tem|for|unk))_.*");
  std::string generator;
  if (RE2::FullMatch(re2::StringPiece(kernel_name.data(), kernel_name.size()), kGenerated,
                     &generator)) {
    return generator;
  }
  return std::string(kernel_name);
}

std::optional<Period> find_period(const std::vector<std::uint32_t>& sequence) {
  const std::size_t n = sequence.size();
  std::optional<Period> best;
  std::size_t best_covered = 0;
  auto same = [&](std::size_t i, std::size_t k) { return sequence[i] == sequence[i + k]; };
  for (std::size_t k = 1; 2 * k <= n; ++k) {
    // A period k covers L = run + k kernels where `run` positions in a row have
    // sequence[i] == sequence[i + k]; it must repeat twice (L >= 2k) and cover half (L >= n/2):
    // a run at least `need` long. Any such run holds a position i with i % need == need - 1, so
    // only those are tried, each run grown from the first that hits it.
    const std::size_t half = (n + 1) / 2;
    const std::size_t need = std::max(k, half > k ? half - k : 1);
    const std::size_t limit = n - k;  // positions where sequence[i + k] exists
    std::size_t grown_to = 0;
    for (std::size_t at = need - 1; at < limit; at += need) {
      if (at < grown_to || !same(at, k)) continue;
      std::size_t low = at, high = at + 1;
      while (low > 0 && same(low - 1, k)) --low;
      while (high < limit && same(high, k)) ++high;
      grown_to = high;
      std::size_t layers = (high - low + k) / k;
      if (layers < 2 || layers * k <= best_covered) continue;
      best_covered = layers * k;
      best = Period{k, low, layers};
    }
    if (best && best_covered * 10 >= n * 9) break;  // the smallest period covering 90%: done
  }
  if (best && best_covered * 2 < n) return std::nullopt;
  if (!best) return best;
  // A layer beside the repetition that differs from its neighbour in one kernel (vLLM's first
  // layer opens with a plain norm where the others fuse the residual add) is one of them: the
  // repetition grows by whole periods while a period-long window next to it differs from the
  // adjacent layer in at most one place (periods of 4 kernels or more, where one place is not
  // most of the window).
  if (best->period >= 4) {
    const std::size_t k = best->period;
    auto differences = [&](std::size_t a, std::size_t b) {
      std::size_t count = 0;
      for (std::size_t i = 0; i < k; ++i) count += sequence[a + i] != sequence[b + i];
      return count;
    };
    while (best->start >= k && differences(best->start - k, best->start) <= 1) {
      best->start -= k;
      ++best->layers;
    }
    for (std::size_t end = best->start + best->layers * k;
         end + k <= n && differences(end, end - k) <= 1; end += k) {
      ++best->layers;
    }
    // The phase: where the layers start is where the repetition was first seen, but the same
    // number of layers may fit several starts. Taken: the start whose adjacent layers differ in
    // the fewest places, then one that leaves a kernel after the last layer (a model ends in its
    // head: torch.compile's Llama graph on the H100 otherwise took the LM head's GEMM as the last
    // layer's final part, the one place that layer differed), then the nearest to the first.
    // mismatched[i]: places in [0, i) where a kernel differs from the one a period later.
    const std::size_t span = best->layers * k;
    std::vector<std::size_t> mismatched(n - k + 1, 0);
    for (std::size_t i = 0; i + k < n; ++i) mismatched[i + 1] = mismatched[i] + !same(i, k);
    auto cost = [&](std::size_t start) {
      const std::size_t differing =
          mismatched[start + span - k] - mismatched[start];  // layer pairs' differences
      const std::size_t no_epilogue = start + span == n ? 1 : 0;
      const std::size_t distance = start > best->start ? start - best->start : best->start - start;
      return std::tuple(differing, no_epilogue, distance);
    };
    std::size_t chosen = best->start;
    for (std::size_t start = 0; start + span <= n; ++start) {
      if (cost(start) < cost(chosen)) chosen = start;
    }
    best->start = chosen;
  }
  return best;
}

GraphNodeContexts::GraphNodeContexts(std::shared_ptr<const importers::GraphNodeTable> table,
                                     const analysis::StageTable* stages)
    : table_(std::move(table)), stages_(stages) {
  const importers::GraphNodeTable& t = *table_;
  rows_by_id_.reserve(t.nodes.size());
  for (std::uint32_t row = 0; row < t.nodes.size(); ++row) {
    rows_by_id_.emplace_back(t.nodes[row].node, row);
    rows_by_graph_[t.nodes[row].graph].push_back(row);
  }
  std::sort(rows_by_id_.begin(), rows_by_id_.end());
  clones_by_id_ = t.clones;
  std::sort(clones_by_id_.begin(), clones_by_id_.end());
  for (auto& [graph, rows] : rows_by_graph_) {
    std::stable_sort(rows.begin(), rows.end(), [&](std::uint32_t a, std::uint32_t b) {
      return t.nodes[a].order < t.nodes[b].order;
    });
  }
  labels_.reserve(t.ranges.size());
  for (const importers::GraphNodeRange& range : t.ranges)
    labels_.push_back(range_label(range.name));
  range_batches_.reserve(labels_.size());
  range_operators_.reserve(labels_.size());
  range_layers_.reserve(labels_.size());
  for (const std::string& label : labels_) {
    range_batches_.push_back(range_batch(label));
    range_operators_.push_back(names_operator(label));
    range_layers_.push_back(range_layer(label));
  }
  positions_.assign(t.nodes.size(), 0);
  for (const auto& [graph, rows] : rows_by_graph_) {
    for (std::uint32_t i = 0; i < rows.size(); ++i) positions_[rows[i]] = i;
  }
}

std::optional<std::uint32_t> GraphNodeContexts::row_of(std::uint64_t node_id,
                                                       NodePlacement& placement) const {
  std::uint64_t id = node_id;
  for (std::size_t step = 0; step <= importers::kMaxCloneChain; ++step) {
    auto row = std::lower_bound(rows_by_id_.begin(), rows_by_id_.end(),
                                std::pair<std::uint64_t, std::uint32_t>{id, 0});
    if (row != rows_by_id_.end() && row->first == id) return row->second;
    auto clone = std::lower_bound(clones_by_id_.begin(), clones_by_id_.end(),
                                  std::pair<std::uint64_t, std::uint64_t>{id, 0});
    if (clone == clones_by_id_.end() || clone->first != id) {
      // The first id is no node nor clone; an id the chain led to is a clone's lost original.
      placement = step == 0 ? NodePlacement::kNotInTable : NodePlacement::kNotPlaced;
      return std::nullopt;
    }
    id = clone->second;
  }
  placement = NodePlacement::kNotPlaced;  // a cycle, or a chain past the bound
  return std::nullopt;
}

std::uint32_t GraphNodeContexts::intern(std::string name) {
  auto [it, added] = name_ids_.emplace(std::move(name), static_cast<std::uint32_t>(names_.size()));
  if (added) names_.push_back(it->first);
  return it->second;
}

std::uint32_t GraphNodeContexts::graph_index(std::uint64_t graph) {
  if (auto it = graph_indices_.find(graph); it != graph_indices_.end()) return it->second;
  const importers::GraphNodeTable& t = *table_;
  const std::vector<std::uint32_t>& rows = rows_by_graph_.at(graph);
  CapturedGraph g;
  g.graph = graph;
  g.nodes = rows.size();
  // The batch most of its nodes' ranges give (each node's outermost batch range).
  std::map<std::uint64_t, std::uint64_t> batches;
  std::set<std::uint64_t> layers;
  for (std::uint32_t row : rows) {
    bool batch_seen = false;
    for (std::uint32_t range : t.stacks[t.nodes[row].stack]) {
      if (range_batches_[range] && !batch_seen) {
        ++batches[*range_batches_[range]];
        batch_seen = true;
      } else if (!range_batches_[range] && range_layers_[range]) {
        layers.insert(*range_layers_[range]);
      }
    }
  }
  std::uint64_t most = 0;
  for (const auto& [batch, count] : batches) {
    if (count > most) g.batch = batch, most = count;
  }
  g.bucket = g.batch ? fmt::format("batch {}", *g.batch)
                     : fmt::format("graph {} ({} node{})", graph, g.nodes, g.nodes == 1 ? "" : "s");
  if (!layers.empty()) {
    g.layers_from = GraphLayers::kRanges;
    g.layers = layers.size();
  } else if (rows.size() <= kMaxPeriodSearchNodes) {
    std::vector<std::uint32_t> kernels;
    kernels.reserve(rows.size());
    std::map<std::string, std::uint32_t, std::less<>> keys;
    for (std::uint32_t row : rows) {
      std::string key = period_key(t.kernels[t.nodes[row].kernel]);
      const auto next = static_cast<std::uint32_t>(keys.size());
      kernels.push_back(keys.emplace(std::move(key), next).first->second);
    }
    if (std::optional<Period> period = find_period(kernels)) {
      g.layers_from = GraphLayers::kStructure;
      g.layers = period->layers;
      g.period = period->period;
      g.prologue = period->start;
      g.epilogue = rows.size() - period->start - period->layers * period->period;
    }
  }
  auto index = static_cast<std::uint32_t>(graphs_.size());
  graphs_.push_back(std::move(g));
  graph_indices_.emplace(graph, index);
  return index;
}

// "part 3/7 (gemm)", "prologue (elementwise)": a kernel of an inferred layer by its position
// in the period and its operation class.
std::string GraphNodeContexts::part_name(std::uint32_t row, std::uint64_t position,
                                         const CapturedGraph& g) const {
  const std::string& kernel = table_->kernels[table_->nodes[row].kernel];
  std::string kind;
  if (kernel == "[memcpy]" || kernel == "[memset]") {
    kind = kernel.substr(1, kernel.size() - 2);
  } else if (stages_ && !kernel.empty()) {
    kind = stages_->stage_of_name(normalize_kernel_name(model::readable_kernel_name(kernel)));
  } else {
    kind = "kernel";
  }
  if (position < g.prologue) return fmt::format("prologue ({})", kind);
  if (position >= g.prologue + g.layers * g.period) return fmt::format("epilogue ({})", kind);
  return fmt::format("part {}/{} ({})", (position - g.prologue) % g.period + 1, g.period, kind);
}

NodeContext GraphNodeContexts::context(std::uint64_t node_id) {
  NodeContext context;
  NodePlacement unplaced = NodePlacement::kNotInTable;
  std::optional<std::uint32_t> found = row_of(node_id, unplaced);
  if (!found) {
    context.placement = context.op_from = context.module_from = context.range_from = unplaced;
    context.op = intern(std::string(kNoOperator));
    context.module = intern(std::string(kNoModule));
    context.range = intern(std::string(kNoRange));
    return context;
  }
  const std::uint32_t row = *found;
  const importers::GraphNode& node = table_->nodes[row];
  context.graph = graph_index(node.graph);
  const CapturedGraph& g = graphs_[*context.graph];
  const std::vector<std::uint32_t>& stack = table_->stacks[node.stack];
  // The ranges that say where in the model it was: all but the batch ranges (the bucket).
  std::vector<std::uint32_t> where;
  for (std::uint32_t range : stack) {
    if (!range_batches_[range]) where.push_back(range);
  }
  const bool structure = g.layers_from == GraphLayers::kStructure;
  const std::uint64_t position = positions_[row];
  std::string layer;  // the inferred layer's frame: "layer 3", "prologue", "epilogue"
  if (structure) {
    if (position < g.prologue) {
      layer = "prologue";
    } else if (position >= g.prologue + g.layers * g.period) {
      layer = "epilogue";
    } else {
      layer = fmt::format("layer {}", (position - g.prologue) / g.period);
    }
  }
  const NodePlacement none = structure ? NodePlacement::kInferred : NodePlacement::kNoContext;
  context.placement = where.empty() ? none : NodePlacement::kByRanges;
  // --by op: the innermost range naming an operator, else the innermost range.
  std::string op;
  for (auto it = where.rbegin(); it != where.rend() && op.empty(); ++it) {
    if (range_operators_[*it]) op = labels_[*it];
  }
  if (op.empty() && !where.empty()) op = labels_[where.back()];
  context.op_from = op.empty() ? none : NodePlacement::kByRanges;
  if (op.empty()) op = structure ? part_name(row, position, g) : std::string(kNoOperator);
  context.op = intern(std::move(op));
  // --by module: the ranges naming no operator, a dotted path inside its parent's kept as the
  // one name ("model.layers.3" then "model.layers.3.mlp": "model.layers.3.mlp"), after the
  // inferred layer where the graph's layers are inferred.
  std::vector<std::string_view> modules;
  for (std::uint32_t range : where) {
    if (range_operators_[range]) continue;
    std::string_view label = labels_[range];
    if (!modules.empty() && label.size() > modules.back().size() &&
        label.substr(0, modules.back().size()) == modules.back() &&
        label[modules.back().size()] == '.') {
      modules.back() = label;
    } else {
      modules.push_back(label);
    }
  }
  context.module_from = modules.empty() ? none : NodePlacement::kByRanges;
  if (structure) modules.insert(modules.begin(), layer);
  context.module = intern(modules.empty() ? std::string(kNoModule) : joined(modules, "/"));
  // --by range: the whole stack, the inferred layer after the batch ranges that open it, and
  // where no range named the kernel its inferred part ("layer 2 / part 3/7 (gemm)"; the
  // prologue's and epilogue's kernels "prologue (embedding)").
  std::vector<std::string_view> frames;
  std::size_t leading = 0;
  while (leading < stack.size() && range_batches_[stack[leading]]) {
    frames.push_back(labels_[stack[leading++]]);
  }
  std::string part;
  if (structure && where.empty()) {
    part = part_name(row, position, g);
    if (part.rfind("part ", 0) == 0) frames.push_back(layer);
    frames.push_back(part);
  } else {
    if (structure) frames.push_back(layer);
    for (std::size_t i = leading; i < stack.size(); ++i) frames.push_back(labels_[stack[i]]);
  }
  context.range_from = where.empty() ? none : NodePlacement::kByRanges;
  // A node nothing places is unattributed in every view, its batch range aside.
  if (context.range_from == NodePlacement::kNoContext) frames.clear();
  context.range = intern(frames.empty() ? std::string(kNoRange) : joined(frames, " / "));
  return context;
}

}  // namespace kprof::timeline
