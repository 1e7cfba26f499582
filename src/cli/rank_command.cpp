// kprof rank TRACE: which kernels carry the GPU time in a profiler trace, and which stages.
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "analysis/stages.h"
#include "cli/command.h"
#include "common/text.h"
#include "common/utf8.h"
#include "importers/nsys_sqlite/nsys_sqlite_reader.h"
#include "render/report_json.h"
#include "render/table.h"
#include "timeline/kernel_ranking.h"
#include "timeline/step_budget.h"

namespace kprof::cli {
namespace {

struct RankOptions {
  std::string path;
  size_t top = 20;
  bool json = false;
  bool raw_names = false;
  size_t name_width = 70;
  std::string stages_path;
  bool per_step = false;
  std::string step_regex;
};

std::string pct(double share) { return fmt::format("{:.1f}", share * 100); }

// Per step (as kprof budget finds steps): the kernels that carry each step's GPU time.
ExitCode run_rank_per_step(const RankOptions& options, Output& output) {
  timeline::BudgetBuilder builder;
  importers::TraceReadStats stats = importers::read_trace(options.path, builder);
  if (std::string warning = importers::skipped_events_warning(options.path, stats);
      !warning.empty()) {
    output.stderr_text += "kprof: " + escape_for_terminal(warning) + "\n";
  }
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
  if (options.json) {
    nlohmann::json steps = nlohmann::json::array();
    for (const auto& step : budget.steps) {
      double total = 0;
      for (const auto& [name, us] : step.kernels) total += us;
      nlohmann::json kernels = nlohmann::json::array();
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
    output.stdout_text = render::json_text(nlohmann::json{
        {"schema", "kprof.rank-steps/1"},
        {"tool", {{"name", "kprof"}, {"version", KPROF_VERSION}, {"argv", output.argv}}},
        {"trace", options.path},
        {"steps_from", budget.step_selector},
        {"steps", steps}});
    return ExitCode::kOk;
  }
  std::string out =
      fmt::format("{}: {} step{} ({})\n", escape_for_terminal(options.path), budget.steps.size(),
                  budget.steps.size() == 1 ? "" : "s", escape_for_terminal(budget.step_selector));
  for (const auto& step : budget.steps) {
    double total = 0;
    for (const auto& [name, us] : step.kernels) total += us;
    out +=
        fmt::format("\n{}: GPU time {} ms, GPU busy {} ms of a {} ms span\n",
                    escape_for_terminal(step.name), format_number(total / 1000),
                    format_number(step.gpu_busy_us / 1000), format_number(step.gpu_span_us / 1000));
    render::TextTable table({{"#", render::TextTable::Align::kRight},
                             {"kernel"},
                             {"ms", render::TextTable::Align::kRight},
                             {"% of step", render::TextTable::Align::kRight}});
    size_t shown = std::min(options.top, step.kernels.size());
    for (size_t i = 0; i < shown; ++i) {
      const auto& [name, us] = step.kernels[i];
      table.add_row({std::to_string(i + 1), render::ellipsize(name, options.name_width),
                     format_number(us / 1000), pct(total > 0 ? us / total : 0)});
    }
    out += table.to_string();
  }
  output.stdout_text = std::move(out);
  return ExitCode::kOk;
}

ExitCode run_rank(const RankOptions& options, Output& output) {
  if (options.per_step) return run_rank_per_step(options, output);
  analysis::StageTable stages = analysis::load_stage_table(options.stages_path);
  timeline::RankingBuilder builder(stages, !options.raw_names);
  importers::TraceReadStats stats = importers::read_trace(options.path, builder);
  timeline::Ranking ranking = builder.finish();
  if (std::string warning = importers::skipped_events_warning(options.path, stats);
      !warning.empty()) {
    output.stderr_text += "kprof: " + escape_for_terminal(warning) + "\n";
  }
  if (ranking.gpu_events == 0) {
    throw InputError(ExitCode::kInputInvalid, options.path, InputPosition::none(),
                     fmt::format("no GPU events (kernel, gpu_memcpy, gpu_memset) among its {} "
                                 "events: was the profiler run with CUDA activities?",
                                 stats.events));
  }
  if (options.json) {
    nlohmann::json kernels = nlohmann::json::array();
    for (const auto& k : ranking.kernels) {
      kernels.push_back({{"name", k.name},
                         {"kind", k.kind},
                         {"stage", k.stage},
                         {"count", k.count},
                         {"total_us", k.total_us},
                         {"mean_us", k.total_us / static_cast<double>(k.count)},
                         {"min_us", k.min_us},
                         {"max_us", k.max_us},
                         {"share_of_gpu_time", k.share_of_gpu_time},
                         {"share_of_wall", k.share_of_wall}});
    }
    nlohmann::json stage_list = nlohmann::json::array();
    for (const auto& s : ranking.stages) {
      stage_list.push_back({{"stage", s.stage},
                            {"count", s.count},
                            {"total_us", s.total_us},
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
    output.stdout_text = render::json_text(document);
    return ExitCode::kOk;
  }
  using render::TextTable;
  std::string out = fmt::format(
      "{}: {} GPU activities ({} kernels, {} memcpy, {} memset) of {} events; GPU time {} ms "
      "(summed durations) over a {} ms trace span; {} distinct names\n",
      escape_for_terminal(options.path), ranking.gpu_events, ranking.kernel_events,
      ranking.memcpy_events, ranking.memset_events, stats.events,
      format_number(ranking.gpu_time_us / 1000), format_number(ranking.wall_us / 1000),
      ranking.kernels.size());
  TextTable table({{"#", TextTable::Align::kRight},
                   {"kernel"},
                   {"stage"},
                   {"count", TextTable::Align::kRight},
                   {"total ms", TextTable::Align::kRight},
                   {"mean us", TextTable::Align::kRight},
                   {"% GPU", TextTable::Align::kRight},
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
  TextTable by_stage({{"stage"},
                      {"count", TextTable::Align::kRight},
                      {"total ms", TextTable::Align::kRight},
                      {"% GPU", TextTable::Align::kRight}});
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
      "SGLang's /start_profile write) in one streaming pass, or an Nsight Systems SQLite export\n"
      "(nsys export --type sqlite), and ranks GPU activities (kernels, memcpy, memset) by total\n"
      "duration, with their share of the summed GPU time and of the trace's wall span, then\n"
      "groups them by pipeline stage. Names are normalised (return type and parameter list\n"
      "dropped, template arguments kept) unless --raw-names. Events with an impossible time\n"
      "(a negative, non-finite or absurdly long duration) are skipped with a warning.\n\n"
      "Examples:\n"
      "  kprof rank trace.json.gz\n"
      "  kprof rank trace.json.gz --top 50 --json > ranking.json\n"
      "  kprof rank report.sqlite          # nsys export --type sqlite report.nsys-rep");
  command
      ->add_option("TRACE", options->path,
                   "PyTorch profiler trace (.json or .json.gz) or Nsight Systems SQLite export")
      ->required();
  command->add_option("-n,--top", options->top, "Kernels to list")->capture_default_str();
  command->add_flag("--json", options->json, "Print JSON (schema kprof.rank/1), every kernel");
  command->add_flag("--raw-names", options->raw_names, "Rank by the names exactly as traced");
  command->add_flag("--per-step", options->per_step,
                    "Rank within each step (ProfilerStep#N, or --step), by launch correlation "
                    "as kprof budget attributes work");
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
