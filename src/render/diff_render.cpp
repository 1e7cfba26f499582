#include "render/diff_render.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/error.h"
#include "common/text.h"
#include "render/envelope.h"
#include "render/report_json.h"
#include "render/table.h"

namespace kprof::render {
namespace {

std::string signed_pct(const std::optional<double>& value) {
  return value ? fmt::format("{:+.1f}", *value) : "—";
}

nlohmann::json dim3_json(const model::Dim3& d) { return {d.x, d.y, d.z}; }

std::string matched_by(analysis::Pairing how) {
  switch (how) {
    case analysis::Pairing::kName:
      return "name";
    case analysis::Pairing::kOption:
      return "--pair";
    case analysis::Pairing::kAutomatic:
      return "automatic";
  }
  return "";
}

nlohmann::json unmatched_json(const analysis::UnmatchedKernel& u) {
  return {{"name", u.name},
          {"grid", dim3_json(u.grid)},
          {"block", dim3_json(u.block)},
          {"launches", u.launches},
          {"time_us", u.time_us},
          {"share_pct", optional_json(u.share_pct)}};
}

std::string share(const analysis::UnmatchedKernel& u) {
  return u.share_pct ? fmt::format("{:.1f}%", *u.share_pct) : "—";
}

std::string coverage_pct(const std::optional<double>& pct) {
  return pct ? fmt::format("{:.1f}%", *pct) : "— (no durations)";
}

nlohmann::json kernel_json(const analysis::KernelDiff& d) {
  return {{"name", d.name},
          {"candidate_name",
           d.candidate_name.empty() ? nlohmann::json(nullptr) : nlohmann::json(d.candidate_name)},
          {"matched_by", matched_by(d.pairing)},
          {"grid", {d.grid.x, d.grid.y, d.grid.z}},
          {"block", {d.block.x, d.block.y, d.block.z}},
          {"candidate_grid",
           d.candidate_grid
               ? nlohmann::json({d.candidate_grid->x, d.candidate_grid->y, d.candidate_grid->z})
               : nlohmann::json(nullptr)},
          {"candidate_block",
           d.candidate_block
               ? nlohmann::json({d.candidate_block->x, d.candidate_block->y, d.candidate_block->z})
               : nlohmann::json(nullptr)},
          {"change", analysis::change_name(d.change)},
          {"baseline_launches", d.baseline_launches},
          {"candidate_launches", d.candidate_launches},
          {"baseline_duration_ns", optional_json(d.baseline_ns)},
          {"candidate_duration_ns", optional_json(d.candidate_ns)},
          {"change_pct", optional_json(d.change_pct)},
          {"noise_pct", optional_json(d.noise_pct)},
          {"threshold_pct", d.threshold_pct},
          {"floor_us", optional_json(d.floor_us)},
          {"baseline_verdict", d.baseline_verdict},
          {"candidate_verdict", d.candidate_verdict},
          {"baseline_sm_throughput_pct", optional_json(d.baseline_sm_pct)},
          {"candidate_sm_throughput_pct", optional_json(d.candidate_sm_pct)},
          {"baseline_memory_throughput_pct", optional_json(d.baseline_memory_pct)},
          {"candidate_memory_throughput_pct", optional_json(d.candidate_memory_pct)},
          {"baseline_sm_occupancy", optional_json(d.baseline_occupancy)},
          {"candidate_sm_occupancy", optional_json(d.candidate_occupancy)}};
}

}  // namespace

std::string diff_text(const analysis::CaptureDiff& diff, const std::string& baseline,
                      const std::string& candidate, const analysis::DiffOptions& options,
                      size_t name_width) {
  TextTable table({{"kernel"},
                   {"grid"},
                   {"block"},
                   {"n", TextTable::Align::kRight},
                   {"base us", TextTable::Align::kRight},
                   {"cand us", TextTable::Align::kRight},
                   {"Δ %", TextTable::Align::kRight},
                   {"noise %", TextTable::Align::kRight},
                   {"judged at %", TextTable::Align::kRight},
                   {"verdict"},
                   {"change"}});
  for (const auto& d : diff.kernels) {
    std::string verdict =
        d.baseline_verdict == d.candidate_verdict || d.candidate_verdict.empty() ||
                d.baseline_verdict.empty()
            ? (d.candidate_verdict.empty() ? d.baseline_verdict : d.candidate_verdict)
            : d.baseline_verdict + " → " + d.candidate_verdict;
    // A retuned kernel shows both launch configurations.
    auto launch = [&](const model::Dim3& before, const std::optional<model::Dim3>& after) {
      return after && *after != before ? before.to_string() + " → " + after->to_string()
                                       : before.to_string();
    };
    std::string name = d.candidate_name.empty() ? d.name : d.name + " → " + d.candidate_name;
    table.add_row(
        {ellipsize(name, name_width), launch(d.grid, d.candidate_grid),
         launch(d.block, d.candidate_block),
         fmt::format("{}/{}", d.baseline_launches, d.candidate_launches),
         d.baseline_ns ? format_number(*d.baseline_ns / 1000) : "—",
         d.candidate_ns ? format_number(*d.candidate_ns / 1000) : "—", signed_pct(d.change_pct),
         d.noise_pct ? fmt::format("{:.1f}", *d.noise_pct) : "—",
         fmt::format("{:.1f}", d.threshold_pct), verdict, analysis::change_name(d.change)});
  }
  std::string out = fmt::format("{} → {}: {} kernel groups, {} regression{}, {} improvement{}",
                                baseline, candidate, diff.kernels.size(), diff.regressions,
                                diff.regressions == 1 ? "" : "s", diff.improvements,
                                diff.improvements == 1 ? "" : "s");
  if (diff.not_enough_samples > 0) {
    out += fmt::format(", {} not enough samples to judge", diff.not_enough_samples);
  }
  out += "\n" + table.to_string();
  out += fmt::format(
      "A kernel (same name, grid and block; by name alone when each side launched it in one "
      "configuration, shown a → b) regresses when its median duration grows by more than "
      "{}% or than {}× the noise its repeated launches show, whichever is larger; a kernel "
      "launched once on a side must also move by more than {} us, else it is not enough samples "
      "to judge (capture more launches of it).\n",
      format_number(options.threshold_pct), format_number(options.noise_factor),
      format_number(options.single_sample_floor_us));
  if (diff.overall.change_pct) {
    out += fmt::format(
        "time-weighted (each kernel's median × its baseline launches, {} kernel groups in both): "
        "{} us → {} us, {}%: {}\n",
        diff.in_both, format_number(diff.overall.baseline_us),
        format_number(diff.overall.candidate_us), signed_pct(diff.overall.change_pct),
        analysis::change_name(diff.overall.change));
  }
  for (const analysis::KernelPair& p : diff.pairs) {
    std::string pair = p.baseline_name + " → " + p.candidate_name;
    out += p.how == analysis::Pairing::kOption
               ? fmt::format("paired by --pair '{}': {}\n", p.request, pair)
               : fmt::format("paired automatically: {}: {}\n", pair, p.reason);
  }
  const analysis::Coverage& c = diff.coverage;
  out += fmt::format(
      "coverage: the kernels compared hold {} of {}'s GPU time ({} of {} us) and {} of {}'s ({} "
      "of {} us){}\n",
      coverage_pct(c.baseline_pct), baseline, format_number(c.baseline_compared_us),
      format_number(c.baseline_total_us), coverage_pct(c.candidate_pct), candidate,
      format_number(c.candidate_compared_us), format_number(c.candidate_total_us),
      c.sufficient() ? fmt::format("; --min-coverage {}%", format_number(c.min_pct))
                     : fmt::format(": under --min-coverage {}%, this diff does not pass",
                                   format_number(c.min_pct)));
  // What was not compared, by share: the kernel under test renamed shows at the top.
  auto unmatched = [&](const std::vector<analysis::UnmatchedKernel>& list,
                       const std::string& side) {
    const size_t shown = 10;
    for (size_t i = 0; i < list.size() && i < shown; ++i) {
      const analysis::UnmatchedKernel& u = list[i];
      out += fmt::format(
          "not compared, only in {}: {} {} {}: {} of its GPU time ({} us, {} "
          "launch{})\n",
          side, u.name, u.grid.to_string(), u.block.to_string(), share(u), format_number(u.time_us),
          u.launches, u.launches == 1 ? "" : "es");
    }
    if (list.size() > shown) {
      double rest_us = 0, rest_pct = 0;
      for (size_t i = shown; i < list.size(); ++i) {
        rest_us += list[i].time_us;
        rest_pct += list[i].share_pct.value_or(0);
      }
      out += fmt::format(
          "not compared, only in {}: … {} more kernel groups, {:.1f}% of its GPU time together "
          "({} us)\n",
          side, list.size() - shown, rest_pct, format_number(rest_us));
    }
  };
  unmatched(diff.unmatched_baseline, baseline);
  unmatched(diff.unmatched_candidate, candidate);
  for (const analysis::PairHint& h : diff.hints) {
    std::string candidates;
    for (size_t i = 0; i < h.candidates.size(); ++i) {
      candidates += (i == 0                         ? ""
                     : i + 1 == h.candidates.size() ? " or "
                                                    : ", ") +
                    h.candidates[i].name + " (" + share(h.candidates[i]) + ")";
    }
    out += fmt::format("not paired automatically: {} ({}) → {}: {}; {}: {}\n", h.baseline.name,
                       share(h.baseline), candidates, h.why_not,
                       h.candidates.size() == 1 ? "if one became the other" : "say which",
                       h.suggested_pair);
  }
  return out;
}

nlohmann::json diff_json(const analysis::CaptureDiff& diff, const std::string& baseline,
                         const std::string& candidate, const analysis::DiffOptions& options,
                         const std::vector<std::string>& argv) {
  nlohmann::json kernels = nlohmann::json::array();
  for (const auto& d : diff.kernels) kernels.push_back(kernel_json(d));
  nlohmann::json pairs = nlohmann::json::array();
  for (const analysis::KernelPair& p : diff.pairs) {
    bool option = p.how == analysis::Pairing::kOption;
    pairs.push_back({{"baseline", p.baseline_name},
                     {"candidate", p.candidate_name},
                     {"baseline_grid", dim3_json(p.baseline_grid)},
                     {"baseline_block", dim3_json(p.baseline_block)},
                     {"candidate_grid", dim3_json(p.candidate_grid)},
                     {"candidate_block", dim3_json(p.candidate_block)},
                     {"how", matched_by(p.how)},
                     {"request", option ? nlohmann::json(p.request) : nlohmann::json(nullptr)},
                     {"reason", option ? nlohmann::json(nullptr) : nlohmann::json(p.reason)}});
  }
  nlohmann::json unmatched_baseline = nlohmann::json::array();
  for (const auto& u : diff.unmatched_baseline) unmatched_baseline.push_back(unmatched_json(u));
  nlohmann::json unmatched_candidate = nlohmann::json::array();
  for (const auto& u : diff.unmatched_candidate) unmatched_candidate.push_back(unmatched_json(u));
  nlohmann::json hints = nlohmann::json::array();
  for (const analysis::PairHint& h : diff.hints) {
    nlohmann::json candidates = nlohmann::json::array();
    for (const auto& u : h.candidates) candidates.push_back(unmatched_json(u));
    hints.push_back({{"baseline", unmatched_json(h.baseline)},
                     {"candidates", candidates},
                     {"why_not", h.why_not},
                     {"suggested_pair", h.suggested_pair}});
  }
  return with_envelope("kprof.diff/1", argv,
                       {{"baseline", baseline},
                        {"candidate", candidate},
                        {"threshold_pct", options.threshold_pct},
                        {"noise_factor", options.noise_factor},
                        {"single_sample_floor_us", options.single_sample_floor_us},
                        {"regressions", diff.regressions},
                        {"improvements", diff.improvements},
                        {"not_enough_samples", diff.not_enough_samples},
                        {"overall",
                         {{"baseline_us", diff.overall.baseline_us},
                          {"candidate_us", diff.overall.candidate_us},
                          {"change_pct", optional_json(diff.overall.change_pct)},
                          {"change", analysis::change_name(diff.overall.change)}}},
                        {"regressed", diff.regressed()},
                        {"min_coverage_pct", options.min_coverage_pct},
                        {"auto_pair", options.auto_pair},
                        {"coverage",
                         {{"baseline_pct", optional_json(diff.coverage.baseline_pct)},
                          {"candidate_pct", optional_json(diff.coverage.candidate_pct)},
                          {"baseline_compared_us", diff.coverage.baseline_compared_us},
                          {"baseline_total_us", diff.coverage.baseline_total_us},
                          {"candidate_compared_us", diff.coverage.candidate_compared_us},
                          {"candidate_total_us", diff.coverage.candidate_total_us},
                          {"sufficient", diff.coverage.sufficient()}}},
                        {"passed", diff.passed()},
                        {"pairs", pairs},
                        {"unmatched_baseline", unmatched_baseline},
                        {"unmatched_candidate", unmatched_candidate},
                        {"hints", hints},
                        {"kernels", kernels}});
}

std::string nothing_in_common(const analysis::CaptureDiff& diff, const std::string& baseline,
                              const std::string& candidate) {
  auto side = [&](analysis::Change only, const std::string& what) {
    std::vector<std::string> names;
    for (const auto& d : diff.kernels) {
      if (d.change == only && std::find(names.begin(), names.end(), d.name) == names.end()) {
        names.push_back(d.name);
      }
    }
    std::sort(names.begin(), names.end());
    std::string shown;
    for (size_t i = 0; i < names.size() && i < 3; ++i) {
      shown += (i ? ", " : "") + ellipsize(names[i], 60);
    }
    if (names.size() > 3) shown += fmt::format(", … ({} names)", names.size());
    return fmt::format("{} has {}", what, names.empty() ? "no kernel" : shown);
  };
  return fmt::format(
      "nothing in common: no kernel of {} has the same name, grid and block in {}, so nothing "
      "was compared; {}; {}; {}",
      baseline, candidate, side(analysis::Change::kOnlyInBaseline, baseline),
      side(analysis::Change::kOnlyInCandidate, candidate),
      diff.hints.empty() ? "a kernel renamed between them is paired with --pair BASELINE=CANDIDATE"
                         : "if a kernel was renamed: " + diff.hints.front().suggested_pair + " (" +
                               diff.hints.front().why_not + ")");
}

std::string coverage_note(const analysis::CaptureDiff& diff, const std::string& baseline,
                          const std::string& candidate, ExitCode code) {
  const analysis::Coverage& c = diff.coverage;
  auto side = [](const std::vector<analysis::UnmatchedKernel>& list, const std::string& name) {
    std::string text;
    for (size_t i = 0; i < list.size() && i < 3; ++i) {
      text += (i ? ", " : "") + ellipsize(list[i].name, 60) + " (" + share(list[i]) + ")";
    }
    if (list.size() > 3) text += fmt::format(", … ({} kernel groups)", list.size());
    return fmt::format("{}: {}", name, text.empty() ? "none" : text);
  };
  std::string what = diff.hints.empty()
                         ? "pair renamed kernels with --pair BASELINE=CANDIDATE"
                         : "if a kernel was renamed: " + diff.hints.front().suggested_pair;
  return fmt::format(
      "kprof: {}the kernels compared cover {} of {}'s GPU time and {} of {}'s, under "
      "--min-coverage {}%; not compared: {}; {}; {}{}\n",
      code == ExitCode::kOk ? "warning: " : "", coverage_pct(c.baseline_pct), baseline,
      coverage_pct(c.candidate_pct), candidate, format_number(c.min_pct),
      side(diff.unmatched_baseline, baseline), side(diff.unmatched_candidate, candidate), what,
      code == ExitCode::kCoverageLow ? fmt::format(" (exit {})", static_cast<int>(code)) : "");
}

}  // namespace kprof::render
