// kprof rank TRACE: which kernels carry the GPU time in a profiler trace, and which stages.
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "analysis/stages.h"
#include "cli/command.h"
#include "common/text.h"
#include "importers/chrome_trace/chrome_trace_reader.h"
#include "render/table.h"
#include "timeline/kernel_ranking.h"

namespace kprof::cli {
namespace {

struct RankOptions {
  std::string path;
  size_t top = 20;
  bool json = false;
  bool raw_names = false;
  size_t name_width = 70;
  std::string stages_path;
};

std::string pct(double share) { return fmt::format("{:.1f}", share * 100); }

ExitCode run_rank(const RankOptions& options, Output& output) {
  analysis::StageTable stages = analysis::load_stage_table(options.stages_path);
  timeline::RankingBuilder builder(stages, !options.raw_names);
  importers::TraceReadStats stats = importers::read_chrome_trace(options.path, builder);
  timeline::Ranking ranking = builder.finish();
  if (ranking.gpu_events == 0) {
    throw InputError(ExitCode::kInputInvalid, options.path, InputPosition::none(),
                     fmt::format("no GPU events (kernel, gpu_memcpy, gpu_memset) among its {} "
                                 "events: was the profiler run with CUDA activities?",
                                 stats.events));
  }
  if (options.json) {
    nlohmann::json kernels = nlohmann::json::array();
    for (const auto& k : ranking.kernels) {
      kernels.push_back({{"name", k.name}, {"kind", k.kind}, {"stage", k.stage},
                         {"count", k.count}, {"total_us", k.total_us},
                         {"mean_us", k.total_us / static_cast<double>(k.count)},
                         {"min_us", k.min_us}, {"max_us", k.max_us},
                         {"share_of_gpu_time", k.share_of_gpu_time},
                         {"share_of_wall", k.share_of_wall}});
    }
    nlohmann::json stage_list = nlohmann::json::array();
    for (const auto& s : ranking.stages) {
      stage_list.push_back({{"stage", s.stage}, {"count", s.count}, {"total_us", s.total_us},
                            {"share_of_gpu_time", s.share_of_gpu_time}});
    }
    nlohmann::json document = {
        {"schema", "kprof.rank/1"},
        {"tool", {{"name", "kprof"}, {"version", KPROF_VERSION}, {"argv", output.argv}}},
        {"trace", options.path},
        {"events", stats.events},
        {"gpu_events", ranking.gpu_events},
        {"gpu_time_us", ranking.gpu_time_us},
        {"wall_us", ranking.wall_us},
        {"kernels", kernels},
        {"stages", stage_list}};
    output.stdout_text = document.dump(1) + "\n";
    return ExitCode::kOk;
  }
  using render::TextTable;
  std::string out = fmt::format(
      "{}: {} GPU activities ({} kernels, {} memcpy, {} memset) of {} events; GPU time {} ms "
      "(summed durations) over a {} ms trace span; {} distinct names\n",
      options.path, ranking.gpu_events, ranking.kernel_events, ranking.memcpy_events,
      ranking.memset_events, stats.events, format_number(ranking.gpu_time_us / 1000),
      format_number(ranking.wall_us / 1000), ranking.kernels.size());
  TextTable table({{"#", TextTable::Align::kRight}, {"kernel"}, {"stage"},
                   {"count", TextTable::Align::kRight}, {"total ms", TextTable::Align::kRight},
                   {"mean us", TextTable::Align::kRight}, {"% GPU", TextTable::Align::kRight},
                   {"% wall", TextTable::Align::kRight}});
  size_t shown = std::min(options.top, ranking.kernels.size());
  for (size_t i = 0; i < shown; ++i) {
    const auto& k = ranking.kernels[i];
    table.add_row({std::to_string(i + 1), render::ellipsize(k.name, options.name_width), k.stage,
                   std::to_string(k.count), format_number(k.total_us / 1000),
                   format_number(k.total_us / static_cast<double>(k.count)),
                   pct(k.share_of_gpu_time), pct(k.share_of_wall)});
  }
  out += table.to_string();
  if (shown < ranking.kernels.size()) {
    double rest = 0;
    for (size_t i = shown; i < ranking.kernels.size(); ++i) rest += ranking.kernels[i].total_us;
    out += fmt::format("… {} more names, {}% of GPU time (--top N shows more)\n",
                       ranking.kernels.size() - shown, pct(rest / ranking.gpu_time_us));
  }
  TextTable by_stage({{"stage"}, {"count", TextTable::Align::kRight},
                      {"total ms", TextTable::Align::kRight}, {"% GPU", TextTable::Align::kRight}});
  for (const auto& s : ranking.stages) {
    by_stage.add_row({s.stage, std::to_string(s.count), format_number(s.total_us / 1000),
                      pct(s.share_of_gpu_time)});
  }
  out += "\nby stage\n" + by_stage.to_string();
  output.stdout_text = std::move(out);
  return ExitCode::kOk;
}

}  // namespace

void define_rank(CLI::App& parent, Runner& runner) {
  auto options = std::make_shared<RankOptions>();
  CLI::App* command = parent.add_subcommand(
      "rank", "Which kernels and stages carry the GPU time in a profiler trace");
  command->footer(
      "Reads a PyTorch profiler trace (Chrome trace JSON, .json or .json.gz — what vLLM's and\n"
      "SGLang's /start_profile write) in one streaming pass and ranks GPU activities (kernels,\n"
      "memcpy, memset) by total duration, with their share of the summed GPU time and of the\n"
      "trace's wall span, then groups them by pipeline stage. Names are normalised (return type\n"
      "and parameter list dropped, template arguments kept) unless --raw-names.\n\n"
      "Examples:\n"
      "  kprof rank trace.json.gz\n"
      "  kprof rank trace.json.gz --top 50 --json > ranking.json");
  command->add_option("TRACE", options->path, "PyTorch profiler trace (.json or .json.gz)")
      ->required();
  command->add_option("-n,--top", options->top, "Kernels to list")->capture_default_str();
  command->add_flag("--json", options->json, "Print JSON (schema kprof.rank/1), every kernel");
  command->add_flag("--raw-names", options->raw_names, "Rank by the names exactly as traced");
  command->add_option("--stages", options->stages_path,
                      "A pipeline-stage rule table replacing the built-in one");
  command->add_option("--name-width", options->name_width, "Kernel name column width")
      ->capture_default_str();
  command->callback([&runner, options] {
    runner = [options](Output& output) { return run_rank(*options, output); };
  });
}

}  // namespace kprof::cli
