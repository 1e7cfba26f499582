// kprof rank TRACE: which kernels carry the GPU time in a profiler trace, and which stages.
#include "cli/rank_command.h"

#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "analysis/stages.h"
#include "cli/command.h"
#include "cli/op_rank.h"
#include "cli/ranks_command.h"
#include "importers/common/read_trace.h"
#include "render/report_json.h"
#include "render/trace_render.h"
#include "timeline/kernel_ranking.h"
#include "timeline/step_budget.h"

namespace kprof::cli {

RankedTrace rank_trace(const std::string& path, const std::vector<std::string>& argv,
                       const analysis::StageTable& stages, bool raw_names) {
  timeline::RankingBuilder builder(stages, !raw_names);
  render::TraceSource source{path, argv, importers::read_trace(path, builder)};
  timeline::Ranking ranking = builder.finish();
  if (ranking.gpu_events == 0) {
    throw InputError(ExitCode::kInputInvalid, path, InputPosition::none(),
                     fmt::format("no GPU events (kernel, gpu_memcpy, gpu_memset) among its {} "
                                 "events: was the profiler run with CUDA activities?",
                                 source.stats.events));
  }
  return {std::move(source), std::move(ranking)};
}

namespace {

struct RankOptions {
  std::vector<std::string> paths;  // several: one trace per tensor-parallel rank
  std::string path;
  size_t top = 20;
  bool json = false;
  bool raw_names = false;
  size_t name_width = 70;
  std::string stages_path;
  bool per_step = false;
  std::string step_regex;
  std::string by = "kernel";
};

// Per step (as kprof budget finds steps): the kernels that carry each step's GPU time.
ExitCode run_rank_per_step(const RankOptions& options, Output& output) {
  timeline::BudgetBuilder builder;
  render::TraceSource source{options.path, output.argv,
                             importers::read_trace(options.path, builder)};
  output.stderr_text += render::trace_warnings(source);
  timeline::Budget budget;
  try {
    budget = builder.finish(options.step_regex, {});
  } catch (const std::invalid_argument& error) {
    throw UsageError(error.what());
  }
  if (budget.total_span_us <= 0) {
    throw InputError(ExitCode::kInputInvalid, options.path, InputPosition::none(),
                     "no GPU activity in the trace's steps: was the profiler recording CUDA?");
  }
  output.stdout_text =
      options.json ? render::json_text(render::step_ranking_json(budget, source))
                   : render::step_ranking_text(budget, source, options.top, options.name_width);
  return ExitCode::kOk;
}

ExitCode run_rank(RankOptions options, Output& output) {
  if (options.per_step && options.by != "kernel") {
    throw UsageError("--per-step ranks kernels within steps; it does not combine with --by " +
                     options.by);
  }
  if (options.paths.size() > 1) {
    if (options.per_step) throw UsageError("--per-step takes one trace, not several ranks'");
    if (options.by != "kernel") {
      throw UsageError("--by " + options.by + " takes one trace, not several ranks'");
    }
    return run_rank_over_ranks({options.paths, options.stages_path, options.raw_names, options.json,
                                options.top, options.name_width},
                               output);
  }
  options.path = options.paths.front();
  if (options.per_step) return run_rank_per_step(options, output);
  if (options.by != "kernel") {
    return run_rank_by_op({options.path, options.by, options.json, options.top, options.name_width},
                          output);
  }
  RankedTrace ranked =
      rank_trace(options.path, output.argv, analysis::load_stage_table(options.stages_path),
                 options.raw_names);
  output.stderr_text += render::trace_warnings(ranked.source);
  output.stdout_text =
      options.json
          ? render::json_text(render::ranking_json(ranked.ranking, ranked.source))
          : render::ranking_text(ranked.ranking, ranked.source, options.top, options.name_width);
  return ExitCode::kOk;
}

}  // namespace

RankText rank_trace_text(const std::string& path, const std::vector<std::string>& argv, size_t top,
                         size_t name_width) {
  RankedTrace ranked = rank_trace(path, argv, analysis::load_stage_table(""), false);
  return {render::ranking_text(ranked.ranking, ranked.source, top, name_width),
          render::trace_warnings(ranked.source)};
}

void define_rank(CLI::App& parent, Runner& runner) {
  auto options = std::make_shared<RankOptions>();
  CLI::App* command = parent.add_subcommand(
      "rank", "Which kernels and stages carry the GPU time in a profiler trace");
  command->footer(
      "Reads a PyTorch profiler trace (Chrome trace JSON, .json or .json.gz — what vLLM's and\n"
      "SGLang's /start_profile write) in one streaming pass, or an Nsight Systems SQLite export\n"
      "(nsys export --type sqlite), and ranks GPU activities (kernels, memcpy, memset) by total\n"
      "duration, with their share of the summed GPU time and of the trace's wall span, then\n"
      "groups them by pipeline stage. Names are normalised (return type and parameter list\n"
      "dropped, template arguments kept) unless --raw-names. Events with an impossible time\n"
      "(a negative, non-finite or absurdly long duration) are skipped with a warning.\n\n"
      "Examples:\n"
      "  kprof rank trace.json.gz\n"
      "  kprof rank trace.json.gz --top 50 --json > ranking.json\n"
      "  kprof rank report.sqlite          # nsys export --type sqlite report.nsys-rep\n"
      "  kprof rank rank0.json.gz rank1.json.gz   # one trace per tensor-parallel rank\n"
      "  kprof rank trace.json.gz --by op      # GPU time per PyTorch operator");
  command
      ->add_option("TRACE", options->paths,
                   "PyTorch profiler trace (.json or .json.gz) or Nsight Systems SQLite export; "
                   "several: one per rank, compared across ranks")
      ->required();
  command->add_option("-n,--top", options->top, "Kernels to list")->capture_default_str();
  command->add_flag("--json", options->json, "Print JSON (schema kprof.rank/1), every kernel");
  command->add_flag("--raw-names", options->raw_names, "Rank by the names exactly as traced");
  command->add_flag("--per-step", options->per_step,
                    "Rank within each step (ProfilerStep#N, or --step), by launch correlation "
                    "as kprof budget attributes work");
  command
      ->add_option("--by", options->by,
                   "kernel (default), op: GPU time per PyTorch operator (innermost cpu_op around "
                   "each launch, JSON kprof.rank-ops/1), module: per nn.Module path "
                   "(traces recorded with_modules=True)")
      ->check(CLI::IsMember({"kernel", "op", "module"}))
      ->capture_default_str();
  command->add_option("--step", options->step_regex,
                      "With --per-step: regex over annotation names that delimit steps");
  command->add_option("--stages", options->stages_path,
                      "A pipeline-stage rule table replacing the built-in one");
  command->add_option("--name-width", options->name_width, "Kernel name column width (at least 8)")
      ->check(CLI::Range(8, 100000))
      ->capture_default_str();
  command->callback([&runner, options] {
    runner = [options](Output& output) { return run_rank(*options, output); };
  });
}

}  // namespace kprof::cli
