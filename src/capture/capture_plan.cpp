#include "capture/capture_plan.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "common/utf8.h"
#include "render/envelope.h"
#include "render/table.h"

namespace kprof::capture {
namespace {

// The version the pass counts were measured with (bench/README.md).
constexpr NcuVersion kMeasuredWith{2025, 3, 1};

// The sister's memory fraction when the live engine's save does not fit (k8s sister
// --memory-fraction): below one half the save stays in device memory (bench/capture-cost.sh).
constexpr double kSisterMemoryFraction = 0.45;

double round3(double value) { return std::round(value * 1000) / 1000; }

std::string seconds_text(double seconds) {
  if (seconds < 10) return fmt::format("{:.2f} s", seconds);
  return fmt::format("{:.1f} s", seconds);
}

std::string shell_quote(const std::string& text) {
  if (!text.empty() && text.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVW"
                                              "XYZ0123456789_-.:/=") == std::string::npos)
    return text;
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// The kept kernels' launches of the trace, step by step, in the order the program made them;
// a capture profiles them after its skip, repeated (a server runs the same steps again).
std::vector<pipeline::PlanTraceLaunch> kept_launches(const pipeline::PlanTrace& trace,
                                                     const std::vector<std::size_t>& kernels) {
  std::set<std::size_t> kept(kernels.begin(), kernels.end());
  std::vector<pipeline::PlanTraceLaunch> launches;
  for (const pipeline::PlanTraceLaunch& launch : trace.launches)
    if (kept.count(launch.kernel)) launches.push_back(launch);
  return launches;
}

std::int64_t asked_count(const PlannedCapture& capture, const pipeline::PlanTrace& trace) {
  if (std::optional<std::int64_t> count = effective_launch_count(capture.spec)) return *count;
  return static_cast<std::int64_t>(kept_launches(trace, capture.kernels).size());
}

double replay_s(double duration_us, const PassFigure& passes, std::optional<double> resident_gb,
                bool host_backup) {
  double resident = resident_gb.value_or(0);
  double duration_s = duration_us / 1e6;
  if (host_backup) return passes.passes * duration_s + resident * kHostBackupPerGbS;
  return passes.passes * (duration_s + kPassFixedS + resident * kPassPerGbS);
}

bool backs_up_to_host(const PlanLimits& limits, std::optional<double> resident_gb) {
  return limits.device_gb && resident_gb && *resident_gb > *limits.device_gb - *resident_gb;
}

CaptureCost cost_of(const PlannedCapture& capture, const pipeline::PlanTrace& trace,
                    const PlanLimits& limits) {
  CaptureCost cost;
  cost.passes = preset_passes(capture.spec);
  cost.host_backup = backs_up_to_host(limits, capture.resident_gb);
  std::vector<pipeline::PlanTraceLaunch> launches = kept_launches(trace, capture.kernels);
  cost.launches = asked_count(capture, trace);
  std::int64_t skip = capture.spec.launch_skip.value_or(0);
  std::map<std::uint64_t, double> stall_by_step;
  std::map<std::size_t, std::int64_t> launches_by_kernel;
  double replay_total = 0;
  std::uint64_t last_step = 0;
  if (!launches.empty()) {
    for (std::int64_t i = 0; i < cost.launches; ++i) {
      std::uint64_t at = static_cast<std::uint64_t>(skip + i);
      const pipeline::PlanTraceLaunch& launch = launches[at % launches.size()];
      std::uint64_t step = at / launches.size() * trace.steps + launch.step;
      double seconds =
          replay_s(launch.duration_us, cost.passes, capture.resident_gb, cost.host_backup);
      replay_total += seconds;
      stall_by_step[step] += seconds;
      cost.replay_s_longest = std::max(cost.replay_s_longest, seconds);
      ++launches_by_kernel[launch.kernel];
      last_step = step;
    }
  }
  for (const auto& [step, seconds] : stall_by_step)
    cost.longest_stall_s = std::max(cost.longest_stall_s, seconds);
  cost.steps_run = cost.launches > 0 ? static_cast<double>(last_step + 1) : 0;
  cost.ncu_wall_s = kAttachS + replay_total + cost.steps_run * trace.mean_step_wall_us / 1e6;
  for (std::size_t index : capture.kernels) {
    CaptureCost::Kernel kernel;
    kernel.index = index;
    kernel.launches = launches_by_kernel[index];
    kernel.replay_s =
        replay_s(trace.kernels[index].mean_us, cost.passes, capture.resident_gb, cost.host_backup);
    cost.kernels.push_back(kernel);
  }
  return cost;
}

std::vector<LimitCheck> check(const PlannedCapture& capture, const CaptureCost& cost,
                              const PlanLimits& limits) {
  std::vector<LimitCheck> checks;
  // The sister has no probes and serves no one: only the memory and the time budget bind it.
  if (!capture.sister) {
    for (const ProbeBudget& probe : limits.probes) {
      LimitCheck c;
      c.limit = probe.probe + "_probe";
      c.allowed = probe.budget_s();
      c.planned = round3(cost.longest_stall_s);
      c.unit = "s";
      c.over = cost.longest_stall_s > probe.budget_s();
      c.what = fmt::format("{} probe: period {} s × failure threshold {} ({})", probe.probe,
                           probe.period_s, probe.failure_threshold, probe.from);
      checks.push_back(c);
    }
    if (limits.slo_p99_ms) {
      LimitCheck c;
      c.limit = "slo_p99";
      c.allowed = *limits.slo_p99_ms;
      c.planned = round3(cost.longest_stall_s * 1000);
      c.unit = "ms";
      c.over = c.planned > c.allowed;
      c.what = "--slo-p99-ms: a request in flight during the longest stall waits at least as long";
      checks.push_back(c);
    }
  }
  if (limits.device_gb && capture.resident_gb) {
    LimitCheck c;
    c.limit = "device_memory";
    c.allowed = round3(*limits.device_gb - *capture.resident_gb);
    c.planned = round3(*capture.resident_gb);
    c.unit = "GB";
    c.over = cost.host_backup;
    c.what = fmt::format("ncu saves the engine's resident memory ({}) in what is free of {} GB",
                         limits.memory_from, *limits.device_gb);
    checks.push_back(c);
  }
  if (limits.budget_s) {
    LimitCheck c;
    c.limit = "budget";
    c.allowed = *limits.budget_s;
    c.planned = round3(cost.ncu_wall_s);
    c.unit = "s";
    c.over = cost.ncu_wall_s > *limits.budget_s;
    c.what = "--budget: the capture's wall time";
    checks.push_back(c);
  }
  return checks;
}

bool any_over(const std::vector<LimitCheck>& checks) {
  return std::any_of(checks.begin(), checks.end(), [](const LimitCheck& c) { return c.over; });
}

std::vector<Preset> lighter_presets(Preset preset) {
  switch (preset) {
    case Preset::kFull:
    case Preset::kCustom:
      return {Preset::kTriage, Preset::kBasic};
    case Preset::kTriage:
      return {Preset::kBasic};
    case Preset::kBasic:
      return {};
  }
  return {};
}

// The kernels whose one launch fits `allowance` seconds, whole function names only (a regex over
// function names cannot split two kernels that share one).
std::vector<std::size_t> kernels_that_fit(const PlannedCapture& capture,
                                          const pipeline::PlanTrace& trace,
                                          const PlanLimits& limits, double allowance) {
  PassFigure passes = preset_passes(capture.spec);
  bool host = backs_up_to_host(limits, capture.resident_gb);
  std::map<std::string, bool> function_fits;
  for (std::size_t index : capture.kernels) {
    const pipeline::PlanTraceKernel& kernel = trace.kernels[index];
    bool fits = replay_s(kernel.max_us, passes, capture.resident_gb, host) <= allowance;
    auto [it, added] = function_fits.try_emplace(kernel.function_name, fits);
    if (!added) it->second = it->second && fits;
  }
  std::vector<std::size_t> kept;
  for (std::size_t index : capture.kernels)
    if (function_fits[trace.kernels[index].function_name]) kept.push_back(index);
  return kept;
}

std::string function_regex(const std::vector<std::size_t>& kernels,
                           const pipeline::PlanTrace& trace) {
  std::set<std::string> names;
  for (std::size_t index : kernels) names.insert(trace.kernels[index].function_name);
  std::string alternatives;
  for (const std::string& name : names)
    alternatives += (alternatives.empty() ? "" : "|") + RE2::QuoteMeta(name);
  return "^(?:" + alternatives + ")$";
}

// The largest launch count (≤ `most`) at which `capture` fits every limit; 0 when not even one.
std::int64_t largest_count_that_fits(PlannedCapture capture, std::int64_t most,
                                     const pipeline::PlanTrace& trace, const PlanLimits& limits) {
  auto fits = [&](std::int64_t count) {
    capture.spec.launch_count = count;
    return !any_over(check(capture, cost_of(capture, trace, limits), limits));
  };
  if (most < 1 || !fits(1)) return 0;
  std::int64_t good = 1, bad = most + 1;  // the cost grows with the count: a bisection
  while (bad - good > 1) {
    std::int64_t middle = good + (bad - good) / 2;
    (fits(middle) ? good : bad) = middle;
  }
  return good;
}

// The stall one launch may cost on the live replica: the tightest probe or SLO.
double stall_allowance(const PlanLimits& limits) {
  double allowance = limits.budget_s ? *limits.budget_s - kAttachS : 1e300;
  for (const ProbeBudget& probe : limits.probes) allowance = std::min(allowance, probe.budget_s());
  if (limits.slo_p99_ms) allowance = std::min(allowance, *limits.slo_p99_ms / 1000);
  return allowance;
}

std::optional<PlannedCapture> find_proposal(const PlannedCapture& asked,
                                            const pipeline::PlanTrace& trace,
                                            const PlanLimits& limits, std::string& kind) {
  std::int64_t most = asked_count(asked, trace);
  std::vector<Preset> presets = {asked.spec.preset};
  for (Preset lighter : lighter_presets(asked.spec.preset)) presets.push_back(lighter);
  std::vector<bool> places = {false};
  if (limits.kubernetes) places.push_back(true);
  for (bool sister : places) {
    for (Preset preset : presets) {
      PlannedCapture candidate = asked;
      candidate.sister = sister;
      if (sister && limits.device_gb && candidate.resident_gb)
        candidate.resident_gb =
            std::min(*candidate.resident_gb, kSisterMemoryFraction * *limits.device_gb);
      if (preset != asked.spec.preset) {
        candidate.spec.preset = preset;
        candidate.spec.sections.clear();
        candidate.spec.metrics.clear();
      }
      PlanLimits where = limits;
      if (sister) {
        where.probes.clear();
        where.slo_p99_ms.reset();
      }
      std::vector<std::vector<std::size_t>> kernel_sets = {candidate.kernels};
      std::vector<std::size_t> fitting =
          kernels_that_fit(candidate, trace, where, stall_allowance(where));
      if (!fitting.empty() && fitting.size() < candidate.kernels.size())
        kernel_sets.push_back(fitting);
      for (const std::vector<std::size_t>& kernels : kernel_sets) {
        PlannedCapture narrowed = candidate;
        if (kernels.size() < candidate.kernels.size()) {
          narrowed.kernels = kernels;
          narrowed.spec.kernel_regex = function_regex(kernels, trace);
          narrowed.spec.kernel_name_base = "";
        }
        std::int64_t count = largest_count_that_fits(narrowed, most, trace, limits);
        if (count == 0) continue;
        narrowed.spec.launch_count = count;
        kind = sister                                  ? "sister deployment"
               : preset != asked.spec.preset           ? "lighter preset"
               : kernels.size() < asked.kernels.size() ? "fewer kernels"
                                                       : "fewer launches";
        return narrowed;
      }
    }
  }
  return std::nullopt;
}

nlohmann::json checks_json(const std::vector<LimitCheck>& checks) {
  nlohmann::json out = nlohmann::json::array();
  for (const LimitCheck& c : checks) {
    out.push_back({{"limit", c.limit},
                   {"allowed", c.allowed},
                   {"planned", c.planned},
                   {"unit", c.unit},
                   {"over", c.over},
                   {"what", c.what}});
  }
  return out;
}

nlohmann::json cost_json(const CaptureCost& cost, const pipeline::PlanTrace& trace) {
  nlohmann::json kernels = nlohmann::json::array();
  for (const CaptureCost::Kernel& k : cost.kernels) {
    const pipeline::PlanTraceKernel& kernel = trace.kernels[k.index];
    kernels.push_back({{"name", kernel.name},
                       {"function_name", kernel.function_name},
                       {"launches_per_step", round3(kernel.launches_per_step)},
                       {"mean_us", round3(kernel.mean_us)},
                       {"max_us", round3(kernel.max_us)},
                       {"replay_s_per_launch", round3(k.replay_s)},
                       {"profiled_launches", k.launches}});
  }
  return {{"passes", cost.passes.passes},
          {"passes_measured", cost.passes.measured},
          {"passes_basis", cost.passes.basis},
          {"launches", cost.launches},
          {"replay_s_longest_launch", round3(cost.replay_s_longest)},
          {"ncu_wall_s", round3(cost.ncu_wall_s)},
          {"longest_stall_s", round3(cost.longest_stall_s)},
          {"steps_run", cost.steps_run},
          {"memory_backed_up_to_host", cost.host_backup},
          {"kernels", kernels}};
}

nlohmann::json capture_json(const PlannedCapture& capture, const pipeline::PlanTrace& trace) {
  nlohmann::json out = {{"preset", preset_name(capture.spec.preset)},
                        {"kernel_regex", capture.spec.kernel_regex},
                        {"launch_skip", capture.spec.launch_skip.value_or(0)},
                        {"launch_count", asked_count(capture, trace)},
                        {"sister", capture.sister},
                        {"options", capture_options_text(capture, trace)}};
  out["resident_gb"] =
      capture.resident_gb ? nlohmann::json(round3(*capture.resident_gb)) : nlohmann::json(nullptr);
  return out;
}

std::string checks_text(const std::vector<LimitCheck>& checks) {
  std::string out;
  for (const LimitCheck& c : checks) {
    std::string planned = c.limit == "device_memory" ? fmt::format("resident {} GB", c.planned)
                          : c.limit == "budget"      ? fmt::format("ncu {} {}", c.planned, c.unit)
                                                : fmt::format("stall {} {}", c.planned, c.unit);
    std::string allowed = c.limit == "device_memory" ? fmt::format("{} GB free", c.allowed)
                                                     : fmt::format("{} {}", c.allowed, c.unit);
    out += fmt::format("  {:<16} {:<14} {:<20} {}\n    {}\n", c.limit, allowed, planned,
                       c.over ? "OVER" : "ok", c.what);
  }
  return out;
}

std::string cost_line(const CaptureCost& cost) {
  return fmt::format(
      "{} launch{}, ncu about {} ({} s attach and report + replay + {} step{} run); the engine "
      "held at most {} in one step{}",
      cost.launches, cost.launches == 1 ? "" : "es", seconds_text(cost.ncu_wall_s), kAttachS,
      cost.steps_run, cost.steps_run == 1 ? "" : "s", seconds_text(cost.longest_stall_s),
      cost.host_backup ? "; memory backed up to host" : "");
}

}  // namespace

PassFigure preset_passes(const CaptureSpec& spec) {
  PassFigure figure;
  switch (spec.preset) {
    case Preset::kTriage:
      figure.passes = 14;
      break;
    case Preset::kBasic:
      figure.passes = 10;
      break;
    case Preset::kFull:
      figure.passes = 38;
      break;
    case Preset::kCustom:
      figure.passes = 38;
      figure.basis =
          "estimated: a --section/--metrics list taken as --set full's 38 passes, its "
          "upper bound (measured on an H200, ncu 2025.3.1)";
      return figure;
  }
  figure.measured = spec.ncu_version && *spec.ncu_version == kMeasuredWith;
  if (figure.measured) {
    figure.basis = "measured on an H200 with ncu 2025.3.1";
  } else if (spec.ncu_version) {
    figure.basis = fmt::format("estimated: ncu 2025.3.1's count on an H200; this is ncu {}",
                               spec.ncu_version->text());
  } else {
    figure.basis =
        "estimated: ncu 2025.3.1's count on an H200; this ncu's version is not known "
        "(--ncu-version)";
  }
  return figure;
}

CapturePlan plan_capture(const pipeline::PlanTrace& trace, const CaptureSpec& asked,
                         const PlanLimits& limits) {
  CapturePlan plan;
  plan.trace = trace;
  plan.limits = limits;
  plan.asked.spec = asked;
  for (std::size_t i = 0; i < trace.kernels.size(); ++i) plan.asked.kernels.push_back(i);
  plan.asked.resident_gb = limits.resident_gb;
  plan.cost = cost_of(plan.asked, trace, limits);
  plan.checks = check(plan.asked, plan.cost, limits);
  plan.over = any_over(plan.checks);
  if (plan.over) {
    plan.proposal = find_proposal(plan.asked, trace, limits, plan.proposal_kind);
    if (plan.proposal) {
      plan.proposal_cost = cost_of(*plan.proposal, trace, limits);
      plan.proposal_checks = check(*plan.proposal, *plan.proposal_cost, limits);
      plan.chosen = limits.budget_s.has_value();
    }
  }
  // What is estimated, said once.
  if (!plan.cost.passes.measured) plan.assumptions.push_back(plan.cost.passes.basis);
  plan.assumptions.push_back(fmt::format(
      "estimated: save and restore {} s + {} s/GB resident per pass (a fit of "
      "bench/capture-cost.sh on an H200, within ~25 %); {} s/GB per launch when the save goes to "
      "host memory; {} s to attach and write the report",
      kPassFixedS, kPassPerGbS, kHostBackupPerGbS, kAttachS));
  if (!limits.resident_gb)
    plan.assumptions.push_back(
        "assumed: little resident device memory (give --resident-gb, or "
        "--gpu-memory-utilization with --device-memory-gb)");
  if (!effective_launch_count(asked))
    plan.assumptions.push_back(
        "no --launch-count: every matched launch of the trace's steps is profiled once");
  std::int64_t skip = asked.launch_skip.value_or(0);
  if (static_cast<std::size_t>(skip + plan.cost.launches) > trace.launches.size())
    plan.assumptions.push_back(
        "assumed: the program repeats the trace's steps (the launches asked outnumber the "
        "trace's)");
  return plan;
}

std::string capture_options_text(const PlannedCapture& capture, const pipeline::PlanTrace& trace) {
  std::string out;
  if (capture.spec.preset == Preset::kCustom) {
    for (const std::string& section : capture.spec.sections)
      out += " --section " + shell_quote(section);
    if (!capture.spec.metrics.empty()) out += " --metrics " + shell_quote(capture.spec.metrics);
  } else {
    out += " --preset " + preset_name(capture.spec.preset);
  }
  if (!capture.spec.kernel_regex.empty()) out += " -k " + shell_quote(capture.spec.kernel_regex);
  if (!capture.spec.kernel_name_base.empty())
    out += " --kernel-name-base " + capture.spec.kernel_name_base;
  if (capture.spec.launch_skip) out += fmt::format(" --launch-skip {}", *capture.spec.launch_skip);
  out += fmt::format(" --launch-count {}", asked_count(capture, trace));
  return out.substr(1);
}

nlohmann::json plan_json(const CapturePlan& plan, const std::vector<std::string>& argv) {
  nlohmann::json kernels = nlohmann::json::array();
  nlohmann::json probes = nlohmann::json::array();
  for (const ProbeBudget& probe : plan.limits.probes) {
    probes.push_back({{"probe", probe.probe},
                      {"period_s", probe.period_s},
                      {"failure_threshold", probe.failure_threshold},
                      {"timeout_s", probe.timeout_s},
                      {"budget_s", probe.budget_s()},
                      {"from", probe.from}});
  }
  auto optional = [](const std::optional<double>& value) {
    return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
  };
  nlohmann::json body = {
      {"trace",
       {{"path", plan.trace.path},
        {"steps", plan.trace.steps},
        {"step_selector", plan.trace.step_selector},
        {"mean_step_wall_us", round3(plan.trace.mean_step_wall_us)},
        {"kernel_launches", plan.trace.kernel_launches},
        {"matched_launches", plan.trace.launches.size()}}},
      {"model",
       {{"replay_s",
         "passes × (duration + save_restore_s); save_restore_s = pass_fixed_s + resident_gb × "
         "pass_per_gb_s; backed up to host: passes × duration + resident_gb × "
         "host_backup_per_gb_s"},
        {"ncu_wall_s", "attach_s + Σ replay_s + steps_run × mean step wall"},
        {"pass_fixed_s", kPassFixedS},
        {"pass_per_gb_s", kPassPerGbS},
        {"host_backup_per_gb_s", kHostBackupPerGbS},
        {"attach_s", kAttachS}}},
      {"limits",
       {{"probes", probes},
        {"slo_p99_ms", optional(plan.limits.slo_p99_ms)},
        {"budget_s", optional(plan.limits.budget_s)},
        {"device_gb", optional(plan.limits.device_gb)},
        {"resident_gb", optional(plan.limits.resident_gb)},
        {"memory_from", plan.limits.memory_from}}},
      {"asked", capture_json(plan.asked, plan.trace)},
      {"cost", cost_json(plan.cost, plan.trace)},
      {"checks", checks_json(plan.checks)},
      {"over", plan.over},
      {"over_limits", nlohmann::json::array()},
      {"proposal", nullptr},
      {"chosen", plan.chosen},
      {"assumptions", plan.assumptions}};
  for (const LimitCheck& c : plan.checks)
    if (c.over) body["over_limits"].push_back(c.limit);
  if (plan.proposal) {
    body["proposal"] = {{"kind", plan.proposal_kind},
                        {"capture", capture_json(*plan.proposal, plan.trace)},
                        {"cost", cost_json(*plan.proposal_cost, plan.trace)},
                        {"checks", checks_json(plan.proposal_checks)}};
  }
  return render::with_envelope("kprof.plan/1", argv, std::move(body));
}

std::string plan_text(const CapturePlan& plan) {
  const pipeline::PlanTrace& trace = plan.trace;
  std::string out = fmt::format(
      "trace {}: {} step{} ({}), {:.3f} ms a step; the filter matches {} kernel{}, {} of {} "
      "launches\n",
      trace.path, trace.steps, trace.steps == 1 ? "" : "s", trace.step_selector,
      trace.mean_step_wall_us / 1000, trace.kernels.size(), trace.kernels.size() == 1 ? "" : "s",
      trace.launches.size(), trace.kernel_launches);
  out += fmt::format("capture: {}\n", capture_options_text(plan.asked, trace));
  out += fmt::format("passes: {} ({})\n", plan.cost.passes.passes, plan.cost.passes.basis);
  out += fmt::format("{:<60} {:>9} {:>10} {:>10} {:>10} {:>8}\n", "kernel", "per step", "mean us",
                     "max us", "replay s", "profiled");
  for (const CaptureCost::Kernel& k : plan.cost.kernels) {
    const pipeline::PlanTraceKernel& kernel = trace.kernels[k.index];
    // Names as a terminal shows them literally, cut to the column (UTF-8 aware).
    std::string name = render::ellipsize(kernel.name, 60);
    std::size_t pad = 60 > render::display_width(name) ? 60 - render::display_width(name) : 0;
    out += fmt::format("{}{} {:>9.2f} {:>10.2f} {:>10.2f} {:>10.3f} {:>8}\n", name,
                       std::string(pad, ' '), kernel.launches_per_step, kernel.mean_us,
                       kernel.max_us, k.replay_s, k.launches);
  }
  out += "plan: " + cost_line(plan.cost) + "\n";
  if (!plan.checks.empty()) out += "limits:\n" + checks_text(plan.checks);
  if (plan.over) {
    std::string over;
    for (const LimitCheck& c : plan.checks)
      if (c.over) over += (over.empty() ? "" : ", ") + c.limit;
    out += fmt::format("over: {}\n", over);
    if (plan.proposal) {
      out +=
          fmt::format("{} ({}): {}{}\n", plan.chosen ? "chosen" : "proposed", plan.proposal_kind,
                      capture_options_text(*plan.proposal, trace),
                      plan.proposal->sister ? " on the sister deployment (kprof k8s sister)" : "");
      out += "  " + cost_line(*plan.proposal_cost) + "\n";
    } else {
      out += "nothing fits: no launch of these kernels at any preset stays within the limits\n";
    }
  }
  for (const std::string& assumption : plan.assumptions) out += "note: " + assumption + "\n";
  // The trace's path, the filter and the limits' sources come from the user and the cluster:
  // shown literally, line breaks kept.
  return escape_for_terminal(out, true);
}

nlohmann::json plan_for_bundle(const CapturePlan& plan) {
  const PlannedCapture& ran = plan.chosen && plan.proposal ? *plan.proposal : plan.asked;
  const CaptureCost& cost = plan.chosen && plan.proposal_cost ? *plan.proposal_cost : plan.cost;
  return {{"trace", plan.trace.path},
          {"capture", capture_json(ran, plan.trace)},
          {"predicted_ncu_wall_s", round3(cost.ncu_wall_s)},
          {"predicted_longest_stall_s", round3(cost.longest_stall_s)},
          {"passes", cost.passes.passes},
          {"over_limits",
           [&] {
             nlohmann::json over = nlohmann::json::array();
             for (const LimitCheck& c : plan.checks)
               if (c.over) over.push_back(c.limit);
             return over;
           }()},
          {"chosen", plan.chosen}};
}

}  // namespace kprof::capture
