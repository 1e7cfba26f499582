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
  return ops.by == timeline::AttributeBy::kOp ? "op" : "module";
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
          {"unattributed_bucket", ops.by == timeline::AttributeBy::kOp
                                      ? std::string(timeline::kNoOperator)
                                      : std::string(timeline::kNoModule)},
          {"graph_capture", ops.replay ? graph_capture_json(*ops.replay) : json(nullptr)},
          {"ops", list}};
}

std::string op_attribution_text(const timeline::OpAttribution& ops, const TraceSource& source,
                                size_t top, size_t name_width) {
  bool by_op = ops.by == timeline::AttributeBy::kOp;
  std::string out = fmt::format(
      "{}: {} GPU activities, GPU time {} ms, attributed by launch correlation to the innermost "
      "{} of {} read around each of {} launch calls; {} distinct {}\n",
      escape_for_terminal(source.path), ops.gpu_events, format_number(ops.gpu_time_us / 1000),
      by_op ? "cpu_op" : "nn.Module frame (path outermost first)", ops.cpu_ops, ops.launches,
      ops.ops.size(), by_op ? "operators" : "module paths");
  TextTable table({{"#", TextTable::Align::kRight},
                   {by_op ? "operator" : "module"},
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
        by_op ? "operator" : "module path", escape_for_terminal(m.capture_trace), m.captured_graphs,
        m.captured_graphs == 1 ? "" : "s", m.captured_launches,
        m.by_name ? "kernel name and order" : "position", m.replayed_kernels - m.matched,
        format_number(m.unmatched_us / 1000), by_op ? "operator" : "module path");
    if (m.ambiguous_graph_launches > 0) {
      out += fmt::format(
          "{} graph launch{} matched several captured graphs equally well, launched from "
          "different {}s: left unmatched rather than guessed (capture one graph, or a trace "
          "whose launch events name their kernels)\n",
          m.ambiguous_graph_launches, m.ambiguous_graph_launches == 1 ? "" : "es",
          by_op ? "operator" : "module path");
    }
  }
  if (ops.unattributed > 0) {
    out += fmt::format(
        "{}: {} GPU activities whose launch call was not found or lay outside every {}\n",
        by_op ? timeline::kNoOperator : timeline::kNoModule, ops.unattributed,
        by_op ? "cpu_op" : "nn.Module frame");
  }
  if (ops.cpu_ops == 0) {
    out += by_op ? "note: the trace has no cpu_op events (record with the PyTorch profiler's CPU "
                   "activities)\n"
                 : "note: the trace has no nn.Module frames (record with "
                   "torch.profiler.profile(with_modules=True))\n";
  }
  return out;
}

}  // namespace kprof::render
