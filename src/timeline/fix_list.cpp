#include "timeline/fix_list.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string_view>
#include <tuple>

#include "model/kernel_names.h"
#include "timeline/step_budget.h"

namespace kprof::timeline {
namespace {

// The calibration ceiling that measures a unit's rate, where one does.
const analysis::CeilingUse* ceiling_for(const analysis::KernelVerdict& v, const std::string& unit) {
  for (const analysis::CeilingUse& use : v.measured_ceilings) {
    bool matches = (unit == "dram" && use.ceiling == "dram_bandwidth") ||
                   (unit == "tensor" && use.ceiling.find("tensor") != std::string::npos) ||
                   (unit == "fp32" && use.ceiling == "fp32_flops") ||
                   (unit == "fp64" && use.ceiling == "fp64_flops");
    if (matches && use.fraction_of_peak) return &use;
  }
  return nullptr;
}

// A latency-bound launch whose nearer roof is below this (% of peak) is explained by no roof.
constexpr double kFarFromEveryRoofPct = 10;

struct LaunchEstimate {
  std::string unit;
  std::optional<double> achieved_pct, attainable_pct;
  std::string attainable;
  std::optional<double> saving_fraction;
  std::string why;  // the assumption the estimate makes for this class of kernel
};

// How far one launch's binding resource is from what it can reach.
LaunchEstimate estimate(const analysis::KernelVerdict& v) {
  LaunchEstimate e;
  const std::optional<analysis::UnitUse>* unit = nullptr;
  switch (v.roofline) {
    case analysis::Roofline::kMemoryBound:
      unit = &v.memory_unit;
      e.why = "memory-bound: the same bytes at the attainable bandwidth";
      break;
    case analysis::Roofline::kComputeBound:
      unit = &v.compute_unit;
      e.why = "compute-bound: the same work at the unit's attainable rate";
      break;
    case analysis::Roofline::kRidge:
    case analysis::Roofline::kLatencyBound: {
      // The nearer roof: the resource closest to its peak, which a latency fix would reach first.
      bool memory = v.memory_unit && (!v.compute_unit || v.memory_unit->pct >= v.compute_unit->pct);
      unit = memory ? &v.memory_unit : &v.compute_unit;
      e.why = v.roofline == analysis::Roofline::kRidge
                  ? "at the ridge: the nearer roof"
                  : "latency-bound: if it reached the nearer roof" +
                        (v.latency_reasons.empty()
                             ? std::string()
                             : " (held back by " + v.latency_reasons.front() + ")");
      break;
    }
    case analysis::Roofline::kIssueBound:
    case analysis::Roofline::kOverheadBound:
      // The instruction stream binds, not a rate: no roof's distance estimates a saving.
      e.unit = v.bound_by;
      e.why = v.roofline == analysis::Roofline::kIssueBound
                  ? "issue-bound: its issue slots are busy, so only fewer or wider instructions "
                    "save time — no roof to reach, no estimate"
                  : "overhead-bound: non-math instructions fill the SM, so only fewer of them "
                    "save time — no roof to reach, no estimate";
      return e;
    case analysis::Roofline::kUnknown:
      return e;
  }
  if (!unit || !*unit) return e;
  e.unit = (*unit)->unit;
  e.achieved_pct = (*unit)->pct;
  e.attainable_pct = 100;
  e.attainable = "the datasheet peak (no measured ceiling for " + e.unit + ")";
  if (const analysis::CeilingUse* ceiling = ceiling_for(v, e.unit)) {
    // Both figures against the datasheet peak, the attainable one measured on this GPU.
    e.achieved_pct = *ceiling->fraction_of_peak * 100;
    e.attainable_pct = *ceiling->fraction_of_peak / ceiling->fraction_of_measured * 100;
    e.attainable =
        fmt::format("the measured {} ({:.4g} {}, {:.0f}% of peak; kprof calibrate)",
                    ceiling->ceiling, ceiling->measured_ceiling, ceiling->unit, *e.attainable_pct);
  }
  bool latency = v.roofline == analysis::Roofline::kLatencyBound;
  if (latency && *e.achieved_pct < kFarFromEveryRoofPct) {
    // No roof explains its time (a few-microsecond kernel of a handful of blocks): what it could
    // save is not a rate's distance, so no estimate — at most its whole time, by fusing it away.
    e.why = fmt::format(
        "latency-bound far from every roof (the nearer, {}, at {:.1f}% of peak): its time is "
        "launch and latency; only fusing it into a neighbour saves it, at most its trace time",
        e.unit, *e.achieved_pct);
    return e;
  }
  if (*e.achieved_pct > *e.attainable_pct) {
    e.why += fmt::format(
        "; it reaches more than the measured ceiling ({:.0f}% > {:.0f}% of peak): that ceiling "
        "is low, so no saving is claimed — recalibrate",
        *e.achieved_pct, *e.attainable_pct);
  }
  if (*e.attainable_pct > 0) {
    e.saving_fraction = std::max(0.0, 1 - *e.achieved_pct / *e.attainable_pct);
  }
  return e;
}

using GroupKey = std::tuple<std::string, std::uint64_t, std::uint64_t, std::uint64_t, std::uint64_t,
                            std::uint64_t, std::uint64_t>;

}  // namespace

FixList build_fix_list(const std::vector<CapturedLaunch>& launches, double pipeline_us,
                       std::uint64_t steps, double step_us, const KernelFloor& floor) {
  FixList list;
  list.floor = floor;
  list.pipeline_us = pipeline_us;
  list.steps = steps;
  list.step_us = step_us;
  struct Accumulated {
    FixGroup group;
    double captured_us = 0;  // summed captured durations
    double weighted_saving = 0, weighted_achieved = 0, weighted_attainable = 0;
    double estimated_us = 0;  // captured time of the launches that had an estimate
    std::map<std::string, double> unit_time, attainable_text_time;
    std::map<std::string, std::string> attainable_texts, whys;
    std::optional<KernelShare> share;
    std::string canonical;
    std::string unestimated_why;  // why a launch had no estimate, where the verdict says
  };
  std::map<GroupKey, Accumulated> groups;
  std::vector<GroupKey> order;  // first-seen order, for ties
  for (const CapturedLaunch& launch : launches) {
    const model::Kernel& k = *launch.kernel;
    std::string canonical = model::canonical_kernel_name(k);
    GroupKey key{canonical, k.grid.x, k.grid.y, k.grid.z, k.block.x, k.block.y, k.block.z};
    auto [it, added] = groups.try_emplace(key);
    Accumulated& a = it->second;
    if (added) {
      order.push_back(key);
      a.group.kernel = k.display_name();
      a.group.canonical = canonical;
      if (!launch.report_path.empty()) {
        a.group.capture = launch.report_path;
        a.group.hot_spots_argv = hot_spots_argv(
            launch.report_path, k.function_name.empty() ? k.display_name() : k.function_name);
      }
      a.group.grid = k.grid;
      a.group.block = k.block;
      a.canonical = canonical;
      a.share = launch.share;
    }
    double us = launch.verdict->duration_ns.value_or(0) / 1000;
    FixGroup& g = a.group;
    g.captured_min_us = g.launches_captured == 0 ? us : std::min(g.captured_min_us, us);
    g.captured_max_us = std::max(g.captured_max_us, us);
    ++g.launches_captured;
    a.captured_us += us;
    ++g.verdicts[analysis::roofline_name(launch.verdict->roofline)];
    LaunchEstimate e = estimate(*launch.verdict);
    if (!e.saving_fraction && !e.why.empty()) a.unestimated_why = e.why;
    if (e.saving_fraction) {
      a.weighted_saving += *e.saving_fraction * us;
      a.weighted_achieved += *e.achieved_pct * us;
      a.weighted_attainable += *e.attainable_pct * us;
      a.estimated_us += us;
      a.unit_time[e.unit] += us;
      a.attainable_texts[e.unit] = e.attainable;
      a.whys[e.unit] = e.why;
    }
  }
  // A trace without launch configurations gives a name's time once: split it over the name's
  // groups by their captured time.
  std::map<std::string, double> unconfigured_captured;
  for (const auto& [key, a] : groups) {
    if (a.share && !a.share->matched_launch_config)
      unconfigured_captured[a.canonical] += a.captured_us;
  }
  for (const GroupKey& key : order) {
    Accumulated& a = groups[key];
    FixGroup& captured = a.group;
    captured.captured_mean_us =
        captured.launches_captured ? a.captured_us / captured.launches_captured : 0;
    std::uint64_t most = 0;
    for (const auto& [name, count] : captured.verdicts) {
      if (count > most) captured.roofline = name, most = count;
    }
    // A group's trace time in one row, or — where graph replays of the kernel ran in batch
    // buckets (a trace of kprof's tracer with its node table) — a row per bucket, each with its
    // own time, and one for the time outside them.
    std::vector<std::pair<std::string, TraceTime>> parts;
    if (a.share && !a.share->buckets.empty()) {
      TraceTime rest = a.share->time;
      for (const auto& [bucket, time] : a.share->buckets) {
        parts.emplace_back(bucket, time);
        rest.count -= std::min(rest.count, time.count);
        rest.total_us -= time.total_us;
      }
      if (rest.count > 0) parts.emplace_back(std::string(kOutsideBuckets), rest);
    } else if (a.share) {
      parts.emplace_back("", a.share->time);
    }
    if (parts.empty()) parts.emplace_back("", TraceTime{});  // not in the trace
    for (const auto& [bucket, time] : parts) {
      FixGroup g = captured;
      g.bucket = bucket;
      if (bucket == kOutsideBuckets) {
        g.evidence.push_back(fmt::format(
            "its {} launches outside the graphs' batch buckets (eager, or replays the node table "
            "did not place)",
            time.count));
      } else if (!bucket.empty()) {
        g.evidence.push_back(fmt::format(
            "{}: its {} launches in that bucket's graph replays (kprof tracer's node table); the "
            "captured launches' verdicts serve every bucket of the group",
            bucket, time.count));
      }
      if (a.share) {
        double part = 1;
        if (!a.share->matched_launch_config) {
          double all = unconfigured_captured[a.canonical];
          part = all > 0 ? a.captured_us / all : 1;
        }
        if (part < 1) {
          g.evidence.push_back(fmt::format(
              "the trace has no launch configurations: this group gets {:.0f}% of the name's "
              "trace time, its share of the name's captured time",
              part * 100));
        }
        g.trace_total_us = time.total_us * part;
        g.trace_launches = static_cast<std::uint64_t>(std::llround(time.count * part));
        g.fraction_of_pipeline = pipeline_us > 0 ? g.trace_total_us / pipeline_us : 0;
        if (g.trace_launches > 0 && g.trace_total_us > 0 && g.captured_mean_us > 0) {
          g.replay_fidelity = g.captured_mean_us / (g.trace_total_us / g.trace_launches);
          g.fidelity_flagged =
              *g.replay_fidelity < kFidelityLow || *g.replay_fidelity > kFidelityHigh;
        }
      }
      if (a.estimated_us > 0) {
        std::string unit;
        double longest = -1;
        for (const auto& [name, us] : a.unit_time) {
          if (us > longest) unit = name, longest = us;
        }
        g.bound_by = unit;
        g.achieved_pct = a.weighted_achieved / a.estimated_us;
        g.attainable_pct = a.weighted_attainable / a.estimated_us;
        g.attainable = a.attainable_texts[unit];
        g.saving_fraction = a.weighted_saving / a.estimated_us;
        g.evidence.push_back(fmt::format("{}: {} at {:.1f}% of peak against {}", a.whys[unit], unit,
                                         *g.achieved_pct, g.attainable));
        if (a.estimated_us < a.captured_us) {
          g.evidence.push_back(fmt::format(
              "{:.0f}% of the captured time had no throughput breakdown and is left out of the "
              "estimate",
              (1 - a.estimated_us / a.captured_us) * 100));
        }
        if (a.share) {
          g.estimated_saving_us = g.trace_total_us * *g.saving_fraction;
          // No launch gets faster than the floor: the saving is held to the time above it.
          double above_floor =
              std::max(0.0, g.trace_total_us - static_cast<double>(g.trace_launches) * floor.us);
          if (floor.us > 0 && *g.estimated_saving_us > above_floor) {
            g.estimated_saving_us = above_floor;
            g.evidence.push_back(fmt::format(
                "held to the time above this GPU's kernel floor of {:.3g} us a launch ({})",
                floor.us, floor.source));
          }
        }
      } else {
        g.bound_by = a.unestimated_why.empty() ? "" : "latency";
        g.evidence.push_back(a.unestimated_why.empty()
                                 ? "no estimate: the capture has no throughput breakdown for its "
                                   "launches"
                                 : "no estimate: " + a.unestimated_why);
      }
      if (!a.share) g.evidence.push_back("not in the trace: its time in serving is unknown");
      // A group whose launches run near the floor: only fusing or removing it saves its time, so it
      // gets no rate estimate and is listed apart, never above a group whose saving is real.
      if (floor.us > 0 && g.trace_launches > 0 &&
          g.trace_total_us / static_cast<double>(g.trace_launches) <= kNearFloorFactor * floor.us) {
        g.near_floor = true;
        g.estimated_saving_us.reset();
        g.saving_fraction.reset();
        g.evidence.push_back(fmt::format(
            "near this GPU's kernel floor: {:.3g} us a launch in the trace against a floor of "
            "{:.3g} us ({}); a faster kernel saves little, fusing it into a neighbour or removing "
            "it "
            "saves up to its {:.3g} ms",
            g.trace_total_us / static_cast<double>(g.trace_launches), floor.us, floor.source,
            g.trace_total_us / 1000));
      }
      if (g.fidelity_flagged) {
        g.evidence.push_back(fmt::format(
            "replayed {:.3g} us against {:.3g} us in the trace (×{:.2f}): the counters may not "
            "describe it as it served",
            g.captured_mean_us, g.trace_total_us / g.trace_launches, *g.replay_fidelity));
      }
      if (g.estimated_saving_us) list.total_saving_us += *g.estimated_saving_us;
      list.groups.push_back(std::move(g));
    }
  }
  // What a saving is measured against: the steps' GPU spans where the trace has steps (time
  // between steps is no step's), else the whole trace's GPU span.
  double base = steps > 0 ? static_cast<double>(steps) * step_us : pipeline_us;
  for (FixGroup& g : list.groups) {
    if (g.estimated_saving_us && base > *g.estimated_saving_us) {
      g.estimated_step_speedup = base / (base - *g.estimated_saving_us);
    }
  }
  if (base > list.total_saving_us && list.total_saving_us > 0) {
    list.total_step_speedup = base / (base - list.total_saving_us);
  }
  std::stable_sort(
      list.groups.begin(), list.groups.end(), [](const FixGroup& a, const FixGroup& b) {
        if (a.near_floor != b.near_floor) return b.near_floor;
        double x = a.estimated_saving_us.value_or(-1), y = b.estimated_saving_us.value_or(-1);
        if (x != y) return x > y;
        return a.trace_total_us > b.trace_total_us;
      });
  return list;
}

std::optional<ServingUnits> serving_units(const std::vector<std::string>& step_names,
                                          const FixList& list) {
  if (step_names.empty() || list.steps == 0 || list.step_us <= 0) return std::nullopt;
  ServingUnits units;
  double requests = 0, tokens = 0;
  for (const std::string& name : step_names) {
    std::optional<StepBatch> batch = step_batch(name);
    if (!batch || !batch->decode_only() || batch->decode_tokens == 0) return std::nullopt;
    requests += static_cast<double>(batch->decode_requests);
    tokens += static_cast<double>(batch->decode_tokens);
  }
  units.steps = step_names.size();
  units.basis = step_names.front();
  units.requests_per_step = requests / static_cast<double>(units.steps);
  units.tokens_per_step = tokens / static_cast<double>(units.steps);
  const double tokens_per_request = units.tokens_per_step / units.requests_per_step;
  auto fill = [&](double step_us, double& step_ms, double& tpot_ms, double& tokens_per_s) {
    step_ms = step_us / 1000;
    tpot_ms = step_ms / tokens_per_request;
    tokens_per_s = step_us > 0 ? units.tokens_per_step / (step_us * 1e-6) : 0;
  };
  // A token takes the step's wall time, the host's share included; a kernel fix takes its saving
  // off it.
  double step_us = list.step_wall_us > 0 ? list.step_wall_us : list.step_us;
  fill(step_us, units.step_ms, units.tpot_ms, units.tokens_per_s);
  double saving_per_step = list.total_saving_us / static_cast<double>(list.steps);
  // On devices side by side the savings summed over them come off the wall once per device's
  // share (the devices run alike: tensor parallel).
  if (list.step_wall_us > 0) saving_per_step /= std::max(1.0, list.step_devices);
  fill(std::max(step_us - saving_per_step, 0.0), units.fixed_step_ms, units.fixed_tpot_ms,
       units.fixed_tokens_per_s);
  return units;
}

std::vector<std::string> hot_spots_argv(const std::string& report_path,
                                        const std::string& kernel_name) {
  std::string name = kernel_name;
  if (name.rfind("void ", 0) == 0) name = name.substr(5);
  name = name.substr(0, name.find_first_of("<("));
  std::string escaped;
  for (char c : name) {
    if (std::string_view(".[]{}()*+?^$|\\").find(c) != std::string_view::npos) escaped += '\\';
    escaped += c;
  }
  // Anchored: -k matches part of a name, so an unanchored reduce_kernel selected
  // splitKreduce_kernel first. A bare function name (what ncu records) is the whole name; a
  // longer one (a demangled name, when no function name was recorded) is matched from a word's
  // start (the line's, after a space or a scope's ::) to its template arguments or parameters.
  std::string regex = name == kernel_name ? "^" + escaped + "$" : "(^|[ :])" + escaped + "([<(]|$)";
  return {"kprof", "source", report_path, "-k", regex};
}

}  // namespace kprof::timeline
