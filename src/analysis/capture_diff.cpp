#include "analysis/capture_diff.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <algorithm>
#include <array>
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

// A launch configuration: grid and block.
using Config = std::array<std::uint64_t, 6>;
Config config_of(const Key& key) {
  return {std::get<1>(key), std::get<2>(key), std::get<3>(key),
          std::get<4>(key), std::get<5>(key), std::get<6>(key)};
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
  std::vector<size_t> positions;  // each launch's index in its report: the launch order
  std::vector<double> durations;
};
using Groups = std::map<Key, std::pair<Side, Side>>;

bool in_both(const std::pair<Side, Side>& sides) {
  return !sides.first.launches.empty() && !sides.second.launches.empty();
}

double sum(const std::vector<double>& values) {
  double total = 0;
  for (double v : values) total += v;
  return total;
}

// Which of a group's two sides: the baseline's (first) or the candidate's (second).
enum class Which { kBaseline, kCandidate };
const Side& side_of(const std::pair<Side, Side>& sides, Which which) {
  return which == Which::kBaseline ? sides.first : sides.second;
}
const char* side_word(Which which) { return which == Which::kBaseline ? "baseline" : "candidate"; }

std::string configuration(const model::Dim3& grid, const model::Dim3& block) {
  return fmt::format("grid {} and block {}", grid.to_string(), block.to_string());
}

UnmatchedKernel unmatched_of(const Side& side, double side_total_ns) {
  const model::Kernel& k = *side.launches.front();
  UnmatchedKernel u;
  u.name = k.display_name();
  u.grid = k.grid;
  u.block = k.block;
  u.launches = side.launches.size();
  u.time_us = sum(side.durations) / 1000;
  if (side_total_ns > 0) u.share_pct = sum(side.durations) / side_total_ns * 100;
  return u;
}

// "vectorize (89.6%), fill (2.0%), … (5 kernels)": a side's unmatched kernels for a message.
std::string listing(const Groups& groups, Which which, double side_total_ns) {
  std::vector<UnmatchedKernel> list;
  for (const auto& [key, sides] : groups) {
    if (!in_both(sides) && !side_of(sides, which).launches.empty()) {
      list.push_back(unmatched_of(side_of(sides, which), side_total_ns));
    }
  }
  std::stable_sort(list.begin(), list.end(),
                   [](const auto& a, const auto& b) { return a.time_us > b.time_us; });
  std::string text;
  for (size_t i = 0; i < list.size() && i < 5; ++i) {
    text += (i ? ", " : "") + list[i].name +
            (list[i].share_pct ? fmt::format(" ({:.1f}%)", *list[i].share_pct) : "");
  }
  if (list.size() > 5) text += fmt::format(", … ({} kernels)", list.size());
  return text;
}

// Whether a kernel answers to a --pair pattern: by one of its names exactly, or by the regex.
bool equals_a_name(const model::Kernel& k, const std::string& pattern) {
  return k.function_name == pattern || k.demangled_name == pattern || k.mangled_name == pattern;
}
bool matches(const model::Kernel& k, const RE2& regex) {
  return RE2::PartialMatch(k.function_name, regex) || RE2::PartialMatch(k.demangled_name, regex) ||
         RE2::PartialMatch(k.mangled_name, regex);
}

// The kernel groups of one side a --pair pattern selects among those not matched yet (see
// diff_captures); PairError when none.
std::vector<Key> select_for_pair(const Groups& groups, Which which, const std::string& pattern,
                                 const std::string& request, double side_total_ns) {
  auto select = [&](auto&& answers, bool unmatched_only) {
    std::vector<Key> keys;
    for (const auto& [key, sides] : groups) {
      const Side& side = side_of(sides, which);
      if (side.launches.empty() || (unmatched_only && in_both(sides))) continue;
      if (answers(*side.launches.front())) keys.push_back(key);
    }
    return keys;
  };
  auto exact = [&](const model::Kernel& k) { return equals_a_name(k, pattern); };
  std::vector<Key> keys = select(exact, true);
  if (!keys.empty()) return keys;
  RE2::Options quiet;
  quiet.set_log_errors(false);
  RE2 regex(pattern, quiet);
  if (!regex.ok() && select(exact, false).empty()) {
    throw PairError(PairError::Kind::kBadPattern,
                    fmt::format("--pair '{}': '{}' is neither a kernel's name nor a valid regex "
                                "({})",
                                request, pattern, regex.error()));
  }
  auto by_regex = [&](const model::Kernel& k) { return regex.ok() && matches(k, regex); };
  keys = select(by_regex, true);
  if (!keys.empty()) return keys;
  std::string unmatched = listing(groups, which, side_total_ns);
  std::vector<Key> compared = select(exact, false);
  if (compared.empty()) compared = select(by_regex, false);
  std::string why =
      compared.empty()
          ? fmt::format("'{}' selects no kernel of the {}", pattern, side_word(which))
          : fmt::format(
                "'{}' selects only kernels compared already ({}{}), by name or by an "
                "earlier --pair",
                pattern, std::get<0>(compared.front()),
                compared.size() > 1 ? fmt::format(" and {} more", compared.size() - 1) : "");
  throw PairError(PairError::Kind::kNoKernel,
                  fmt::format("--pair '{}': {}; the {}'s kernels left unmatched: {}", request, why,
                              side_word(which), unmatched.empty() ? "none" : unmatched));
}

// "vectorize (1024, 1, 1) (256, 1, 1), vec_tail (4, 1, 1) (256, 1, 1)": a pattern's selection.
std::string named(const Groups& groups, const std::vector<Key>& keys, Which which) {
  std::string text;
  for (const Key& key : keys) {
    const model::Kernel& k = *side_of(groups.at(key), which).launches.front();
    text += fmt::format("{}{} {} {}", text.empty() ? "" : ", ", k.display_name(),
                        k.grid.to_string(), k.block.to_string());
  }
  return text;
}

// Each unmatched group's places on one side: for each of its launches, how many launches of
// compared kernels (in both) precede it, and its rank among the unmatched launches of its
// launch configuration since the last of those. A kernel renamed in place keeps its places
// whatever else was added or removed around it.
using Places = std::vector<std::pair<size_t, size_t>>;
std::map<Key, Places> places_of(const Groups& groups, Which which, size_t launch_count) {
  std::vector<const Key*> owner(launch_count, nullptr);
  for (const auto& [key, sides] : groups) {
    for (size_t at : side_of(sides, which).positions) owner[at] = &key;
  }
  std::map<Key, Places> places;
  size_t compared = 0;
  std::map<Config, size_t> since;
  for (const Key* key : owner) {
    if (key == nullptr) continue;
    if (in_both(groups.at(*key))) {
      ++compared;
      since.clear();
      continue;
    }
    places[*key].emplace_back(compared, since[config_of(*key)]++);
  }
  return places;
}

// "after 0, 1 and 2 launches of compared kernels": where a group's launches are.
std::string where(const Places& places) {
  std::string text;
  for (size_t i = 0; i < places.size() && i < 4; ++i) {
    text += (i == 0                   ? ""
             : i + 1 == places.size() ? " and "
                                      : ", ") +
            std::to_string(places[i].first);
  }
  if (places.size() > 4) text += fmt::format(", … ({} launches)", places.size());
  return "after " + text;
}

// The shortest pattern that selects a group alone among every group of its side (so also with
// the kernels automatic pairing would take still unmatched): the function's name where it is a
// regex that does, else the whole name (an exact name selects its kernel first).
std::string pattern_for(const Groups& groups, Which which, const Key& key) {
  const model::Kernel& k = *side_of(groups.at(key), which).launches.front();
  std::string base = model::function_base_name(k.display_name());
  RE2::Options quiet;
  quiet.set_log_errors(false);
  RE2 regex(base, quiet);
  if (base.empty() || base == k.display_name() || !regex.ok()) return k.display_name();
  for (const auto& [other, sides] : groups) {
    const Side& side = side_of(sides, which);
    if (other != key && !side.launches.empty() &&
        (equals_a_name(*side.launches.front(), base) || matches(*side.launches.front(), regex))) {
      return k.display_name();
    }
  }
  return base;
}

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
  Groups groups;
  double baseline_total_ns = 0, candidate_total_ns = 0;
  auto add = [&](const model::Report& report, Which which, double& total_ns) {
    for (size_t i = 0; i < report.kernels.size(); ++i) {
      const model::Kernel& k = report.kernels[i];
      auto& sides = groups[key_of(k)];
      Side& side = which == Which::kBaseline ? sides.first : sides.second;
      side.launches.push_back(&k);
      side.positions.push_back(i);
      if (auto d = k.number("gpu__time_duration.sum")) {
        side.durations.push_back(*d);
        total_ns += *d;
      }
    }
  };
  add(baseline, Which::kBaseline, baseline_total_ns);
  add(candidate, Which::kCandidate, candidate_total_ns);
  // The candidate side of group `from` joins group `to` (the baseline's).
  auto join = [&groups](const Key& to, const Key& from) {
    Side& target = groups[to].second;
    Side& source = groups[from].second;
    target = std::move(source);
    groups.erase(from);
  };
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
      join(base_keys[0], cand_keys[0]);
    }
  }
  CaptureDiff diff;
  std::map<Key, Pairing> pairing;  // groups in both by another route than their name
  auto record = [&](const Key& base_key, const Key& cand_key, Pairing how, std::string request,
                    std::string reason) {
    const model::Kernel& b = *groups.at(base_key).first.launches.front();
    const model::Kernel& c = *groups.at(cand_key).second.launches.front();
    diff.pairs.push_back({b.display_name(), c.display_name(), b.grid, b.block, c.grid, c.block, how,
                          std::move(request), std::move(reason)});
    pairing[base_key] = how;
    join(base_key, cand_key);
  };
  // The user's pairs first: they say what the user knows, and leave fewer kernels for the
  // automatic pairing to place.
  for (const DiffOptions::Pair& pair : options.pairs) {
    std::string request = pair.baseline + "=" + pair.candidate;
    std::vector<Key> base_keys =
        select_for_pair(groups, Which::kBaseline, pair.baseline, request, baseline_total_ns);
    std::vector<Key> cand_keys =
        select_for_pair(groups, Which::kCandidate, pair.candidate, request, candidate_total_ns);
    if (base_keys.size() == 1 && cand_keys.size() == 1) {
      record(base_keys[0], cand_keys[0], Pairing::kOption, request, "");
      continue;
    }
    // One name on each side, launched in the same configurations: paired configuration by
    // configuration (a kernel renamed at two problem sizes).
    auto one_name = [&](const std::vector<Key>& keys, Which which) {
      for (const Key& key : keys) {
        if (side_of(groups.at(key), which).launches.front()->display_name() !=
            side_of(groups.at(keys.front()), which).launches.front()->display_name()) {
          return false;
        }
      }
      return true;
    };
    std::vector<Config> base_configs, cand_configs;
    for (const Key& key : base_keys) base_configs.push_back(config_of(key));
    for (const Key& key : cand_keys) cand_configs.push_back(config_of(key));
    std::sort(base_configs.begin(), base_configs.end());
    std::sort(cand_configs.begin(), cand_configs.end());
    bool by_configuration =
        one_name(base_keys, Which::kBaseline) && one_name(cand_keys, Which::kCandidate) &&
        base_configs == cand_configs &&
        std::adjacent_find(base_configs.begin(), base_configs.end()) == base_configs.end();
    if (!by_configuration) {
      auto selection = [&](const std::vector<Key>& keys, Which which, const std::string& pattern) {
        return fmt::format("'{}' selects {} kernel{} of the {}: {}", pattern, keys.size(),
                           keys.size() == 1 ? "" : "s", side_word(which),
                           named(groups, keys, which));
      };
      throw PairError(
          PairError::Kind::kAmbiguous,
          fmt::format("--pair '{}' is ambiguous: {}; {}; give patterns that select one kernel "
                      "each (^NAME$ matches a whole name), or one name on each side launched in "
                      "the same configurations",
                      request, selection(base_keys, Which::kBaseline, pair.baseline),
                      selection(cand_keys, Which::kCandidate, pair.candidate)));
    }
    std::sort(base_keys.begin(), base_keys.end(),
              [](const Key& a, const Key& b) { return config_of(a) < config_of(b); });
    std::sort(cand_keys.begin(), cand_keys.end(),
              [](const Key& a, const Key& b) { return config_of(a) < config_of(b); });
    for (size_t i = 0; i < base_keys.size(); ++i) {
      record(base_keys[i], cand_keys[i], Pairing::kOption, request, "");
    }
  }
  // Then the unmatched groups, per launch configuration, by their places (see diff_captures).
  // Durations never decide: they are the quantity under test, and pairing by them would pair
  // the kernels that changed least.
  {
    std::map<Key, Places> base_places =
        places_of(groups, Which::kBaseline, baseline.kernels.size());
    std::map<Key, Places> cand_places =
        places_of(groups, Which::kCandidate, candidate.kernels.size());
    std::map<Config, std::pair<std::vector<Key>, std::vector<Key>>> by_config;
    for (const auto& [key, sides] : groups) {
      if (in_both(sides)) continue;
      auto& [base_keys, cand_keys] = by_config[config_of(key)];
      (sides.first.launches.empty() ? cand_keys : base_keys).push_back(key);
    }
    auto hint = [&](const Key& base_key, const std::vector<Key>& cand_keys, std::string why) {
      PairHint h{
          unmatched_of(groups.at(base_key).first, baseline_total_ns), {}, std::move(why), ""};
      for (const Key& c : cand_keys) {
        h.candidates.push_back(unmatched_of(groups.at(c).second, candidate_total_ns));
      }
      h.suggested_pair =
          fmt::format("--pair '{}={}'", pattern_for(groups, Which::kBaseline, base_key),
                      pattern_for(groups, Which::kCandidate, cand_keys.front()));
      return h;
    };
    struct Made {
      Key base, cand;
      std::string reason;
    };
    std::vector<Made> made;
    for (auto& [config, keys] : by_config) {
      auto& [base_keys, cand_keys] = keys;
      if (base_keys.empty() || cand_keys.empty()) continue;
      auto by_place = [](const std::map<Key, Places>& places) {
        return [&places](const Key& a, const Key& b) { return places.at(a) < places.at(b); };
      };
      std::sort(base_keys.begin(), base_keys.end(), by_place(base_places));
      std::sort(cand_keys.begin(), cand_keys.end(), by_place(cand_places));
      bool same_places = base_keys.size() == cand_keys.size();
      for (size_t i = 0; same_places && i < base_keys.size(); ++i) {
        same_places = base_places.at(base_keys[i]) == cand_places.at(cand_keys[i]);
      }
      const model::Kernel& any = *groups.at(base_keys.front()).first.launches.front();
      std::string in_config = configuration(any.grid, any.block);
      if (same_places) {
        std::string reason =
            base_keys.size() == 1
                ? fmt::format(
                      "the one kernel left unmatched on each side with {}, launched at "
                      "the same places on both ({} launches of the kernels compared)",
                      in_config, where(base_places.at(base_keys.front())))
                : fmt::format(
                      "the {} kernels left unmatched on each side with {}, launched in "
                      "the same order: paired in that order",
                      base_keys.size(), in_config);
        for (size_t i = 0; i < base_keys.size(); ++i) {
          if (options.auto_pair) {
            made.push_back({base_keys[i], cand_keys[i], reason});
          } else {
            diff.hints.push_back(hint(base_keys[i], {cand_keys[i]}, "--no-auto-pair: " + reason));
          }
        }
        continue;
      }
      // Not one to one: a hint for each baseline kernel, never a pair.
      std::string why;
      if (base_keys.size() == 1 && cand_keys.size() == 1) {
        const Places& b = base_places.at(base_keys.front());
        const Places& c = cand_places.at(cand_keys.front());
        why = b.size() != c.size()
                  ? fmt::format(
                        "same {}, but launched {} times in the baseline and {} in the "
                        "candidate",
                        in_config, b.size(), c.size())
                  : fmt::format(
                        "same {}, but launched at other places: {} in the baseline, {} "
                        "in the candidate (launches of the kernels compared)",
                        in_config, where(b), where(c));
      } else {
        why = fmt::format(
            "{} kernel{} in the baseline and {} in the candidate left unmatched "
            "with {}{}: which is which is ambiguous",
            base_keys.size(), base_keys.size() == 1 ? "" : "s", cand_keys.size(), in_config,
            base_keys.size() == cand_keys.size() ? ", launched in other orders" : "");
      }
      for (const Key& b : base_keys) diff.hints.push_back(hint(b, cand_keys, why));
    }
    // The automatic pairs, made now that every configuration was placed against the same
    // compared kernels (a pair made earlier would have moved the places of later ones).
    for (Made& m : made) record(m.base, m.cand, Pairing::kAutomatic, "", std::move(m.reason));
  }
  // One kernel left on each side, in different configurations, may be a kernel renamed and
  // retuned at once: suggested, never paired (nothing ties them but being the last ones).
  {
    std::vector<Key> base_left, cand_left;
    for (const auto& [key, sides] : groups) {
      if (in_both(sides)) continue;
      (sides.first.launches.empty() ? cand_left : base_left).push_back(key);
    }
    if (base_left.size() == 1 && cand_left.size() == 1 &&
        config_of(base_left[0]) != config_of(cand_left[0])) {
      diff.hints.push_back(
          {unmatched_of(groups.at(base_left[0]).first, baseline_total_ns),
           {unmatched_of(groups.at(cand_left[0]).second, candidate_total_ns)},
           "the one kernel left unmatched on each side, in another launch configuration",
           fmt::format("--pair '{}={}'", pattern_for(groups, Which::kBaseline, base_left[0]),
                       pattern_for(groups, Which::kCandidate, cand_left[0]))});
    }
  }
  std::stable_sort(diff.hints.begin(), diff.hints.end(), [](const auto& a, const auto& b) {
    return a.baseline.time_us > b.baseline.time_us;
  });
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
    if (auto paired = pairing.find(key); paired != pairing.end()) {
      d.pairing = paired->second;
      if (cand.launches.front()->display_name() != d.name) {
        d.candidate_name = cand.launches.front()->display_name();
      }
    }
    if (in_both(sides)) {
      diff.coverage.baseline_compared_us += sum(base.durations) / 1000;
      diff.coverage.candidate_compared_us += sum(cand.durations) / 1000;
    } else if (cand.launches.empty()) {
      diff.unmatched_baseline.push_back(unmatched_of(base, baseline_total_ns));
    } else {
      diff.unmatched_candidate.push_back(unmatched_of(cand, candidate_total_ns));
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
  // Coverage: the compared kernels' share of each side's summed launch durations.
  diff.coverage.min_pct = options.min_coverage_pct;
  // Totals as compared + not compared, summed group by group like the compared time: with
  // nothing left out the share is exactly 100 %, not off in its last bits.
  for (const UnmatchedKernel& u : diff.unmatched_baseline)
    diff.coverage.baseline_total_us += u.time_us;
  for (const UnmatchedKernel& u : diff.unmatched_candidate) {
    diff.coverage.candidate_total_us += u.time_us;
  }
  diff.coverage.baseline_total_us += diff.coverage.baseline_compared_us;
  diff.coverage.candidate_total_us += diff.coverage.candidate_compared_us;
  if (baseline_total_ns > 0) {
    diff.coverage.baseline_pct =
        diff.coverage.baseline_compared_us / diff.coverage.baseline_total_us * 100;
  }
  if (candidate_total_ns > 0) {
    diff.coverage.candidate_pct =
        diff.coverage.candidate_compared_us / diff.coverage.candidate_total_us * 100;
  }
  for (auto* list : {&diff.unmatched_baseline, &diff.unmatched_candidate}) {
    std::stable_sort(list->begin(), list->end(),
                     [](const auto& a, const auto& b) { return a.time_us > b.time_us; });
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
