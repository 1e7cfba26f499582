#include "render/op_render.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/text.h"
#include "common/utf8.h"
#include "render/envelope.h"
#include "render/table.h"

namespace kprof::render {
namespace {

using nlohmann::json;

std::string by_name(const timeline::OpAttribution& ops) {
  switch (ops.by) {
    case timeline::AttributeBy::kOp:
      return "op";
    case timeline::AttributeBy::kModule:
      return "module";
    case timeline::AttributeBy::kRange:
      return "range";
  }
  return "op";
}

// What a row of the table is, in words: "operator", "module path", "range stack".
std::string bucket_kind(timeline::AttributeBy by) {
  switch (by) {
    case timeline::AttributeBy::kOp:
      return "operator";
    case timeline::AttributeBy::kModule:
      return "module path";
    case timeline::AttributeBy::kRange:
      return "range stack";
  }
  return "operator";
}

double share_of(const timeline::ReplayShare& part, const timeline::ReplayShare& whole) {
  return whole.total_us > 0 ? part.total_us / whole.total_us : 0;
}

json replay_share_json(const timeline::ReplayShare& part, const timeline::ReplayShare& whole) {
  return {
      {"gpu_events", part.kernels}, {"total_us", part.total_us}, {"share", share_of(part, whole)}};
}

const char* layers_from_name(timeline::GraphLayers layers) {
  switch (layers) {
    case timeline::GraphLayers::kRanges:
      return "ranges";
    case timeline::GraphLayers::kStructure:
      return "structure";
    case timeline::GraphLayers::kNone:
      return "";
  }
  return "";
}

json graph_nodes_json(const timeline::GraphNodeAttribution& g) {
  json graphs = json::array();
  for (const timeline::ReplayedGraph& replayed : g.graphs) {
    const timeline::CapturedGraph& c = replayed.graph;
    json layers = nullptr;
    if (c.layers_from != timeline::GraphLayers::kNone) {
      layers = {{"from", layers_from_name(c.layers_from)}, {"count", c.layers}};
      if (c.layers_from == timeline::GraphLayers::kStructure) {
        layers["kernels_per_layer"] = c.period;
        layers["prologue_nodes"] = c.prologue;
        layers["epilogue_nodes"] = c.epilogue;
      }
    }
    graphs.push_back({{"graph", c.graph},
                      {"bucket", c.bucket},
                      {"batch", c.batch ? json(*c.batch) : json(nullptr)},
                      {"nodes", c.nodes},
                      {"replays", replayed.replays},
                      {"gpu_events", replayed.kernels},
                      {"total_us", replayed.total_us},
                      {"layers", layers}});
  }
  json unattributed = replay_share_json(g.unattributed, g.replayed);
  unattributed["not_in_table"] = replay_share_json(g.not_in_table, g.replayed);
  unattributed["not_placed"] = replay_share_json(g.not_placed, g.replayed);
  unattributed["no_context"] = replay_share_json(g.no_context, g.replayed);
  return {{"table",
           {{"nodes", g.table_nodes},
            {"clones", g.table_clones},
            {"kernel_nodes", g.counts.kernel_nodes},
            {"copy_nodes", g.counts.copy_nodes},
            {"other_nodes", g.counts.other_nodes},
            {"not_kept", g.counts.not_kept},
            {"unnamed", g.counts.unnamed},
            {"ranges_cut", g.counts.ranges_cut},
            {"clones_not_kept", g.counts.clones_not_kept}}},
          {"replayed", {{"gpu_events", g.replayed.kernels}, {"total_us", g.replayed.total_us}}},
          {"attributed", replay_share_json(g.by_ranges, g.replayed)},
          {"inferred", replay_share_json(g.inferred, g.replayed)},
          {"unattributed", unattributed},
          {"graph_capture_ignored", g.graph_capture_ignored},
          {"graphs", graphs}};
}

std::string count_and_ms(const timeline::ReplayShare& part) {
  return fmt::format("{}, {} ms", part.kernels, format_number(part.total_us / 1000));
}

// The graph replays' attribution in words, then a row per batch bucket.
std::string graph_nodes_text(const timeline::GraphNodeAttribution& g, timeline::AttributeBy by,
                             size_t name_width) {
  std::string out = fmt::format(
      "graph replays: {} GPU activities ({} ms) whose records name a graph node, looked up in the "
      "tracer's node table ({} nodes, {} clone pairs): {:.1f}% ({}) named by capture-time "
      "ranges, {:.1f}% ({}) inferred from their graph's repetition, {:.1f}% ({}) unattributed",
      g.replayed.kernels, format_number(g.replayed.total_us / 1000), g.table_nodes, g.table_clones,
      share_of(g.by_ranges, g.replayed) * 100, count_and_ms(g.by_ranges),
      share_of(g.inferred, g.replayed) * 100, count_and_ms(g.inferred),
      share_of(g.unattributed, g.replayed) * 100, count_and_ms(g.unattributed));
  if (g.unattributed.kernels > 0) {
    out += fmt::format(
        " ({} not in the table, {} not placed through their clones, {} in a graph with neither a "
        "range nor a repetition to place them)",
        g.not_in_table.kernels, g.not_placed.kernels, g.no_context.kernels);
  }
  out += fmt::format(" — by {}\n", bucket_kind(by));
  if (g.counts.not_kept > 0 || g.counts.clones_not_kept > 0 || g.counts.ranges_cut > 0 ||
      g.counts.unnamed > 0) {
    out += fmt::format(
        "the tracer could not table everything: {} nodes and {} clone pairs over its memory "
        "bound (their replays are not in the table), {} ranges cut, {} kernels unnamed\n",
        g.counts.not_kept, g.counts.clones_not_kept, g.counts.ranges_cut, g.counts.unnamed);
  }
  if (g.graph_capture_ignored) {
    out +=
        "note: --graph-capture is not used for them: the trace carries its own graph node table\n";
  }
  // Per bucket: its graphs summed, the layers said by the graph with the most replayed time.
  struct Bucket {
    std::string name;
    std::uint64_t graphs = 0, nodes = 0, replays = 0, kernels = 0;
    double total_us = 0, largest_us = -1;
    const timeline::CapturedGraph* largest = nullptr;
  };
  std::vector<Bucket> buckets;
  for (const timeline::ReplayedGraph& replayed : g.graphs) {
    auto it = std::find_if(buckets.begin(), buckets.end(),
                           [&](const Bucket& b) { return b.name == replayed.graph.bucket; });
    if (it == buckets.end()) it = buckets.insert(buckets.end(), Bucket{replayed.graph.bucket});
    ++it->graphs;
    it->nodes += replayed.graph.nodes;
    it->replays += replayed.replays;
    it->kernels += replayed.kernels;
    it->total_us += replayed.total_us;
    if (replayed.total_us > it->largest_us) {
      it->largest_us = replayed.total_us;
      it->largest = &replayed.graph;
    }
  }
  if (buckets.empty()) return out;
  TextTable table({{"batch bucket"},
                   {"graphs", TextTable::Align::kRight},
                   {"nodes", TextTable::Align::kRight},
                   {"replays", TextTable::Align::kRight},
                   {"kernels", TextTable::Align::kRight},
                   {"total ms", TextTable::Align::kRight},
                   {"% replayed", TextTable::Align::kRight},
                   {"layers"}});
  for (const Bucket& b : buckets) {
    std::string layers = "—";
    if (b.largest && b.largest->layers_from == timeline::GraphLayers::kRanges) {
      layers = fmt::format("{}, named by ranges", b.largest->layers);
    } else if (b.largest && b.largest->layers_from == timeline::GraphLayers::kStructure) {
      layers = fmt::format("{}, inferred from a repeating sequence of {} kernels",
                           b.largest->layers, b.largest->period);
    }
    table.add_row(
        {ellipsize(b.name, name_width), std::to_string(b.graphs), std::to_string(b.nodes),
         std::to_string(b.replays), std::to_string(b.kernels), format_number(b.total_us / 1000),
         fmt::format("{:.1f}",
                     g.replayed.total_us > 0 ? b.total_us / g.replayed.total_us * 100 : 0.0),
         layers});
  }
  return out + table.to_string();
}

json graph_capture_json(const timeline::ReplayMatch& m) {
  return {{"trace", m.capture_trace},
          {"captured_graphs", m.captured_graphs},
          {"captured_launches", m.captured_launches},
          {"matched_by", m.by_name ? "name" : "position"},
          {"graph_launches", m.graph_launches},
          {"replayed_gpu_events", m.replayed_kernels},
          {"matched", m.matched},
          {"ambiguous_graph_launches", m.ambiguous_graph_launches},
          {"unmatched_us", m.unmatched_us}};
}

}  // namespace

std::string shared_ids_warning(const std::string& path, const timeline::JoinReport& shared) {
  if (shared.shared_id_work == 0) return "";
  std::uint64_t by_first = shared.shared_id_work - shared.by_device_owner - shared.by_latest_launch;
  return fmt::format(
      "kprof: warning: {}: the GPU work of {} correlation id{} that several processes launched "
      "names no process (ranks' traces merged into one file): {} given to the only process that "
      "had launched the id by then, {} to the process whose work fills their device, {} to the "
      "latest launch before them — their operators are inferred, not recorded; rank each "
      "process's own trace for certainty\n",
      escape_for_terminal(path), shared.shared_id_work, shared.shared_id_work == 1 ? "" : "s",
      by_first, shared.by_device_owner, shared.by_latest_launch);
}

json op_attribution_json(const timeline::OpAttribution& ops, const TraceSource& source) {
  json list = json::array();
  for (const auto& op : ops.ops) {
    list.push_back({{"name", op.name},
                    {"kernels", op.kernels},
                    {"total_us", op.total_us},
                    {"share", op.share}});
  }
  return {{"schema", "kprof.rank-ops/1"},
          {"tool", tool_json(source.argv)},
          {"trace", source.path},
          {"trace_format", source.stats.format},
          {"by", by_name(ops)},
          {"events", source.stats.events},
          {"gpu_events", ops.gpu_events},
          {"gpu_time_us", ops.gpu_time_us},
          {"cpu_spans", ops.cpu_ops},
          {"launches", ops.launches},
          {"unattributed_gpu_events", ops.unattributed},
          {"shared_correlation_ids",
           {{"launched_work", ops.shared_ids.shared_id_work},
            {"by_device_owner", ops.shared_ids.by_device_owner},
            {"by_latest_launch", ops.shared_ids.by_latest_launch}}},
          {"unattributed_bucket", std::string(timeline::no_bucket_name(ops.by))},
          {"graph_capture", ops.replay ? graph_capture_json(*ops.replay) : json(nullptr)},
          {"graph_nodes", ops.graphs ? graph_nodes_json(*ops.graphs) : json(nullptr)},
          {"ops", list}};
}

std::string op_attribution_text(const timeline::OpAttribution& ops, const TraceSource& source,
                                size_t top, size_t name_width) {
  const timeline::AttributeBy by = ops.by;
  std::string out;
  if (by == timeline::AttributeBy::kRange) {
    out = fmt::format(
        "{}: {} GPU activities, GPU time {} ms, attributed by launch correlation to the "
        "annotations (NVTX ranges, record_function; step markers left out) open around each of "
        "{} launch calls ({} read); {} distinct range stacks\n",
        escape_for_terminal(source.path), ops.gpu_events, format_number(ops.gpu_time_us / 1000),
        ops.launches, ops.cpu_ops, ops.ops.size());
  } else {
    bool by_op = by == timeline::AttributeBy::kOp;
    out = fmt::format(
        "{}: {} GPU activities, GPU time {} ms, attributed by launch correlation to the innermost "
        "{} of {} read around each of {} launch calls; {} distinct {}\n",
        escape_for_terminal(source.path), ops.gpu_events, format_number(ops.gpu_time_us / 1000),
        by_op ? "cpu_op" : "nn.Module frame (path outermost first)", ops.cpu_ops, ops.launches,
        ops.ops.size(), by_op ? "operators" : "module paths");
  }
  const bool by_op = by == timeline::AttributeBy::kOp;
  if (ops.graphs) {
    out +=
        "graph-replayed kernels: each by the node it was captured as (kprof tracer's node "
        "table), ";
    out += by_op                                  ? "its innermost operator range"
           : by == timeline::AttributeBy::kModule ? "its module ranges"
                                                  : "its whole range stack";
    out += ", else its layer and part inferred from its graph's repetition\n";
  }
  TextTable table({{"#", TextTable::Align::kRight},
                   {by_op                                  ? "operator"
                    : by == timeline::AttributeBy::kModule ? "module"
                                                           : "ranges"},
                   {"kernels", TextTable::Align::kRight},
                   {"total ms", TextTable::Align::kRight},
                   {"% GPU", TextTable::Align::kRight}});
  size_t shown = std::min(top, ops.ops.size());
  for (size_t i = 0; i < shown; ++i) {
    const auto& op = ops.ops[i];
    table.add_row({std::to_string(i + 1), ellipsize(op.name, name_width),
                   std::to_string(op.kernels), format_number(op.total_us / 1000),
                   fmt::format("{:.1f}", op.share * 100)});
  }
  out += table.to_string();
  if (shown < ops.ops.size()) {
    double rest = 0;
    for (size_t i = shown; i < ops.ops.size(); ++i) rest += ops.ops[i].total_us;
    out +=
        fmt::format("… {} more, {:.1f}% of GPU time (--top N shows more)\n", ops.ops.size() - shown,
                    ops.gpu_time_us > 0 ? rest / ops.gpu_time_us * 100 : 0.0);
  }
  if (ops.replay) {
    const timeline::ReplayMatch& m = *ops.replay;
    out += fmt::format(
        "graph replays: {} GPU activities of {} graph launch{}, {} of them given the {} that "
        "launched them at capture ({}: {} captured graph{}, {} captured launches; matched by {}); "
        "{} ({} ms) unmatched, left with the graph launch's own {}\n",
        m.replayed_kernels, m.graph_launches, m.graph_launches == 1 ? "" : "es", m.matched,
        bucket_kind(by), escape_for_terminal(m.capture_trace), m.captured_graphs,
        m.captured_graphs == 1 ? "" : "s", m.captured_launches,
        m.by_name ? "kernel name and order" : "position", m.replayed_kernels - m.matched,
        format_number(m.unmatched_us / 1000), bucket_kind(by));
    if (m.ambiguous_graph_launches > 0) {
      out += fmt::format(
          "{} graph launch{} matched several captured graphs equally well, launched from "
          "different {}s: left unmatched rather than guessed (capture one graph, or a trace "
          "whose launch events name their kernels)\n",
          m.ambiguous_graph_launches, m.ambiguous_graph_launches == 1 ? "" : "es", bucket_kind(by));
    }
  }
  if (ops.graphs) out += graph_nodes_text(*ops.graphs, by, name_width);
  const std::string frame = by_op                                  ? "cpu_op"
                            : by == timeline::AttributeBy::kModule ? "nn.Module frame"
                                                                   : "annotation";
  const std::uint64_t replayed_unattributed = ops.graphs ? ops.graphs->unattributed.kernels : 0;
  const std::uint64_t eager_unattributed = ops.unattributed - replayed_unattributed;
  if (ops.unattributed > 0 && replayed_unattributed == 0) {
    out += fmt::format(
        "{}: {} GPU activities whose launch call was not found or lay outside every {}\n",
        timeline::no_bucket_name(by), ops.unattributed, frame);
  } else if (ops.unattributed > 0 && eager_unattributed == 0) {
    out += fmt::format("{}: {} graph-replayed GPU activities left unattributed (above)\n",
                       timeline::no_bucket_name(by), ops.unattributed);
  } else if (ops.unattributed > 0) {
    out += fmt::format(
        "{}: {} GPU activities: {} graph-replayed ones left unattributed (above), {} launched "
        "eagerly whose launch call was not found or lay outside every {}\n",
        timeline::no_bucket_name(by), ops.unattributed, replayed_unattributed, eager_unattributed,
        frame);
  }
  // Said where eager work is there to be attributed by the spans the trace lacks.
  const bool eager_work = !ops.graphs || ops.gpu_events > ops.graphs->replayed.kernels;
  if (ops.cpu_ops == 0 && eager_work) {
    out += by_op ? "note: the trace has no cpu_op events (record with the PyTorch profiler's CPU "
                   "activities)\n"
           : by == timeline::AttributeBy::kModule
               ? "note: the trace has no nn.Module frames (record with "
                 "torch.profiler.profile(with_modules=True))\n"
               : "note: the trace has no annotations around its launches (NVTX ranges, "
                 "record_function)\n";
  }
  return out;
}

}  // namespace kprof::render
