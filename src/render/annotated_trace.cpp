#include "render/annotated_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "common/redact.h"
#include "common/text.h"
#include "model/kernel_names.h"

namespace kprof::render {
namespace {

using nlohmann::json;

// A device the trace did not name gets one pid of its own.
constexpr std::int64_t kUnknownDevicePid = 999;

std::int64_t pid_of(std::int64_t device) { return device >= 0 ? device : kUnknownDevicePid; }
std::int64_t tid_of(const std::optional<std::int64_t>& stream) {
  return stream && *stream >= 0 ? *stream : 0;
}

json number_or_null(const std::optional<double>& value) {
  return value && std::isfinite(*value) ? json(*value) : json(nullptr);
}

bool config_known(const timeline::TimelineItem& item) {
  for (int d = 0; d < 3; ++d) {
    if (!item.grid[d] || !item.block[d]) return false;
  }
  return true;
}

bool same_config(const timeline::TimelineItem& item, const timeline::FixGroup& group) {
  auto equal = [](const std::optional<std::int64_t>& a, std::uint64_t b) {
    return a && *a >= 0 && static_cast<std::uint64_t>(*a) == b;
  };
  return equal(item.grid[0], group.grid.x) && equal(item.grid[1], group.grid.y) &&
         equal(item.grid[2], group.grid.z) && equal(item.block[0], group.block.x) &&
         equal(item.block[1], group.block.y) && equal(item.block[2], group.block.z);
}

// The findings of one fix-list group, as every one of its slices carries them.
json group_args(const timeline::FixGroup& group, std::size_t rank) {
  json args;
  args["captured"] = true;
  args["fix_rank"] = rank;
  args["kernel_group"] = fmt::format("{} grid {} block {}", group.kernel, group.grid.to_string(),
                                     group.block.to_string());
  args["verdict"] = group.roofline;
  args["bound_by"] = group.bound_by.empty() ? json(nullptr) : json(group.bound_by);
  args["achieved_pct"] = number_or_null(group.achieved_pct);
  args["attainable_pct"] = number_or_null(group.attainable_pct);
  args["attainable"] = group.attainable;
  args["share_pct"] = group.fraction_of_pipeline * 100;
  args["group_trace_total_us"] = group.trace_total_us;
  args["estimated_saving_us"] = number_or_null(group.estimated_saving_us);
  args["estimated_step_speedup"] = number_or_null(group.estimated_step_speedup);
  args["replay_fidelity"] = number_or_null(group.replay_fidelity);
  args["capture"] = group.capture;
  if (!group.hot_spots_argv.empty()) {
    // Pasted into a shell by a person: quoted as every command kprof prints (common/text.h).
    args["hot_spots"] = quoted_command(group.hot_spots_argv);
  }
  return args;
}

json metadata(const char* what, std::int64_t pid, std::optional<std::int64_t> tid, json args) {
  json event = {{"ph", "M"}, {"name", what}, {"pid", pid}, {"args", std::move(args)}};
  if (tid) event["tid"] = *tid;
  return event;
}

}  // namespace

FixGroupIndex::FixGroupIndex(const timeline::FixList* fixes) : fixes_(fixes) {
  if (!fixes_) return;
  for (std::size_t g = 0; g < fixes_->groups.size(); ++g) {
    groups_of_[fixes_->groups[g].canonical].push_back(g);
  }
}

FixGroupIndex::Match FixGroupIndex::find(const timeline::TimelineItem& item) {
  Match match;
  if (!fixes_ || item.category != "kernel") return match;
  auto [canonical, added] = canonical_.try_emplace(item.name);
  if (added) canonical->second = model::canonical_kernel_name(item.name);
  auto found = groups_of_.find(canonical->second);
  if (found == groups_of_.end()) return match;
  std::optional<std::size_t> index;
  if (config_known(item)) {
    for (std::size_t g : found->second) {
      if (same_config(item, fixes_->groups[g])) {
        index = g;
        break;
      }
    }
    if (!index) match.how = "captured with another launch configuration";
  } else {
    index = found->second.front();
    match.how =
        found->second.size() == 1
            ? "name (the trace records no launch configuration)"
            : fmt::format("name, the first of {} captured groups of it", found->second.size());
  }
  if (index) {
    match.group = &fixes_->groups[*index];
    match.rank = *index + 1;
    // A group split per batch bucket: its rows share name and configuration, and a slice does
    // not say which bucket's replay ran it.
    if (!match.group->bucket.empty()) {
      match.how += std::string(match.how.empty() ? "" : "; ") +
                   "its group is split per batch bucket: the highest row of it";
    }
  }
  return match;
}

std::string annotated_trace_json(const AnnotatedTraceInput& input, AnnotatedTraceCounts* counts) {
  const timeline::Budget& budget = *input.budget;
  AnnotatedTraceCounts counted;
  FixGroupIndex groups(input.fixes);
  std::vector<json> group_findings;
  if (input.fixes) {
    for (std::size_t g = 0; g < input.fixes->groups.size(); ++g) {
      group_findings.push_back(group_args(input.fixes->groups[g], g + 1));
    }
  }
  std::map<std::string, std::string> stage_cache;

  // One event per line: a viewer reads it as one document, a person can grep it.
  std::string out = "{\"displayTimeUnit\": \"ns\",\n\"otherData\": ";
  bool first_event = true;
  auto put = [&](const json& value) {
    out += value.dump(-1, ' ', false, json::error_handler_t::replace);
  };
  auto put_event = [&](const json& event) {
    out += first_event ? "\n" : ",\n";
    first_event = false;
    put(event);
  };
  put({{"kprof",
        {{"schema", "kprof.annotated-trace/1"},
         {"trace", input.trace_path},
         {"reports", input.report_paths},
         {"argv", redact_secrets(input.argv)},  // where a key may enter (common/redact.h)
         {"step_selector", budget.step_selector},
         {"note",
          "slices: the trace's GPU activities (pid = device, tid = stream) with "
          "kprof's findings in args; 'kprof steps' and each device's 'kprof idle' "
          "track are kprof's steps and idle intervals (ts and dur in microseconds)"}}}});
  out += ",\n\"traceEvents\": [";

  // Track names: each device, its streams, its idle row; the steps' process.
  std::map<std::int64_t, std::set<std::int64_t>> streams_of;
  for (const timeline::TimelineItem& item : budget.timeline) {
    streams_of[item.device].insert(tid_of(item.stream));
  }
  for (const timeline::StepBudget& step : budget.steps) {
    for (const timeline::IdleInterval& idle : step.idle) streams_of[idle.device];
  }
  for (const auto& [device, streams] : streams_of) {
    std::string name = device >= 0 ? fmt::format("GPU {}", device) : "GPU (device not recorded)";
    for (const auto& [id, label] : input.device_names) {
      if (id == device && !label.empty()) name += " (" + label + ")";
    }
    put_event(metadata("process_name", pid_of(device), std::nullopt, {{"name", name}}));
    put_event(metadata("process_sort_index", pid_of(device), std::nullopt,
                       {{"sort_index", pid_of(device)}}));
    put_event(metadata("thread_name", pid_of(device), kIdleTid, {{"name", "kprof idle"}}));
    put_event(metadata("thread_sort_index", pid_of(device), kIdleTid, {{"sort_index", -1}}));
    for (std::int64_t stream : streams) {
      put_event(metadata("thread_name", pid_of(device), stream,
                         {{"name", fmt::format("stream {}", stream)}}));
    }
  }
  put_event(metadata("process_name", kStepsPid, std::nullopt, {{"name", "kprof steps"}}));
  put_event(metadata("process_sort_index", kStepsPid, std::nullopt, {{"sort_index", -1}}));

  for (const timeline::TimelineItem& item : budget.timeline) {
    json args;
    if (item.category == "kernel") {
      auto [stage_it, new_stage] = stage_cache.try_emplace(item.name);
      if (new_stage && input.stages) stage_it->second = input.stages->stage_of_name(item.name);
      FixGroupIndex::Match match = groups.find(item);
      if (!match.how.empty()) args[match.group ? "matched_by" : "note"] = match.how;
      if (match.group) {
        args.update(group_findings[match.rank - 1]);
        ++counted.annotated;
      } else {
        args["captured"] = false;
      }
      args["stage"] = stage_it->second.empty() ? json(nullptr) : json(stage_it->second);
    }
    // Where Kineto keeps them too, so that a reader of Kineto traces finds device and stream.
    args["device"] = item.device;
    if (item.stream) args["stream"] = *item.stream;
    if (config_known(item)) {
      args["grid"] = {*item.grid[0], *item.grid[1], *item.grid[2]};
      args["block"] = {*item.block[0], *item.block[1], *item.block[2]};
    }
    json event = {{"ph", "X"},
                  {"name", item.name},
                  {"cat", item.category},
                  {"ts", item.start_us},
                  {"dur", std::max(0.0, item.duration_us)},
                  {"pid", pid_of(item.device)},
                  {"tid", tid_of(item.stream)}};
    if (!args.is_null()) event["args"] = std::move(args);
    put_event(event);
    ++counted.slices;
  }

  for (const timeline::StepBudget& step : budget.steps) {
    double end = step.start_us + step.host_duration_us;
    for (std::size_t i : step.work) end = std::max(end, budget.timeline[i].end_us);
    json args = {{"verdict", timeline::step_verdict_name(step.verdict)},
                 {"source", step.source},
                 {"gpu_busy_us", step.gpu_busy_us},
                 {"gpu_span_us", step.gpu_span_us},
                 {"busy_pct", step.busy_fraction * 100},
                 {"host_gap_us", step.host_gap_us},
                 {"device_idle_us", step.device_idle_us},
                 {"dependency_wait_us", step.dependency_wait_us},
                 {"gpu_activities", step.gpu_activities},
                 {"kernel_launches", step.kernel_launches}};
    put_event({{"ph", "X"},
               {"name", step.name},
               {"cat", "kprof step"},
               {"ts", step.start_us},
               {"dur", std::max(0.0, end - step.start_us)},
               {"pid", kStepsPid},
               {"tid", 0},
               {"args", std::move(args)}});
    ++counted.steps;
    for (const timeline::IdleInterval& idle : step.idle) {
      json idle_args = {{"kind", timeline::idle_kind_name(idle.kind)},
                        {"step", step.name},
                        {"idle_us", idle.to_us - idle.from_us}};
      if (idle.kind == timeline::IdleKind::kDependencyWait) {
        for (const timeline::DependencyWait& wait : step.dependency_waits) {
          if (wait.device == idle.device && wait.ready_at_us == idle.from_us) {
            idle_args["wait_call"] = wait.wait_call;
            idle_args["wait_call_at_us"] = wait.wait_call_at_us;
            idle_args["next_work"] = wait.next_work;
            if (!wait.blocking_call.empty()) idle_args["blocking_call"] = wait.blocking_call;
          }
        }
      }
      put_event({{"ph", "X"},
                 {"name", timeline::idle_kind_name(idle.kind)},
                 {"cat", "kprof idle"},
                 {"ts", idle.from_us},
                 {"dur", idle.to_us - idle.from_us},
                 {"pid", pid_of(idle.device)},
                 {"tid", kIdleTid},
                 {"args", std::move(idle_args)}});
      ++counted.idle;
    }
  }
  out += "\n]}\n";
  if (counts) *counts = counted;
  return out;
}

}  // namespace kprof::render
