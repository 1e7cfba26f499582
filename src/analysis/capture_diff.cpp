#include "analysis/capture_diff.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "model/kernel_names.h"

namespace kprof::analysis {
namespace {

using Key = std::tuple<std::string, std::uint64_t, std::uint64_t, std::uint64_t, std::uint64_t,
                       std::uint64_t, std::uint64_t>;

// By canonical name: a report and a CSV export spell one kernel differently, and instantiations
// of one template share a function name.
Key key_of(const model::Kernel& k) {
  return {model::canonical_kernel_name(k),
          k.grid.x,
          k.grid.y,
          k.grid.z,
          k.block.x,
          k.block.y,
          k.block.z};
}

std::optional<double> median(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

// Largest relative deviation from the median, in percent; nullopt without repeats.
std::optional<double> noise(const std::vector<double>& values) {
  if (values.size() < 2) return std::nullopt;
  double middle = *median(values);
  if (middle <= 0) return std::nullopt;
  double worst = 0;
  for (double v : values) worst = std::max(worst, std::fabs(v - middle) / middle * 100);
  return worst;
}

struct Side {
  std::vector<const model::Kernel*> launches;
  std::vector<double> durations;
};

}  // namespace

std::string change_name(Change change) {
  switch (change) {
    case Change::kRegression:
      return "regression";
    case Change::kImprovement:
      return "improvement";
    case Change::kUnchanged:
      return "unchanged";
    case Change::kOnlyInBaseline:
      return "only in baseline";
    case Change::kOnlyInCandidate:
      return "only in candidate";
    case Change::kNotEnoughSamples:
      return "not enough samples to judge";
  }
  return "";
}

CaptureDiff diff_captures(const model::Report& baseline, const model::Report& candidate,
                          const DiffOptions& options, const AnalysisConfig& config) {
  std::map<Key, std::pair<Side, Side>> groups;
  for (const model::Kernel& k : baseline.kernels) {
    Side& side = groups[key_of(k)].first;
    side.launches.push_back(&k);
    if (auto d = k.number("gpu__time_duration.sum")) side.durations.push_back(*d);
  }
  for (const model::Kernel& k : candidate.kernels) {
    Side& side = groups[key_of(k)].second;
    side.launches.push_back(&k);
    if (auto d = k.number("gpu__time_duration.sum")) side.durations.push_back(*d);
  }
  // A name that each side launched in one configuration only, a different one: the kernel was
  // retuned (ESMM's warptiling kernel, (16,16,1)/(128,1,1) → (8,8,1)/(256,1,1)). Its candidate
  // side joins the baseline's group, so the change is judged, not reported as two kernels.
  {
    // By the function's name without template arguments: a retune often changes those too
    // (one_warptiling<128, 128, 8> → <64, 64, 8>).
    std::map<std::string, std::pair<std::vector<Key>, std::vector<Key>>> configs;
    for (const auto& [key, sides] : groups) {
      const Side& any_side = sides.first.launches.empty() ? sides.second : sides.first;
      auto& [base_keys, cand_keys] = configs[any_side.launches.front()->display_name()];
      if (!sides.first.launches.empty()) base_keys.push_back(key);
      if (!sides.second.launches.empty()) cand_keys.push_back(key);
    }
    for (const auto& [name, keys] : configs) {
      const auto& [base_keys, cand_keys] = keys;
      if (base_keys.size() != 1 || cand_keys.size() != 1 || base_keys[0] == cand_keys[0]) continue;
      groups[base_keys[0]].second = std::move(groups[cand_keys[0]].second);
      groups.erase(cand_keys[0]);
    }
  }
  CaptureDiff diff;
  for (const auto& [key, sides] : groups) {
    const auto& [base, cand] = sides;
    KernelDiff d;
    const model::Kernel& any =
        base.launches.empty() ? *cand.launches.front() : *base.launches.front();
    d.name = any.display_name();
    d.grid = any.grid;
    d.block = any.block;
    if (!base.launches.empty() && !cand.launches.empty() &&
        (cand.launches.front()->grid != any.grid || cand.launches.front()->block != any.block)) {
      d.candidate_grid = cand.launches.front()->grid;
      d.candidate_block = cand.launches.front()->block;
    }
    d.baseline_launches = base.launches.size();
    d.candidate_launches = cand.launches.size();
    d.baseline_ns = median(base.durations);
    d.candidate_ns = median(cand.durations);
    auto base_noise = noise(base.durations), cand_noise = noise(cand.durations);
    if (base_noise || cand_noise)
      d.noise_pct = std::max(base_noise.value_or(0), cand_noise.value_or(0));
    d.threshold_pct =
        std::max(options.threshold_pct, options.noise_factor * d.noise_pct.value_or(0));
    if (!base.launches.empty()) {
      KernelVerdict v = analyze_kernel(baseline, *base.launches.front(), config);
      d.baseline_verdict = roofline_name(v.roofline);
      d.baseline_sm_pct = v.sm_throughput_pct;
      d.baseline_memory_pct = v.memory_throughput_pct;
      d.baseline_occupancy = v.achieved_occupancy;
    }
    if (!cand.launches.empty()) {
      KernelVerdict v = analyze_kernel(candidate, *cand.launches.front(), config);
      d.candidate_verdict = roofline_name(v.roofline);
      d.candidate_sm_pct = v.sm_throughput_pct;
      d.candidate_memory_pct = v.memory_throughput_pct;
      d.candidate_occupancy = v.achieved_occupancy;
    }
    if (!base.launches.empty() && !cand.launches.empty()) ++diff.in_both;
    if (base.launches.empty()) {
      d.change = Change::kOnlyInCandidate;
    } else if (cand.launches.empty()) {
      d.change = Change::kOnlyInBaseline;
    } else if (d.baseline_ns && d.candidate_ns && *d.baseline_ns > 0) {
      d.change_pct = (*d.candidate_ns - *d.baseline_ns) / *d.baseline_ns * 100;
      bool single = base.durations.size() < 2 || cand.durations.size() < 2;
      if (single) d.floor_us = options.single_sample_floor_us;
      double moved_us = std::fabs(*d.candidate_ns - *d.baseline_ns) / 1000;
      bool past_threshold = std::fabs(*d.change_pct) > d.threshold_pct;
      if (past_threshold && single && moved_us <= options.single_sample_floor_us) {
        d.change = Change::kNotEnoughSamples;
        ++diff.not_enough_samples;
      } else if (past_threshold && *d.change_pct > 0) {
        d.change = Change::kRegression;
        ++diff.regressions;
      } else if (past_threshold) {
        d.change = Change::kImprovement;
        ++diff.improvements;
      }
      double weight = static_cast<double>(base.durations.size());
      diff.overall.baseline_us += *d.baseline_ns / 1000 * weight;
      diff.overall.candidate_us += *d.candidate_ns / 1000 * weight;
    }
    diff.kernels.push_back(std::move(d));
  }
  if (diff.overall.baseline_us > 0) {
    diff.overall.change_pct =
        (diff.overall.candidate_us - diff.overall.baseline_us) / diff.overall.baseline_us * 100;
    // The total is held to the same absolute floor as a single launch: a change smaller than
    // what one kernel may move between runs is not a verdict on the whole, however small the
    // total (big_min vs big_basic with --threshold 0.1: +0.9 us of 547 us failed the gate).
    double moved_us = std::fabs(diff.overall.candidate_us - diff.overall.baseline_us);
    bool past_floor = moved_us > options.single_sample_floor_us;
    if (past_floor && *diff.overall.change_pct > options.threshold_pct) {
      diff.overall.change = Change::kRegression;
    } else if (past_floor && *diff.overall.change_pct < -options.threshold_pct) {
      diff.overall.change = Change::kImprovement;
    }
  }
  auto rank = [](const KernelDiff& d) {
    return d.change == Change::kRegression         ? 0
           : d.change == Change::kNotEnoughSamples ? 1
           : d.change == Change::kImprovement      ? 2
                                                   : 3;
  };
  std::stable_sort(
      diff.kernels.begin(), diff.kernels.end(), [&](const KernelDiff& a, const KernelDiff& b) {
        if (rank(a) != rank(b)) return rank(a) < rank(b);
        return std::fabs(a.change_pct.value_or(0)) > std::fabs(b.change_pct.value_or(0));
      });
  return diff;
}

}  // namespace kprof::analysis
