#include "timeline/kernel_ranking.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <limits>

#include "timeline/launch_join.h"
#include "timeline/op_attribution.h"

namespace kprof::timeline {

std::string normalize_kernel_name(std::string_view name) {
  if (name.rfind("void ", 0) == 0) name.remove_prefix(5);
  // Cut a trailing parameter list "(...)", matching parentheses from the end.
  if (!name.empty() && name.back() == ')') {
    int depth = 0;
    for (size_t i = name.size(); i-- > 0;) {
      if (name[i] == ')') ++depth;
      if (name[i] == '(' && --depth == 0) {
        // "(anonymous namespace)" inside a name is not a parameter list.
        if (i > 0) name = name.substr(0, i);
        break;
      }
    }
  }
  return std::string(name);
}

bool RankingBuilder::wants_category(std::string_view category) const {
  // Launch calls too: their correlation ids tell work enqueued before the window.
  return category == "kernel" || category == "gpu_memcpy" || category == "gpu_memset" ||
         category == "cuda_runtime" || category == "cuda_driver";
}

// The first launch id of the trace's one launching process; none when several launched (a row
// that names no process cannot be told to one of them) or none did.
const std::int64_t* RankingBuilder::first_launch() const {
  return first_launch_.size() == 1 ? &first_launch_.begin()->second : nullptr;
}

bool RankingBuilder::records_every_launch() const {
  const std::int64_t* first = first_launch();
  if (!first) return false;
  const CorrelationBits& launches = launch_ids_.begin()->second;
  std::uint64_t work = 0, launched = 0;
  for (const auto& [word, bits] : work_ids_.words) {
    for (int bit = 0; bit < 64; ++bit) {
      std::int64_t id = word * 64 + bit;
      if ((bits >> bit & 1) == 0 || id < *first) continue;
      ++work;
      launched += launches.test(id);
    }
  }
  // 99 %: a launch or two lost at the window's edge does not undo the rule.
  return work > 0 && launched * 100 >= work * 99;
}

LaunchRecords RankingBuilder::launch_records() const {
  // Each capture's span of ids: its Begin call's to the first End call of its thread after it.
  std::map<std::int64_t, std::vector<std::pair<std::int64_t, std::int64_t>>> captures;
  std::vector<CaptureCall> ends = capture_ends_;
  std::sort(ends.begin(), ends.end());
  for (const CaptureCall& begin : capture_begins_) {
    auto end = std::lower_bound(ends.begin(), ends.end(), begin);
    bool closed = end != ends.end() && end->process == begin.process && end->thread == begin.thread;
    captures[begin.process].emplace_back(
        begin.correlation, closed ? end->correlation : std::numeric_limits<std::int64_t>::max());
  }
  static const CorrelationBits kNone;
  LaunchRecords records;
  for (const auto& [process, launches] : kernel_launch_ids_) {
    auto own = process_work_ids_.find(process);
    const CorrelationBits& own_work = own == process_work_ids_.end() ? kNone : own->second;
    auto spans = captures.find(process);
    for (const auto& [word_index, bits] : launches.words) {
      // A copy: clang 14 captures no structured binding in a lambda.
      const std::int64_t word = word_index;
      auto word_of = [&](const CorrelationBits& b) {
        auto found = b.words.find(word);
        return found == b.words.end() ? std::uint64_t{0} : found->second;
      };
      std::uint64_t missing = bits & ~word_of(own_work) & ~word_of(work_ids_);
      std::uint64_t launched = static_cast<std::uint64_t>(std::popcount(bits));
      for (int bit = 0; missing != 0 && bit < 64; ++bit) {
        if ((missing >> bit & 1) == 0 || spans == captures.end()) continue;
        std::int64_t id = word * 64 + bit;
        for (const auto& [from, to] : spans->second) {
          if (id > from && id < to) {
            missing &= ~(std::uint64_t{1} << bit);
            --launched;  // captured: enqueues nothing
            break;
          }
        }
      }
      records.launch_calls += launched;
      records.without_gpu_record += static_cast<std::uint64_t>(std::popcount(missing));
    }
  }
  return records;
}

// Only a Chrome trace's GPU rows, which name no process: Kineto records GPU activities from its
// warm-up on but CPU events only inside its window. An Nsight Systems export (every row names its
// process) records API calls and GPU work from one start, and its work below the first recorded
// launch came from calls it did not export (the driver API's), not from before.
std::optional<bool> RankingBuilder::before_window(const importers::TraceEvent& event) const {
  // An id of 0 or below is no launch's (CUPTI numbers from 1).
  if (!event.correlation || *event.correlation <= 0 || event.process || first_launch_.size() > 1) {
    return false;
  }
  const std::int64_t* first = first_launch();
  // At or above a launch already seen: not before the window, whatever launches come later.
  if (first && *event.correlation >= *first) return false;
  return std::nullopt;  // a lower launch id may still come
}

namespace {

// The event a held row stands for (its strings stay the row's).
template <typename Held>
importers::TraceEvent event_of(const Held& w) {
  importers::TraceEvent event;
  event.category = w.category;
  event.name = w.name;
  event.timestamp_us = w.timestamp_us;
  event.duration_us = w.duration_us;
  event.device = w.device;
  event.correlation = w.correlation;
  return event;
}

}  // namespace

void RankingBuilder::release_decided() {
  std::vector<HeldWork> held = std::move(held_);
  held_.clear();
  for (HeldWork& w : held) {
    importers::TraceEvent event = event_of(w);
    if (before_window(event).has_value()) {
      add_gpu_work(event);
    } else {
      held_.push_back(std::move(w));
    }
  }
}

void RankingBuilder::release_held() {
  std::vector<HeldWork> held = std::move(held_);
  held_.clear();
  holding_ = false;
  for (const HeldWork& w : held) add_gpu_work(event_of(w));
}

void RankingBuilder::extend_span(double timestamp_us, double duration_us) {
  ++totals_.trace_events;
  double end = timestamp_us + duration_us;
  if (!any_ || timestamp_us < first_start_) first_start_ = timestamp_us;
  if (!any_ || end > last_end_) last_end_ = end;
  any_ = true;
}

void RankingBuilder::on_span(double timestamp_us, double duration_us) {
  extend_span(timestamp_us, duration_us);
}

void RankingBuilder::on_event(const importers::TraceEvent& event) {
  extend_span(event.timestamp_us, event.duration_us);
  if (event.category == "cuda_runtime" || event.category == "cuda_driver") {
    if (event.correlation && (event.name.find("BeginCapture") != std::string_view::npos ||
                              event.name.find("EndCapture") != std::string_view::npos)) {
      CaptureCall call{event.process.value_or(event.pid), event.tid, *event.correlation};
      (event.name.find("Begin") != std::string_view::npos ? capture_begins_ : capture_ends_)
          .push_back(call);
    }
    if (event.correlation && is_launch_call(event.name)) {
      std::int64_t process = event.process.value_or(event.pid);
      auto [it, added] = first_launch_.try_emplace(process, *event.correlation);
      bool lowered = !added && *event.correlation < it->second;
      if (lowered) it->second = *event.correlation;
      launch_ids_[process].set(*event.correlation);
      if (launch_kind(event.name) == LaunchKind::kKernel) {
        kernel_launch_ids_[process].set(*event.correlation);
      }
      // Held work that this launch decides (at or above it, or a second launching process) is
      // counted now, while the busy union still holds its time: released at finish() it would
      // come after the union closed its pieces. Only a new or lower first launch decides any.
      if ((added || lowered) && !held_.empty()) release_decided();
    }
    return;
  }
  if (event.correlation) {
    (event.process ? process_work_ids_[*event.process] : work_ids_).set(*event.correlation);
  }
  if (holding_ && !before_window(event).has_value()) {
    held_.push_back({std::string(event.category), std::string(event.name), event.timestamp_us,
                     event.duration_us, event.device, event.correlation});
    if (held_.size() > kMaxHeld) release_held();
    return;
  }
  add_gpu_work(event);
}

void RankingBuilder::add_gpu_work(const importers::TraceEvent& event) {
  const char* kind = nullptr;
  if (event.category == "kernel") {
    kind = "kernel";
    ++totals_.kernel_events;
  } else if (event.category == "gpu_memcpy") {
    kind = "memcpy";
    ++totals_.memcpy_events;
  } else if (event.category == "gpu_memset") {
    kind = "memset";
    ++totals_.memset_events;
  } else {
    return;
  }
  ++totals_.gpu_events;
  totals_.gpu_time_us += event.duration_us;
  auto cached = by_raw_name_.find(event.name);
  KernelStats& stats = cached != by_raw_name_.end() ? *cached->second : row_of(event, kind);
  add_to(stats, event);
}

KernelStats& RankingBuilder::row_of(const importers::TraceEvent& event, const char* kind) {
  std::string key = normalize_ ? normalize_kernel_name(event.name) : std::string(event.name);
  auto it = by_name_.find(key);
  if (it == by_name_.end()) {
    KernelStats stats;
    stats.name = key;
    stats.kind = kind;
    if (kind == std::string_view("kernel")) {
      analysis::StageDecision stage = stages_.decide_by_name(event.name);
      stats.stage = std::move(stage.stage);
      stats.stage_source = analysis::stage_source_name(stage.source);
      stats.stage_evidence = std::move(stage.evidence);
      // A code generator's name (a rule marked "generated"); a name no rule matched is "other"
      // whatever evidence comes.
      stats.stage_unresolved =
          stage.name_names_no_operation && stage.source == analysis::StageSource::kName;
      stats.stage_needs_evidence = stage.name_names_no_operation || stats.stage == "attention";
    } else {
      stats.stage = "memory";
      stats.stage_source = "name";
      stats.stage_evidence = std::string("a ") + kind + ", not a kernel";
    }
    stats.min_us = stats.max_us = event.duration_us;
    // A collective, or an expert-parallel all-to-all whose stage stays MoE's (DeepEP's dispatch).
    // Its kind, asked once per name (the rules are regular expressions).
    stats.communication_kind = kind == std::string_view("kernel")
                                   ? stages_.communication_kind(event.name)
                                   : analysis::CommunicationKind::kNone;
    stats.communication = stats.communication_kind != analysis::CommunicationKind::kNone;
    it = by_name_.emplace(key, std::move(stats)).first;
  }
  by_raw_name_.emplace(std::string(event.name), &it->second);
  return it->second;
}

void RankingBuilder::add_to(KernelStats& stats, const importers::TraceEvent& event) {
  auto [place, added] = devices_.try_emplace(event.device.value_or(-1));
  DeviceState& device = place->second;
  if (added) {
    device.stats.device = place->first;
    device.first = event.timestamp_us;
    device.last = event.timestamp_us + event.duration_us;
  }
  device.first = std::min(device.first, event.timestamp_us);
  device.last = std::max(device.last, event.timestamp_us + event.duration_us);
  ++device.stats.gpu_events;
  device.stats.gpu_time_us += event.duration_us;
  if (stats.kind == "kernel") {
    ++device.stats.kernel_events;
    device.stats.kernel_time_us += event.duration_us;
  }
  double end = event.timestamp_us + event.duration_us;
  device.all.add(event.timestamp_us, end);
  if (stats.communication) {
    device.stats.communication_us += event.duration_us;
  } else {
    device.other_than_communication.add(event.timestamp_us, end);
  }
  bool collective = stats.communication_kind == analysis::CommunicationKind::kCollective;
  bool expert_parallel = stats.communication_kind == analysis::CommunicationKind::kExpertParallel;
  (collective ? device.collective : device.other_than_collective).add(event.timestamp_us, end);
  (expert_parallel ? device.expert_parallel : device.other_than_expert_parallel)
      .add(event.timestamp_us, end);
  ++stats.count;
  stats.total_us += event.duration_us;
  stats.min_us = std::min(stats.min_us, event.duration_us);
  stats.max_us = std::max(stats.max_us, event.duration_us);
}

Ranking RankingBuilder::finish() {
  // What was held: before the window when below the first launch of its process, else counted.
  std::vector<HeldWork> held = std::move(held_);
  held_.clear();
  const std::int64_t* first = first_launch();
  bool every_launch = records_every_launch();
  for (HeldWork& w : held) {
    if (w.correlation && first && *w.correlation < *first && every_launch) {
      ++totals_.pre_window_activities;
      totals_.pre_window_us += w.duration_us;
    } else {
      held_.push_back(std::move(w));
    }
  }
  release_held();
  Ranking ranking = totals_;
  ranking.launch_records = launch_records();
  ranking.wall_us = any_ ? last_end_ - first_start_ : 0;
  for (const auto& [id, state] : devices_) {
    DeviceStats device = state.stats;
    device.span_us = state.last - state.first;
    device.busy_us = state.all.length();
    device.busy_fraction = device.span_us > 0 ? device.busy_us / device.span_us : 0;
    device.exposed_communication_us =
        std::max(0.0, device.busy_us - state.other_than_communication.length());
    device.collective = {state.collective.length(),
                         std::max(0.0, device.busy_us - state.other_than_collective.length())};
    device.expert_parallel = {
        state.expert_parallel.length(),
        std::max(0.0, device.busy_us - state.other_than_expert_parallel.length())};
    device.late_intervals =
        state.all.late_intervals() + state.other_than_communication.late_intervals();
    ranking.devices.push_back(device);
  }
  double device_wall_us =
      ranking.wall_us * static_cast<double>(std::max<size_t>(1, devices_.size()));
  for (const auto& [name, stats] : by_name_) {
    KernelStats row = stats;
    row.share_of_gpu_time = ranking.gpu_time_us > 0 ? row.total_us / ranking.gpu_time_us : 0;
    row.share_of_wall = device_wall_us > 0 ? row.total_us / device_wall_us : 0;
    ranking.kernels.push_back(row);
  }
  std::stable_sort(
      ranking.kernels.begin(), ranking.kernels.end(),
      [](const KernelStats& a, const KernelStats& b) { return a.total_us > b.total_us; });
  sum_stages(ranking);
  return ranking;
}

namespace {

// One kernel's time under one decision, and the operators behind it.
struct DecidedTime {
  analysis::StageDecision decision;
  double total_us = 0;
  std::map<std::string, double> ops;  // operator -> time
};

}  // namespace

void restage_by_launches(Ranking& ranking, const std::vector<LaunchedKernel>& launched,
                         const analysis::StageTable& stages) {
  std::map<std::string_view, std::vector<const LaunchedKernel*>> by_kernel;
  for (const LaunchedKernel& l : launched) by_kernel[l.kernel].push_back(&l);
  bool changed = false;
  for (KernelStats& row : ranking.kernels) {
    if (row.kind != "kernel" || !row.stage_needs_evidence) continue;
    auto found = by_kernel.find(normalize_kernel_name(row.name));
    if (found == by_kernel.end()) continue;
    analysis::StageDecision by_name = stages.decide_by_name(row.name);
    // Time per resulting stage; the time no launch joined stays the name's.
    std::map<std::string, DecidedTime> decided;
    double joined_us = 0;
    for (const LaunchedKernel* l : found->second) {
      analysis::StageDecision d = stages.decide_launch(by_name, l->op);
      if (l->decode_only_step.value_or(false)) {
        std::string in_step = analysis::stage_in_step(d.stage, analysis::StepPhase::kDecodeOnly);
        if (in_step != d.stage) {
          d.stage = std::move(in_step);
          d.source = analysis::StageSource::kStep;
          d.evidence =
              "name (attention, its phase not in it) and its steps: decode-only (no "
              "prefill request in the step's name)";
        }
      }
      DecidedTime& time = decided[d.stage];
      if (time.total_us == 0 || d.source != analysis::StageSource::kName) time.decision = d;
      time.total_us += l->total_us;
      if (d.source == analysis::StageSource::kOperator) time.ops[l->op] += l->total_us;
      joined_us += l->total_us;
    }
    DecidedTime& name_time = decided[by_name.stage];
    if (name_time.total_us == 0) name_time.decision = by_name;
    name_time.total_us += std::max(0.0, row.total_us - joined_us);
    const DecidedTime* best = nullptr;
    for (const auto& [stage, time] : decided) {
      if (!best || time.total_us > best->total_us) best = &time;
    }
    if (!best || best->decision.source == analysis::StageSource::kName ||
        best->decision.source == analysis::StageSource::kNoEvidence) {
      continue;
    }
    analysis::StageDecision d = best->decision;
    if (d.source == analysis::StageSource::kOperator && !best->ops.empty()) {
      // The operator carrying most of the time names the evidence; the others are counted.
      auto top = std::max_element(best->ops.begin(), best->ops.end(),
                                  [](const auto& a, const auto& b) { return a.second < b.second; });
      d.evidence = fmt::format("operator {}", top->first);
      if (best->ops.size() > 1) d.evidence += fmt::format(" (and {} more)", best->ops.size() - 1);
    }
    if (best->total_us < row.total_us * 0.999) {
      d.evidence += fmt::format(", {:.0f}% of its time", 100 * best->total_us / row.total_us);
    }
    row.stage = d.stage;
    row.stage_source = analysis::stage_source_name(d.source);
    row.stage_evidence = d.evidence;
    row.stage_unresolved = false;
    changed = true;
  }
  if (changed) sum_stages(ranking);
}

std::set<std::string, std::less<>> kernels_needing_evidence(const Ranking& ranking) {
  std::set<std::string, std::less<>> names;
  for (const KernelStats& row : ranking.kernels) {
    if (row.kind == "kernel" && row.stage_needs_evidence) {
      names.insert(normalize_kernel_name(row.name));
    }
  }
  return names;
}

double unresolved_stage_share(const Ranking& ranking) {
  double unresolved = 0;
  for (const KernelStats& row : ranking.kernels) {
    if (row.stage_unresolved) unresolved += row.total_us;
  }
  return ranking.gpu_time_us > 0 ? unresolved / ranking.gpu_time_us : 0;
}

void sum_stages(Ranking& ranking) {
  // Summed in name order, as the rows were gathered: the totals do not depend on the ranking.
  std::vector<const KernelStats*> rows;
  for (const KernelStats& row : ranking.kernels) rows.push_back(&row);
  std::sort(rows.begin(), rows.end(),
            [](const KernelStats* a, const KernelStats* b) { return a->name < b->name; });
  std::map<std::string, StageStats> stages;
  for (const KernelStats* pointer : rows) {
    const KernelStats& row = *pointer;
    StageStats& stage = stages[row.stage];
    stage.stage = row.stage;
    stage.count += row.count;
    stage.total_us += row.total_us;
  }
  ranking.stages.clear();
  for (auto& [name, stage] : stages) {
    stage.share_of_gpu_time = ranking.gpu_time_us > 0 ? stage.total_us / ranking.gpu_time_us : 0;
    ranking.stages.push_back(stage);
  }
  std::stable_sort(
      ranking.stages.begin(), ranking.stages.end(),
      [](const StageStats& a, const StageStats& b) { return a.total_us > b.total_us; });
}

}  // namespace kprof::timeline
