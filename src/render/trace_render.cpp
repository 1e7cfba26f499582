#include "render/trace_render.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include "common/text.h"
#include "common/utf8.h"
#include "render/envelope.h"
#include "render/table.h"

namespace kprof::render {
namespace {

using nlohmann::json;

std::string pct(double share) { return fmt::format("{:.1f}", share * 100); }
std::string trace_ms(double us) { return format_number(us / 1000); }

// A threshold given in percent and stored as a fraction, printed as given (0.6 * 100 is not 60).
std::string percent_of(double fraction) {
  return format_number(std::round(fraction * 100 * 1e6) / 1e6);
}

// Of the steps' wall spans (annotation start, or the previous step's end, to the later of the
// annotation's end and the last GPU work): the figure the verdict's host gap is counted over.
// The time the device ran work outside the steps (other_work_us) is neither busy nor idle here.
double busy_fraction(const timeline::Budget& budget) {
  double wall = budget.total_wall_span_us - budget.total_other_work_us;
  return wall > 0 ? budget.total_busy_us / wall : 0;
}

// The kernels alone (TensorBoard's "GPU utilization"), over the same time as busy_fraction.
double kernel_busy_fraction(const timeline::Budget& budget) {
  double wall = budget.total_wall_span_us - budget.total_other_work_us;
  return wall > 0 ? budget.total_kernel_busy_us / wall : 0;
}

// Of the GPU spans alone (first to last GPU work of each step): the idle before and after left out.
double gpu_span_busy_fraction(const timeline::Budget& budget) {
  return budget.total_span_us > 0 ? budget.total_busy_us / budget.total_span_us : 0;
}

double host_fed_fraction(const timeline::Budget& budget) {
  double fed = budget.total_busy_us + budget.total_host_gap_us + budget.total_dependency_wait_us;
  return fed > 0 ? budget.total_busy_us / fed : 0;
}

// The copies and memsets of the judged steps (graph captures left out), by name, the longest
// first: the evidence of a transfer-bound verdict.
std::vector<std::pair<std::string, double>> copies_of(const timeline::Budget& budget) {
  std::map<std::string, double> by_name;
  for (const auto& s : budget.steps) {
    if (s.verdict == timeline::StepVerdict::kGraphCapture) continue;
    for (const auto& [name, us] : s.kernels) {
      // Kineto's "Memcpy HtoD (…)", Nsight Systems' "[CUDA memcpy Host-to-Device]".
      std::string lower = name;
      std::transform(lower.begin(), lower.end(), lower.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      if (lower.find("memcpy") == std::string::npos && lower.find("memset") == std::string::npos) {
        continue;
      }
      // "Memcpy HtoD " once its "(Pageable -> Device)" is normalised away: shown trimmed.
      std::string shown = name.substr(0, name.find_last_not_of(' ') + 1);
      by_name[shown] += us;
    }
  }
  std::vector<std::pair<std::string, double>> copies(by_name.begin(), by_name.end());
  std::stable_sort(copies.begin(), copies.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return copies;
}

// Of the busy time, the part the device ran copies or memsets and no kernel.
double copies_alone_us(const timeline::Budget& budget) {
  return std::max(0.0, budget.total_busy_us - budget.total_kernel_busy_us);
}

// "KernelExecutor::compileFusion 392.9 ms, GpuLower::lower 13.73 ms": the compilation ranges.
std::string compilation_list(const timeline::Budget& budget) {
  std::string list;
  for (const auto& range : budget.compilation_ranges) {
    if (!list.empty()) list += ", ";
    list += fmt::format("{} {} ms", escape_for_terminal(range.name), trace_ms(range.time_us));
    if (range.count > 1) list += fmt::format(" ({}×)", range.count);
  }
  return list;
}

// Compilation worth naming first: a quarter of the host's gap or more lies in ranges that name it.
bool compilation_explains_host_gap(const timeline::Budget& budget) {
  return budget.compilation_us > 0 && budget.compilation_us >= 0.25 * budget.total_host_gap_us &&
         (budget.overall == timeline::StepVerdict::kHostBound ||
          budget.overall == timeline::StepVerdict::kMixed);
}

std::string budget_advice_on_records(const timeline::Budget& budget);

// The advice, qualified first where the records it rests on are incomplete.
std::string budget_advice(const timeline::Budget& budget) {
  std::string advice = budget_advice_on_records(budget);
  const timeline::LaunchRecords& records = budget.launch_records;
  if (!records.incomplete() || advice.empty()) return advice;
  return fmt::format(
      "On incomplete records: {} of {} launch calls have no GPU record (the profiler dropped "
      "their work, or it ran after the window closed), so the device may have been busier than "
      "shown and the verdict may not hold — record again with a shorter window or larger "
      "profiler buffers before acting. As recorded: {}",
      records.without_gpu_record, records.launch_calls, advice);
}

std::string budget_advice_on_records(const timeline::Budget& budget) {
  double busy = busy_fraction(budget);
  if (compilation_explains_host_gap(budget)) {
    return fmt::format(
        "The GPU is busy {:.0f}% of the steps' wall time, but {} ms of it ({:.0f}%) lies in ranges "
        "that name one-time compilation and warm-up ({}): the host's gap is that compilation, "
        "not launch overhead, and batching launches would not remove it. Exclude it from the "
        "profiled window — profile after warm-up (nsys --capture-range=cudaProfilerApi, a "
        "torch.profiler schedule with warmup steps, or an NVTX range around the steady state) — "
        "and judge the steady state.",
        busy * 100, trace_ms(budget.compilation_us),
        budget.total_wall_span_us > 0 ? 100 * budget.compilation_us / budget.total_wall_span_us : 0,
        compilation_list(budget));
  }
  if (budget.overall == timeline::StepVerdict::kTransferBound) {
    auto copies = copies_of(budget);
    std::string largest = copies.empty()
                              ? std::string()
                              : fmt::format(" (the largest, {}: {} ms)", copies.front().first,
                                            trace_ms(copies.front().second));
    return fmt::format(
        "The GPU is busy {:.0f}% of the steps' wall time, but {:.0f}% of that busy time it ran "
        "copies and no kernel{}: the steps are transfer-bound, and faster kernels will not "
        "shorten them. Pin the host memory the copies use (cudaHostAlloc, pin_memory=True), "
        "overlap them with compute on another stream (asynchronous copies), or avoid them (keep "
        "the data on the device, copy less often).",
        busy * 100,
        budget.total_busy_us > 0 ? 100 * copies_alone_us(budget) / budget.total_busy_us : 0,
        largest);
  }
  if (budget.overall == timeline::StepVerdict::kHostBound) {
    // Where the host's share lies says which remedy applies.
    double gap = budget.total_host_gap_us;
    double outside =
        std::min(gap, budget.total_host_gap_before_first_us + budget.total_idle_after_last_us);
    std::uint64_t graph_launches = 0;
    for (const auto& s : budget.steps) {
      if (s.verdict != timeline::StepVerdict::kGraphCapture) graph_launches += s.graph_launches;
    }
    std::string where;
    if (gap > 0 && outside >= gap / 2) {
      where = fmt::format(
          "{:.0f}% of the host gap lies before each step's first GPU work or after its last "
          "(input preparation, scheduling, sampling on the host): overlap it with the GPU work "
          "(asynchronous scheduling) or shrink it",
          100 * outside / gap);
    } else {
      where = fmt::format(
          "{:.0f}% of the host gap lies between the step's kernels: batch the launches (CUDA "
          "graphs, torch.compile mode=\"reduce-overhead\"){}",
          gap > 0 ? 100 * (gap - outside) / gap : 0,
          graph_launches > 0 ? "; the steps already replay graphs, so look at the launches "
                               "made outside them"
                             : "");
    }
    return fmt::format(
        "The GPU is busy only {:.0f}% of the steps' wall time: it waits on the host. Per-kernel "
        "counter work is moot here — a kernel made twice as fast saves at most {:.0f}% of a step "
        "— until the host's share shrinks: {}.",
        busy * 100, busy * 50, where);
  }
  if (budget.overall == timeline::StepVerdict::kGraphCapture) {
    return "The trace records CUDA graphs being captured (an engine's warm-up): captured launches "
           "run nothing, so there is no serving step to judge. Profile the replays (the steps "
           "after capture) for a budget.";
  }
  if (budget.overall == timeline::StepVerdict::kDependencyBound) {
    return fmt::format(
        "The GPU sits idle {} ms with work enqueued behind stream waits (cudaStreamWaitEvent and "
        "kin) — more than the host's own gaps ({} ms): the steps wait on a dependency, often "
        "another stream, device or the host blocked in a synchronous copy. Faster kernels or "
        "launches will not shorten them; find what each wait waits for (the longest are listed "
        "above).",
        trace_ms(budget.total_dependency_wait_us), trace_ms(budget.total_host_gap_us));
  }
  if (budget.overall == timeline::StepVerdict::kMixed && budget.total_host_gap_us > 0) {
    double outside = budget.total_host_gap_before_first_us + budget.total_idle_after_last_us;
    return fmt::format(
        "The GPU is busy {:.0f}% of the steps' wall time: neither the kernels nor the host alone "
        "set the pace. Of the host gap, {:.0f}% lies before each step's first GPU work or after "
        "its last (input preparation, scheduling, sampling on the host: overlap it with the GPU "
        "work, as asynchronous scheduling does), {:.0f}% between the step's kernels (launch "
        "overhead: CUDA graphs).",
        busy * 100, 100 * std::min(outside, budget.total_host_gap_us) / budget.total_host_gap_us,
        100 * std::max(0.0, budget.total_host_gap_us - outside) / budget.total_host_gap_us);
  }
  if (budget.overall == timeline::StepVerdict::kKernelBound) {
    return fmt::format(
        "The GPU is busy {:.0f}% of the steps' wall time: the steps are kernel-bound, so "
        "faster kernels shorten them — rank them (kprof rank) and capture the largest (kprof "
        "analyze).",
        busy * 100);
  }
  return {};
}

// The warning lines (no "kprof: " prefix, no newline) naming the trace, how many events were
// skipped and the first of them: for an impossible time, and for a size no profiler writes.
std::vector<std::string> skipped_events_warnings(const std::string& path,
                                                 const importers::TraceReadStats& stats) {
  std::vector<std::string> lines;
  if (stats.skipped_events != 0) {
    lines.push_back(fmt::format(
        "warning: {}: skipped {} event{} with an impossible time (first {}); "
        "the rest of the trace is used",
        path, stats.skipped_events, stats.skipped_events == 1 ? "" : "s", stats.first_skipped));
  }
  if (stats.oversized_events != 0) {
    lines.push_back(fmt::format(
        "warning: {}: skipped {} event{} larger than 16 MiB, more than any profiler writes "
        "(first at byte {}); the rest of the trace is used",
        path, stats.oversized_events, stats.oversized_events == 1 ? "" : "s",
        stats.first_oversized_at));
  }
  return lines;
}

std::string device_name(std::int64_t device) {
  return device < 0 ? std::string("device ?") : fmt::format("device {}", device);
}

json communication_json(const timeline::CommunicationTime& collective,
                        const timeline::CommunicationTime& expert_parallel) {
  auto one = [](const timeline::CommunicationTime& c) {
    return json{
        {"time_us", c.time_us}, {"exposed_us", c.exposed_us}, {"overlapped_us", c.overlapped_us()}};
  };
  return {{"collective", one(collective)}, {"expert_parallel", one(expert_parallel)}};
}

// Said whenever the trace held work from before its window, which every figure leaves out.
std::string pre_window_line(std::uint64_t activities, double time_us) {
  if (activities == 0) return {};
  return fmt::format(
      "{} GPU activit{} ({} ms of GPU time) enqueued before the profiler's window (correlation "
      "ids below every launch the trace recorded, such as the previous iteration's collectives): "
      "left out of every GPU-time figure\n",
      activities, activities == 1 ? "y" : "ies", trace_ms(time_us));
}

std::string communication_line(const char* what, const timeline::CommunicationTime& c) {
  return fmt::format("{} {} ms (exposed {} ms, overlapped {} ms)", what, trace_ms(c.time_us),
                     trace_ms(c.exposed_us), trace_ms(c.overlapped_us()));
}

// Per device that communicates, each kind's time, exposed and overlapped.
std::string communication_lines(const timeline::Ranking& ranking) {
  std::string out;
  for (const auto& d : ranking.devices) {
    if (d.collective.time_us + d.expert_parallel.time_us <= 0) continue;
    out += fmt::format("communication on {}: {}; {}\n", device_name(d.device),
                       communication_line("collectives", d.collective),
                       communication_line("expert-parallel all-to-all", d.expert_parallel));
  }
  return out;
}

// One line per device (only printed when there are several): its own GPU time, span and busy.
std::string ranking_device_lines(const timeline::Ranking& ranking) {
  if (ranking.devices.size() < 2) return {};
  std::string out;
  for (const auto& d : ranking.devices) {
    out += fmt::format(
        "  {}: {} GPU activities ({} kernels), GPU time {} ms over a {} ms span, busy {}{} ms "
        "({:.1f}%), communication {} ms of which exposed {} ms{}\n",
        device_name(d.device), d.gpu_events, d.kernel_events, trace_ms(d.gpu_time_us),
        trace_ms(d.span_us), d.late_intervals > 0 ? "at least " : "", trace_ms(d.busy_us),
        d.busy_fraction * 100, trace_ms(d.communication_us), trace_ms(d.exposed_communication_us),
        d.late_intervals > 0 ? " (activities far out of time order: busy is a lower bound, "
                               "exposed communication approximate)"
                             : "");
  }
  return out;
}

json budget_device_json(const timeline::DeviceBudget& d) {
  return {{"device", d.device},
          {"gpu_activities", d.gpu_activities},
          {"kernels", d.kernels},
          {"kernel_time_us", d.kernel_time_us},
          {"span_us", d.gpu_span_us},
          {"wall_span_us", d.wall_span_us},
          {"busy_us", d.gpu_busy_us},
          {"kernel_busy_us", d.kernel_busy_us},
          {"busy_fraction", d.busy_fraction},
          {"gpu_span_busy_fraction", d.gpu_span_busy_fraction},
          {"host_gap_us", d.host_idle_us},
          {"device_idle_us", d.device_idle_us},
          {"dependency_wait_us", d.dependency_wait_us},
          {"other_work_us", d.other_work_us},
          {"idle_before_first_us", d.idle_before_first_us},
          {"host_gap_before_first_us", d.host_gap_before_first_us},
          {"idle_after_last_us", d.idle_after_last_us},
          {"exposed_communication_us", d.exposed_communication_us},
          {"communication", communication_json(d.collective, d.expert_parallel)}};
}

}  // namespace

json ranking_devices_json(const timeline::Ranking& ranking) {
  json devices = json::array();
  for (const auto& d : ranking.devices) {
    devices.push_back({{"device", d.device},
                       {"gpu_events", d.gpu_events},
                       {"kernels", d.kernel_events},
                       {"kernel_time_us", d.kernel_time_us},
                       {"gpu_time_us", d.gpu_time_us},
                       {"span_us", d.span_us},
                       {"busy_us", d.busy_us},
                       {"busy_fraction", d.busy_fraction},
                       {"communication_us", d.communication_us},
                       {"exposed_communication_us", d.exposed_communication_us},
                       {"communication", communication_json(d.collective, d.expert_parallel)},
                       {"busy_lower_bound", d.late_intervals > 0}});
  }
  return devices;
}

std::string launch_records_warning(const std::string& path,
                                   const timeline::LaunchRecords& records) {
  if (!records.incomplete()) return "";
  return fmt::format(
      "kprof: warning: {}: {} of {} launch calls ({:.1f}%) have no GPU record — the profiler "
      "dropped their work (its buffers full) or the window closed before it ran: every share, "
      "busy time and verdict here rests on the GPU work it kept. Record a shorter window, or "
      "give the profiler larger buffers, before acting on them\n",
      escape_for_terminal(path), records.without_gpu_record, records.launch_calls,
      100.0 * static_cast<double>(records.without_gpu_record) /
          static_cast<double>(records.launch_calls));
}

std::string trace_warnings(const TraceSource& source, const timeline::LaunchRecords* records) {
  std::string text;
  for (const std::string& warning : skipped_events_warnings(source.path, source.stats)) {
    text += "kprof: " + escape_for_terminal(warning) + "\n";
  }
  for (const std::string& drop : source.stats.producer_drops) {
    text += fmt::format("kprof: warning: {}: the profiler reports lost records: {}\n",
                        escape_for_terminal(source.path), escape_for_terminal(drop));
  }
  if (records != nullptr) text += launch_records_warning(source.path, *records);
  if (!source.stats.graph_nodes_ignored.empty()) {
    text += fmt::format(
        "kprof: warning: {}: the tracer's graph node table is ignored ({}): graph replays are "
        "read as in a trace without one\n",
        escape_for_terminal(source.path), escape_for_terminal(source.stats.graph_nodes_ignored));
  }

  // Said, as the figures of such a trace rest on the mapping (kineto's tb_plugin maps the same).
  if (source.stats.legacy_categories) {
    text += fmt::format(
        "kprof: note: {} is read as a PyTorch 1.8/1.9 trace: its categories Kernel, Runtime, "
        "Memcpy, Memset and Operator as kernel, cuda_runtime, gpu_memcpy, gpu_memset and cpu_op, "
        "its ProfilerStep#N operators as steps\n",
        escape_for_terminal(source.path));
  }
  return text;
}

json records_json(const timeline::LaunchRecords& records, const TraceSource& source) {
  return {{"launch_calls", records.launch_calls},
          {"launches_without_gpu_record", records.without_gpu_record},
          {"producer_drops", source.stats.producer_drops},
          {"producer_counts_drops", source.stats.producer_counts_drops},
          {"complete", !records.incomplete() && source.stats.producer_drops.empty()}};
}

json ranking_json(const timeline::Ranking& ranking, const TraceSource& source) {
  json kernels = json::array();
  for (const auto& k : ranking.kernels) {
    kernels.push_back({{"name", k.name},
                       {"kind", k.kind},
                       {"stage", k.stage},
                       {"stage_source", k.stage_source},
                       {"stage_evidence", k.stage_evidence},
                       {"count", k.count},
                       {"total_us", k.total_us},
                       {"mean_us", k.total_us / static_cast<double>(k.count)},
                       {"min_us", k.min_us},
                       {"max_us", k.max_us},
                       {"share_of_gpu_time", k.share_of_gpu_time},
                       {"share_of_wall", k.share_of_wall}});
  }
  json stage_list = json::array();
  for (const auto& s : ranking.stages) {
    stage_list.push_back({{"stage", s.stage},
                          {"count", s.count},
                          {"total_us", s.total_us},
                          {"share_of_gpu_time", s.share_of_gpu_time}});
  }
  return {{"schema", "kprof.rank/1"},
          {"tool", tool_json(source.argv)},
          {"trace", source.path},
          {"trace_format", source.stats.format},
          {"events", source.stats.events},
          {"gpu_events", ranking.gpu_events},
          {"gpu_time_us", ranking.gpu_time_us},
          {"wall_us", ranking.wall_us},
          {"devices", ranking_devices_json(ranking)},
          {"pre_window",
           {{"activities", ranking.pre_window_activities}, {"time_us", ranking.pre_window_us}}},
          {"records", records_json(ranking.launch_records, source)},
          {"kernels", kernels},
          {"stages", stage_list},
          {"stage_unresolved_share", timeline::unresolved_stage_share(ranking)}};
}

namespace {

// How the stages were decided, where more than the names decided or a code generator's names
// left some undecided.
std::string stage_evidence_lines(const timeline::Ranking& ranking) {
  std::uint64_t by_launch = 0;
  double by_launch_us = 0;
  for (const auto& k : ranking.kernels) {
    if (k.stage_source == "operator" || k.stage_source == "step") {
      ++by_launch;
      by_launch_us += k.total_us;
    }
  }
  std::string out;
  double share = ranking.gpu_time_us > 0 ? by_launch_us / ranking.gpu_time_us : 0;
  if (by_launch > 0) {
    out += fmt::format(
        "{} kernel names ({}% of GPU time) staged by their launching operator or their steps, "
        "not their names (--json: stage_source, stage_evidence)\n",
        by_launch, pct(share));
  }
  double unresolved = timeline::unresolved_stage_share(ranking);
  if (unresolved >= 0.01) {
    out += fmt::format(
        "{}% of GPU time is in kernels a code generator named (nvFuser, TileLang, Inductor "
        "templates) whose names say no operation, staged by the name's guess: no operator in "
        "the trace launched them. A PyTorch profiler trace (its cpu_op around each launch) or "
        "an ncu capture for kprof analyze (the tensor pipe) would stage them\n",
        pct(unresolved));
  }
  return out;
}

}  // namespace

std::string ranking_text(const timeline::Ranking& ranking, const TraceSource& source, size_t top,
                         size_t name_width) {
  std::string out = fmt::format(
      "{}: {} GPU activities ({} kernels, {} memcpy, {} memset) of {} events; GPU time {} ms "
      "(summed durations) over a {} ms trace span; {} distinct names\n",
      escape_for_terminal(source.path), ranking.gpu_events, ranking.kernel_events,
      ranking.memcpy_events, ranking.memset_events, source.stats.events,
      trace_ms(ranking.gpu_time_us), trace_ms(ranking.wall_us), ranking.kernels.size());
  if (ranking.devices.size() > 1) {
    out += fmt::format(
        "{} devices, each accounted on its own (\"% wall\" is of {} ms: the span times {} "
        "devices):\n",
        ranking.devices.size(),
        trace_ms(ranking.wall_us * static_cast<double>(ranking.devices.size())),
        ranking.devices.size());
    out += ranking_device_lines(ranking);
  }
  out += communication_lines(ranking);
  out += pre_window_line(ranking.pre_window_activities, ranking.pre_window_us);
  TextTable table({{"#", TextTable::Align::kRight},
                   {"kernel"},
                   {"stage"},
                   {"count", TextTable::Align::kRight},
                   {"total ms", TextTable::Align::kRight},
                   {"mean us", TextTable::Align::kRight},
                   {"% GPU", TextTable::Align::kRight},
                   {"% wall", TextTable::Align::kRight}});
  size_t shown = std::min(top, ranking.kernels.size());
  for (size_t i = 0; i < shown; ++i) {
    const auto& k = ranking.kernels[i];
    table.add_row({std::to_string(i + 1), ellipsize(k.name, name_width), k.stage,
                   std::to_string(k.count), trace_ms(k.total_us),
                   format_number(k.total_us / static_cast<double>(k.count)),
                   pct(k.share_of_gpu_time), pct(k.share_of_wall)});
  }
  out += table.to_string();
  if (shown < ranking.kernels.size()) {
    double rest = 0;
    for (size_t i = shown; i < ranking.kernels.size(); ++i) rest += ranking.kernels[i].total_us;
    out += fmt::format("… {} more names, {}% of GPU time (--top N shows more)\n",
                       ranking.kernels.size() - shown,
                       pct(ranking.gpu_time_us > 0 ? rest / ranking.gpu_time_us : 0));
  }
  TextTable by_stage({{"stage"},
                      {"count", TextTable::Align::kRight},
                      {"total ms", TextTable::Align::kRight},
                      {"% GPU", TextTable::Align::kRight}});
  for (const auto& s : ranking.stages) {
    by_stage.add_row(
        {s.stage, std::to_string(s.count), trace_ms(s.total_us), pct(s.share_of_gpu_time)});
  }
  out += "\nby stage\n" + by_stage.to_string();
  out += stage_evidence_lines(ranking);
  return out;
}

json step_ranking_json(const timeline::Budget& budget, const TraceSource& source) {
  json steps = json::array();
  for (const auto& step : budget.steps) {
    double total = 0;
    for (const auto& [name, us] : step.kernels) total += us;
    json kernels = json::array();
    for (const auto& [name, us] : step.kernels) {
      kernels.push_back({{"name", name},
                         {"total_us", us},
                         {"share_of_step_gpu_time", total > 0 ? us / total : 0}});
    }
    steps.push_back({{"name", step.name},
                     {"gpu_busy_us", step.gpu_busy_us},
                     {"gpu_span_us", step.gpu_span_us},
                     {"kernels", kernels}});
  }
  return {{"schema", "kprof.rank-steps/1"},
          {"tool", tool_json(source.argv)},
          {"trace", source.path},
          {"trace_format", source.stats.format},
          {"steps_from", budget.step_selector},
          {"steps", steps}};
}

std::string step_ranking_text(const timeline::Budget& budget, const TraceSource& source, size_t top,
                              size_t name_width) {
  std::string out =
      fmt::format("{}: {} step{} ({})\n", escape_for_terminal(source.path), budget.steps.size(),
                  budget.steps.size() == 1 ? "" : "s", escape_for_terminal(budget.step_selector));
  for (const auto& step : budget.steps) {
    double total = 0;
    for (const auto& [name, us] : step.kernels) total += us;
    out += fmt::format("\n{}: GPU time {} ms, GPU busy {} ms of a {} ms span\n",
                       escape_for_terminal(step.name), trace_ms(total), trace_ms(step.gpu_busy_us),
                       trace_ms(step.gpu_span_us));
    TextTable table({{"#", TextTable::Align::kRight},
                     {"kernel"},
                     {"ms", TextTable::Align::kRight},
                     {"% of step", TextTable::Align::kRight}});
    size_t shown = std::min(top, step.kernels.size());
    for (size_t i = 0; i < shown; ++i) {
      const auto& [name, us] = step.kernels[i];
      table.add_row({std::to_string(i + 1), ellipsize(name, name_width), trace_ms(us),
                     pct(total > 0 ? us / total : 0)});
    }
    out += table.to_string();
  }
  return out;
}

json dependency_waits_json(const timeline::StepBudget& step) {
  json waits = json::array();
  for (const timeline::DependencyWait& w : step.dependency_waits) {
    waits.push_back(
        {{"device", w.device},
         {"stream", w.stream ? json(*w.stream) : json(nullptr)},
         {"idle_from_us", w.idle_from_us},
         {"waited_us", w.waited_us},
         {"next_work", w.next_work},
         {"wait_call", w.wait_call},
         {"wait_call_at_us", w.wait_call_at_us},
         {"blocking_call", w.blocking_call.empty() ? json(nullptr) : json(w.blocking_call)}});
  }
  return waits;
}

namespace {

// How the steps were found, with the evidence: the annotations weighed and their share of the
// GPU time.
json step_choice_json(const timeline::StepChoice& choice) {
  json candidates = json::array();
  for (const timeline::StepCandidate& c : choice.candidates) {
    candidates.push_back({{"annotation", c.annotation},
                          {"ranges", c.ranges},
                          {"launches", c.launches},
                          {"gpu_activities", c.gpu_activities},
                          {"gpu_time_us", c.gpu_time_us},
                          {"extent_gpu_time_us", c.extent_gpu_time_us},
                          {"gpu_time_share", c.gpu_time_share},
                          {"accepted", c.accepted}});
  }
  auto or_null = [](const std::string& text) { return text.empty() ? json(nullptr) : json(text); };
  return {{"method", choice.method},
          {"engine", or_null(choice.engine)},
          {"pattern", or_null(choice.pattern)},
          {"reason", or_null(choice.reason)},
          {"min_gpu_time_share", timeline::kMinStepGpuTimeShare},
          {"candidates", candidates},
          {"trace_gpu_time_us", choice.trace_gpu_time_us},
          {"steps_gpu_time_us", choice.steps_gpu_time_us},
          {"steps_gpu_time_share",
           choice.trace_gpu_time_us > 0 ? choice.steps_gpu_time_us / choice.trace_gpu_time_us : 0}};
}

json compilation_json(const timeline::Budget& budget) {
  json ranges = json::array();
  for (const auto& r : budget.compilation_ranges) {
    ranges.push_back({{"name", r.name}, {"count", r.count}, {"time_us", r.time_us}});
  }
  return {{"time_us", budget.compilation_us},
          {"wall_share",
           budget.total_wall_span_us > 0 ? budget.compilation_us / budget.total_wall_span_us : 0},
          {"explains_host_gap", compilation_explains_host_gap(budget)},
          {"ranges", ranges}};
}

json copies_json(const std::vector<std::pair<std::string, double>>& copies) {
  json out = json::array();
  for (const auto& [name, us] : copies) out.push_back({{"name", name}, {"time_us", us}});
  return out;
}

}  // namespace

json budget_json(const timeline::Budget& budget, const timeline::BudgetThresholds& thresholds,
                 const TraceSource& source) {
  json steps = json::array();
  for (const auto& s : budget.steps) {
    json step_devices = json::array();
    for (const auto& d : s.devices) step_devices.push_back(budget_device_json(d));
    steps.push_back(
        {{"name", s.name},
         {"source", s.source},
         {"start_us", s.start_us},
         {"host_duration_us", s.host_duration_us},
         {"wall_start_us", s.wall_start_us},
         {"wall_span_us", s.wall_span_us},
         {"gpu_span_us", s.gpu_span_us},
         {"gpu_busy_us", s.gpu_busy_us},
         {"kernel_busy_us", s.kernel_busy_us},
         {"host_gap_us", s.host_gap_us},
         {"idle_before_first_us", s.idle_before_first_us},
         {"host_gap_before_first_us", s.host_gap_before_first_us},
         {"idle_after_last_us", s.idle_after_last_us},
         {"device_idle_us", s.device_idle_us},
         {"busy_fraction", s.busy_fraction},
         {"gpu_span_busy_fraction", s.gpu_span_busy_fraction},
         {"host_fed_fraction", s.host_fed_fraction},
         {"dependency_wait_us", s.dependency_wait_us},
         {"dependency_waits", dependency_waits_json(s)},
         {"other_work_us", s.other_work_us},
         {"between_steps",
          {{"activities", s.between_steps_activities}, {"time_us", s.between_steps_us}}},
         {"exposed_communication_us", s.exposed_communication_us},
         {"communication", communication_json(s.collective, s.expert_parallel)},
         {"gpu_activities", s.gpu_activities},
         {"launches", s.kernel_launches},
         {"graph_launches", s.graph_launches},
         {"captured_launches", s.captured_launches},
         {"graph_captures", s.graph_captures},
         {"verdict", timeline::step_verdict_name(s.verdict)},
         {"devices", step_devices}});
  }
  json devices = json::array();
  for (const auto& d : budget.devices) devices.push_back(budget_device_json(d));
  return {
      {"schema", "kprof.budget/1"},
      {"step_choice", step_choice_json(budget.step_choice)},
      {"other_work_us", budget.total_other_work_us},
      {"copies_alone_us", copies_alone_us(budget)},
      {"compilation", compilation_json(budget)},
      {"copies", copies_json(copies_of(budget))},
      {"between_steps",
       {{"activities", budget.between_steps_activities}, {"time_us", budget.between_steps_us}}},
      {"outside_steps",
       {{"activities", budget.outside_steps_activities}, {"time_us", budget.outside_steps_us}}},
      {"tool", tool_json(source.argv)},
      {"trace", source.path},
      {"trace_format", source.stats.format},
      {"steps_from", budget.step_selector},
      {"thresholds",
       {{"host_bound_below", thresholds.host_bound_below},
        {"kernel_bound_from", thresholds.kernel_bound_from}}},
      {"busy_fraction", busy_fraction(budget)},
      {"gpu_span_busy_fraction", gpu_span_busy_fraction(budget)},
      {"kernel_busy_fraction", kernel_busy_fraction(budget)},
      {"wall_span_us", budget.total_wall_span_us},
      {"gpu_span_us", budget.total_span_us},
      {"gpu_busy_us", budget.total_busy_us},
      {"host_gap_us", budget.total_host_gap_us},
      {"device_idle_us", budget.total_device_idle_us},
      {"host_fed_fraction", host_fed_fraction(budget)},
      {"dependency_wait_us", budget.total_dependency_wait_us},
      {"graph_capture_steps", budget.capture_steps},
      {"exposed_communication_us", budget.total_exposed_communication_us},
      {"communication", communication_json(budget.total_collective, budget.total_expert_parallel)},
      {"pre_window",
       {{"activities", budget.pre_window_activities}, {"time_us", budget.pre_window_us}}},
      {"records", records_json(budget.launch_records, source)},
      {"verdict", timeline::step_verdict_name(budget.overall)},
      {"devices", devices},
      {"advice", budget_advice(budget)},
      {"steps", steps}};
}

std::string budget_text(const timeline::Budget& budget,
                        const timeline::BudgetThresholds& thresholds, const TraceSource& source) {
  // The dependency-wait column only where a step waited (most traces have none).
  bool any_wait = false;
  for (const auto& s : budget.steps) any_wait = any_wait || s.dependency_wait_us > 0;
  std::vector<TextTable::Column> columns = {{"step"},
                                            {"host ms", TextTable::Align::kRight},
                                            {"wall ms", TextTable::Align::kRight},
                                            {"GPU span ms", TextTable::Align::kRight},
                                            {"GPU busy ms", TextTable::Align::kRight},
                                            {"host gap ms", TextTable::Align::kRight},
                                            {"device idle ms", TextTable::Align::kRight},
                                            {"busy %", TextTable::Align::kRight},
                                            {"launches", TextTable::Align::kRight},
                                            {"graphs", TextTable::Align::kRight},
                                            {"verdict"}};
  if (any_wait) columns.insert(columns.begin() + 7, {"wait ms", TextTable::Align::kRight});
  TextTable table(std::move(columns));
  for (const auto& s : budget.steps) {
    std::vector<std::string> row = {s.name,
                                    trace_ms(s.host_duration_us),
                                    trace_ms(s.wall_span_us),
                                    trace_ms(s.gpu_span_us),
                                    trace_ms(s.gpu_busy_us),
                                    trace_ms(s.host_gap_us),
                                    trace_ms(s.device_idle_us),
                                    fmt::format("{:.1f}", s.busy_fraction * 100),
                                    std::to_string(s.kernel_launches),
                                    std::to_string(s.graph_launches),
                                    timeline::step_verdict_name(s.verdict)};
    if (any_wait) row.insert(row.begin() + 7, trace_ms(s.dependency_wait_us));
    table.add_row(row);
  }
  std::string waits =
      budget.total_dependency_wait_us > 0
          ? fmt::format(", dependency waits {} ms", trace_ms(budget.total_dependency_wait_us))
          : "";
  // Other work (GPU work a step did not claim, running in its wall span) is left out of the
  // busy share's denominator: the step could not have used that time. Said wherever it applies.
  const char* less_other = budget.total_other_work_us > 0 ? " less other work" : "";
  std::string out = fmt::format(
      "{}: {} step{} ({}) — {}{}: GPU busy {:.1f}% of the steps' wall time{} (kernels alone "
      "{:.1f}%; {:.1f}% of their GPU span), {:.1f}% of the time the host kept it fed (host gap {} "
      "ms, device-side idle {} ms{})\n",
      escape_for_terminal(source.path), budget.steps.size(), budget.steps.size() == 1 ? "" : "s",
      escape_for_terminal(budget.step_selector), timeline::step_verdict_name(budget.overall),
      budget.launch_records.incomplete()
          ? fmt::format(" on incomplete records ({} of {} launches without a GPU record)",
                        budget.launch_records.without_gpu_record,
                        budget.launch_records.launch_calls)
          : std::string(),
      busy_fraction(budget) * 100, less_other, kernel_busy_fraction(budget) * 100,
      gpu_span_busy_fraction(budget) * 100, host_fed_fraction(budget) * 100,
      trace_ms(budget.total_host_gap_us), trace_ms(budget.total_device_idle_us), waits);
  if (budget.total_host_gap_before_first_us + budget.total_idle_after_last_us > 0) {
    out += fmt::format(
        "of the host gap, {} ms was before each step's first GPU work and {} ms after its last "
        "(the host preparing or finishing the step)\n",
        trace_ms(budget.total_host_gap_before_first_us), trace_ms(budget.total_idle_after_last_us));
  }
  if (budget.total_collective.time_us + budget.total_expert_parallel.time_us > 0) {
    out += "communication in the steps: " +
           communication_line("collectives", budget.total_collective) + "; " +
           communication_line("expert-parallel all-to-all", budget.total_expert_parallel) + "\n";
  }
  out += pre_window_line(budget.pre_window_activities, budget.pre_window_us);
  if (budget.between_steps_activities > 0) {
    out += fmt::format(
        "between steps: {} GPU activities ({} ms) launched after a step's annotation closed and "
        "before its process's next step opened (sampling, bookkeeping), counted in the step they "
        "follow\n",
        budget.between_steps_activities, trace_ms(budget.between_steps_us));
  }
  if (budget.outside_steps_activities > 0) {
    out += fmt::format(
        "outside the steps: {} GPU activities ({} ms, {:.1f}% of the trace's GPU time) no step "
        "claimed (before the first step, after the last, or launched where the trace does not "
        "show)\n",
        budget.outside_steps_activities, trace_ms(budget.outside_steps_us),
        budget.step_choice.trace_gpu_time_us > 0
            ? 100 * budget.outside_steps_us / budget.step_choice.trace_gpu_time_us
            : 0);
  }
  if (budget.compilation_us > 0) {
    out += fmt::format(
        "compilation and warm-up: {} ms of the steps' wall time lies in ranges that name it ({})\n",
        trace_ms(budget.compilation_us), compilation_list(budget));
  }
  if (budget.total_other_work_us > 0) {
    out += fmt::format(
        "other work: for {} ms of the steps' wall time the device ran GPU work the step did not "
        "claim (launched outside it, or its launch not in the trace): not idle, and not the "
        "step's busy time\n",
        trace_ms(budget.total_other_work_us));
  }
  if (budget.capture_steps > 0) {
    std::uint64_t captured = 0, graphs = 0;
    for (const auto& s : budget.steps) {
      if (s.verdict != timeline::StepVerdict::kGraphCapture) continue;
      captured += s.captured_launches;
      graphs += s.graph_captures;
    }
    out += fmt::format(
        "{} step{} capture{} CUDA graphs ({} capture{} ended, {} launches inside "
        "cudaStreamBeginCapture … EndCapture, which run nothing): no verdict on serving; shown, "
        "left out of the totals\n",
        budget.capture_steps, budget.capture_steps == 1 ? "" : "s",
        budget.capture_steps == 1 ? "s" : "", graphs, graphs == 1 ? "" : "s", captured);
  }
  if (budget.devices.size() > 1) {
    out += fmt::format("{} devices, each accounted on its own (step figures are their sums):\n",
                       budget.devices.size());
    for (const auto& d : budget.devices) {
      out += fmt::format(
          "  {}: {} kernels, kernel time {} ms, wall {} ms, GPU span {} ms, busy {} ms ({:.1f}% "
          "of the wall{}), host gap {} ms, device-side idle {} ms\n",
          device_name(d.device), d.kernels, trace_ms(d.kernel_time_us), trace_ms(d.wall_span_us),
          trace_ms(d.gpu_span_us), trace_ms(d.gpu_busy_us), d.busy_fraction * 100,
          d.other_work_us > 0 ? fmt::format(" less {} ms of other work", trace_ms(d.other_work_us))
                              : std::string(),
          trace_ms(d.host_idle_us), trace_ms(d.device_idle_us));
    }
  }
  out += table.to_string();
  out += fmt::format(
      "thresholds: host-bound below {}% GPU busy (of a step's wall time less its device-side "
      "idle), kernel-bound from {}%, mixed between\n",
      percent_of(thresholds.host_bound_below), percent_of(thresholds.kernel_bound_from));
  // The longest waits, with the call that made each and what the host was doing meanwhile.
  std::vector<std::pair<const timeline::StepBudget*, const timeline::DependencyWait*>> longest;
  for (const auto& s : budget.steps) {
    for (const auto& w : s.dependency_waits) longest.emplace_back(&s, &w);
  }
  std::stable_sort(longest.begin(), longest.end(), [](const auto& a, const auto& b) {
    return a.second->waited_us > b.second->waited_us;
  });
  if (!longest.empty()) out += "dependency waits (the longest):\n";
  for (size_t i = 0; i < longest.size() && i < 3; ++i) {
    const auto& [s, w] = longest[i];
    out += fmt::format(
        "  {}: {} ms idle on {}{} before {}, held by {} at {:.3f} ms{}\n",
        escape_for_terminal(s->name), trace_ms(w->waited_us), device_name(w->device),
        w->stream ? fmt::format(" stream {}", *w->stream) : std::string(),
        ellipsize(w->next_work, 60), escape_for_terminal(w->wait_call),
        (w->wait_call_at_us - s->start_us) / 1000,
        w->blocking_call.empty()
            ? std::string()
            : "; the host sat in " + escape_for_terminal(w->blocking_call) + " meanwhile");
  }
  std::string advice = budget_advice(budget);
  if (!advice.empty()) out += advice + "\n";
  return out;
}

namespace {

json spread_json(const timeline::Spread& s) {
  return {{"mean_us", s.mean},
          {"min_us", s.min},
          {"max_us", s.max},
          {"max_rank", s.max_rank},
          {"max_over_mean", s.mean > 0 ? s.max / s.mean : 0},
          {"per_rank_us", s.per_rank}};
}

std::string max_over_mean(const timeline::Spread& s) {
  return s.mean > 0 ? fmt::format("{:.2f}", s.max / s.mean) : "-";
}

json trace_list(const std::vector<TraceSource>& sources) {
  json traces = json::array();
  for (const auto& s : sources) traces.push_back(s.path);
  return traces;
}

}  // namespace

json ranks_ranking_json(const std::vector<TraceSource>& sources,
                        const std::vector<timeline::Ranking>& rankings,
                        const timeline::RankComparison& comparison) {
  json ranks = json::array();
  for (std::size_t r = 0; r < rankings.size(); ++r) {
    ranks.push_back({{"rank", r},
                     {"trace", sources[r].path},
                     {"trace_format", sources[r].stats.format},
                     {"events", sources[r].stats.events},
                     {"gpu_events", rankings[r].gpu_events},
                     {"gpu_time_us", rankings[r].gpu_time_us},
                     {"wall_us", rankings[r].wall_us},
                     {"busy_us", comparison.busy_us.per_rank[r]},
                     {"exposed_communication_us", comparison.exposed_communication_us.per_rank[r]},
                     {"devices", ranking_devices_json(rankings[r])}});
  }
  json kernels = json::array();
  for (const auto& k : comparison.kernels) {
    json row = spread_json(k.total_us);
    row["name"] = k.name;
    row["stage"] = k.stage;
    kernels.push_back(row);
  }
  json stages = json::array();
  for (const auto& s : comparison.stages) {
    json row = spread_json(s.total_us);
    row["stage"] = s.name;
    stages.push_back(row);
  }
  return {{"schema", "kprof.rank-ranks/1"},
          {"tool", tool_json(sources.front().argv)},
          {"traces", trace_list(sources)},
          {"ranks", ranks},
          {"gpu_time_us", spread_json(comparison.gpu_time_us)},
          {"exposed_communication_us", spread_json(comparison.exposed_communication_us)},
          {"stages", stages},
          {"kernels", kernels}};
}

std::string ranks_ranking_text(const std::vector<TraceSource>& sources,
                               const std::vector<timeline::Ranking>& rankings,
                               const timeline::RankComparison& comparison, size_t top,
                               size_t name_width) {
  std::string out = fmt::format(
      "{} ranks, one trace each, each ranked on its own; spread across ranks below (max/mean 1.00: "
      "balanced)\n",
      rankings.size());
  TextTable ranks({{"rank", TextTable::Align::kRight},
                   {"trace"},
                   {"GPU activities", TextTable::Align::kRight},
                   {"devices", TextTable::Align::kRight},
                   {"GPU time ms", TextTable::Align::kRight},
                   {"busy ms", TextTable::Align::kRight},
                   {"comm ms", TextTable::Align::kRight},
                   {"exposed comm ms", TextTable::Align::kRight}});
  for (std::size_t r = 0; r < rankings.size(); ++r) {
    double comm = 0;
    for (const auto& d : rankings[r].devices) comm += d.communication_us;
    ranks.add_row({std::to_string(r), escape_for_terminal(sources[r].path),
                   std::to_string(rankings[r].gpu_events),
                   std::to_string(rankings[r].devices.size()), trace_ms(rankings[r].gpu_time_us),
                   trace_ms(comparison.busy_us.per_rank[r]), trace_ms(comm),
                   trace_ms(comparison.exposed_communication_us.per_rank[r])});
  }
  out += ranks.to_string();
  out += fmt::format(
      "GPU time across ranks: mean {} ms, min {} ms, max {} ms (rank {}), max/mean {}; exposed "
      "communication: mean {} ms, max {} ms (rank {})\n",
      trace_ms(comparison.gpu_time_us.mean), trace_ms(comparison.gpu_time_us.min),
      trace_ms(comparison.gpu_time_us.max), comparison.gpu_time_us.max_rank,
      max_over_mean(comparison.gpu_time_us), trace_ms(comparison.exposed_communication_us.mean),
      trace_ms(comparison.exposed_communication_us.max),
      comparison.exposed_communication_us.max_rank);
  TextTable stages({{"stage"},
                    {"mean ms", TextTable::Align::kRight},
                    {"min ms", TextTable::Align::kRight},
                    {"max ms", TextTable::Align::kRight},
                    {"max/mean", TextTable::Align::kRight},
                    {"max rank", TextTable::Align::kRight}});
  for (const auto& s : comparison.stages) {
    stages.add_row({s.name, trace_ms(s.total_us.mean), trace_ms(s.total_us.min),
                    trace_ms(s.total_us.max), max_over_mean(s.total_us),
                    std::to_string(s.total_us.max_rank)});
  }
  out += "\nby stage, across ranks\n" + stages.to_string();
  TextTable kernels({{"#", TextTable::Align::kRight},
                     {"kernel"},
                     {"stage"},
                     {"mean ms", TextTable::Align::kRight},
                     {"min ms", TextTable::Align::kRight},
                     {"max ms", TextTable::Align::kRight},
                     {"max/mean", TextTable::Align::kRight},
                     {"max rank", TextTable::Align::kRight}});
  std::size_t shown = std::min(top, comparison.kernels.size());
  for (std::size_t i = 0; i < shown; ++i) {
    const auto& k = comparison.kernels[i];
    kernels.add_row({std::to_string(i + 1), ellipsize(k.name, name_width), k.stage,
                     trace_ms(k.total_us.mean), trace_ms(k.total_us.min), trace_ms(k.total_us.max),
                     max_over_mean(k.total_us), std::to_string(k.total_us.max_rank)});
  }
  out += "\nkernels, across ranks (by mean GPU time)\n" + kernels.to_string();
  if (shown < comparison.kernels.size()) {
    out += fmt::format("… {} more names (--top N shows more)\n", comparison.kernels.size() - shown);
  }
  return out;
}

json ranks_budget_json(const std::vector<TraceSource>& sources,
                       const std::vector<timeline::Budget>& budgets,
                       const std::vector<timeline::StepComparison>& steps,
                       const timeline::BudgetThresholds& thresholds) {
  json ranks = json::array();
  for (std::size_t r = 0; r < budgets.size(); ++r) {
    const timeline::Budget& b = budgets[r];
    json devices = json::array();
    for (const auto& d : b.devices) devices.push_back(budget_device_json(d));
    ranks.push_back({{"rank", r},
                     {"trace", sources[r].path},
                     {"trace_format", sources[r].stats.format},
                     {"steps_from", b.step_selector},
                     {"steps", b.steps.size()},
                     {"wall_span_us", b.total_wall_span_us},
                     {"gpu_span_us", b.total_span_us},
                     {"gpu_busy_us", b.total_busy_us},
                     {"host_gap_us", b.total_host_gap_us},
                     {"device_idle_us", b.total_device_idle_us},
                     {"exposed_communication_us", b.total_exposed_communication_us},
                     {"busy_fraction", busy_fraction(b)},
                     {"host_fed_fraction", host_fed_fraction(b)},
                     {"verdict", timeline::step_verdict_name(b.overall)},
                     {"devices", devices}});
  }
  json step_list = json::array();
  for (const auto& s : steps) {
    step_list.push_back({{"index", s.index},
                         {"name", s.name},
                         {"slowest_rank", s.gpu_span_us.max_rank},
                         {"gpu_span", spread_json(s.gpu_span_us)},
                         {"gpu_busy", spread_json(s.gpu_busy_us)},
                         {"host_gap", spread_json(s.host_gap_us)},
                         {"exposed_communication", spread_json(s.exposed_communication_us)}});
  }
  return {{"schema", "kprof.budget-ranks/1"},
          {"tool", tool_json(sources.front().argv)},
          {"traces", trace_list(sources)},
          {"thresholds",
           {{"host_bound_below", thresholds.host_bound_below},
            {"kernel_bound_from", thresholds.kernel_bound_from}}},
          {"ranks", ranks},
          {"steps", step_list}};
}

std::string ranks_budget_text(const std::vector<TraceSource>& sources,
                              const std::vector<timeline::Budget>& budgets,
                              const std::vector<timeline::StepComparison>& steps,
                              const timeline::BudgetThresholds& thresholds) {
  std::string out =
      fmt::format("{} ranks, one trace each, {} steps each ({}), aligned by position\n",
                  budgets.size(), steps.size(), escape_for_terminal(budgets.front().step_selector));
  TextTable ranks({{"rank", TextTable::Align::kRight},
                   {"trace"},
                   {"GPU span ms", TextTable::Align::kRight},
                   {"GPU busy ms", TextTable::Align::kRight},
                   {"host gap ms", TextTable::Align::kRight},
                   {"device idle ms", TextTable::Align::kRight},
                   {"exposed comm ms", TextTable::Align::kRight},
                   {"verdict"}});
  for (std::size_t r = 0; r < budgets.size(); ++r) {
    const timeline::Budget& b = budgets[r];
    ranks.add_row(
        {std::to_string(r), escape_for_terminal(sources[r].path), trace_ms(b.total_span_us),
         trace_ms(b.total_busy_us), trace_ms(b.total_host_gap_us), trace_ms(b.total_device_idle_us),
         trace_ms(b.total_exposed_communication_us), timeline::step_verdict_name(b.overall)});
  }
  out += ranks.to_string();
  TextTable table({{"step"},
                   {"slowest rank", TextTable::Align::kRight},
                   {"span max ms", TextTable::Align::kRight},
                   {"span min ms", TextTable::Align::kRight},
                   {"span mean ms", TextTable::Align::kRight},
                   {"host gap max ms", TextTable::Align::kRight},
                   {"exposed comm max ms", TextTable::Align::kRight}});
  for (const auto& s : steps) {
    table.add_row({escape_for_terminal(s.name), std::to_string(s.gpu_span_us.max_rank),
                   trace_ms(s.gpu_span_us.max), trace_ms(s.gpu_span_us.min),
                   trace_ms(s.gpu_span_us.mean), trace_ms(s.host_gap_us.max),
                   trace_ms(s.exposed_communication_us.max)});
  }
  out +=
      "\nper step, across ranks (the slowest rank has the longest GPU span)\n" + table.to_string();
  out += fmt::format(
      "thresholds: host-bound below {}% GPU busy (of a step's wall time less its device-side "
      "idle), kernel-bound from {}%, mixed between\n",
      percent_of(thresholds.host_bound_below), percent_of(thresholds.kernel_bound_from));
  return out;
}

}  // namespace kprof::render
