#include "render/diff_render.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/text.h"
#include "render/envelope.h"
#include "render/report_json.h"
#include "render/table.h"

namespace kprof::render {
namespace {

std::string signed_pct(const std::optional<double>& value) {
  return value ? fmt::format("{:+.1f}", *value) : "—";
}

nlohmann::json kernel_json(const analysis::KernelDiff& d) {
  return {{"name", d.name},
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
    table.add_row(
        {ellipsize(d.name, name_width), launch(d.grid, d.candidate_grid),
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
  return out;
}

nlohmann::json diff_json(const analysis::CaptureDiff& diff, const std::string& baseline,
                         const std::string& candidate, const analysis::DiffOptions& options,
                         const std::vector<std::string>& argv) {
  nlohmann::json kernels = nlohmann::json::array();
  for (const auto& d : diff.kernels) kernels.push_back(kernel_json(d));
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
      "was compared; {}; {}",
      baseline, candidate, side(analysis::Change::kOnlyInBaseline, baseline),
      side(analysis::Change::kOnlyInCandidate, candidate));
}

}  // namespace kprof::render
