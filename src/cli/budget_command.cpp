// kprof budget TRACE: per step, is the GPU kept busy (kernel-bound) or waiting for the host?
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "common/text.h"
#include "common/utf8.h"
#include "importers/nsys_sqlite/nsys_sqlite_reader.h"
#include "render/report_json.h"
#include "render/table.h"
#include "timeline/step_budget.h"

namespace kprof::cli {
namespace {

struct BudgetOptions {
  std::string path;
  std::string step_regex;
  double host_bound_below_pct = 60;
  double kernel_bound_from_pct = 90;
  bool json = false;
};

std::string ms(double us) { return format_number(us / 1000); }

ExitCode run_budget(const BudgetOptions& options, Output& output) {
  if (options.host_bound_below_pct > options.kernel_bound_from_pct) {
    throw UsageError("--host-bound-below must not exceed --kernel-bound-from");
  }
  timeline::BudgetThresholds thresholds{options.host_bound_below_pct / 100,
                                        options.kernel_bound_from_pct / 100};
  timeline::BudgetBuilder builder;
  importers::TraceReadStats stats = importers::read_trace(options.path, builder);
  if (std::string warning = importers::skipped_events_warning(options.path, stats);
      !warning.empty()) {
    output.stderr_text += "kprof: " + escape_for_terminal(warning) + "\n";
  }
  timeline::Budget budget;
  try {
    budget = builder.finish(options.step_regex, thresholds);
  } catch (const std::invalid_argument& error) {
    throw UsageError(error.what());
  }
  if (budget.total_span_us <= 0) {
    throw InputError(ExitCode::kInputInvalid, options.path, InputPosition::none(),
                     "no GPU activity in the trace's steps: was the profiler recording CUDA?");
  }
  double busy = budget.total_busy_us / budget.total_span_us;
  std::string threshold_text = fmt::format(
      "thresholds: host-bound below {}% GPU busy (of the GPU span of a step's work), "
      "kernel-bound from {}%, mixed between",
      format_number(options.host_bound_below_pct), format_number(options.kernel_bound_from_pct));
  std::string advice;
  if (budget.overall == timeline::StepVerdict::kHostBound) {
    advice = fmt::format(
        "The GPU is busy only {:.0f}% of the time its work spans: it waits on the host between "
        "kernels. Per-kernel counter work is moot here — a kernel made twice as fast saves at most "
        "{:.0f}% of a step — until launches are batched (CUDA graphs, torch.compile "
        "mode=\"reduce-overhead\") or the host work shrinks.",
        busy * 100, busy * 50);
  } else if (budget.overall == timeline::StepVerdict::kKernelBound) {
    advice = fmt::format(
        "The GPU is busy {:.0f}% of the time its work spans: the steps are kernel-bound, so "
        "faster kernels shorten them — rank them (kprof rank) and capture the largest (kprof "
        "analyze).",
        busy * 100);
  }
  if (options.json) {
    nlohmann::json steps = nlohmann::json::array();
    for (const auto& s : budget.steps) {
      steps.push_back({{"name", s.name},
                       {"source", s.source},
                       {"start_us", s.start_us},
                       {"host_duration_us", s.host_duration_us},
                       {"gpu_span_us", s.gpu_span_us},
                       {"gpu_busy_us", s.gpu_busy_us},
                       {"host_gap_us", s.host_gap_us},
                       {"busy_fraction", s.busy_fraction},
                       {"gpu_activities", s.gpu_activities},
                       {"launches", s.kernel_launches},
                       {"graph_launches", s.graph_launches},
                       {"verdict", timeline::step_verdict_name(s.verdict)}});
    }
    nlohmann::json document = {
        {"schema", "kprof.budget/1"},
        {"tool", {{"name", "kprof"}, {"version", KPROF_VERSION}, {"argv", output.argv}}},
        {"trace", options.path},
        {"steps_from", budget.step_selector},
        {"thresholds",
         {{"host_bound_below", thresholds.host_bound_below},
          {"kernel_bound_from", thresholds.kernel_bound_from}}},
        {"busy_fraction", busy},
        {"verdict", timeline::step_verdict_name(budget.overall)},
        {"advice", advice},
        {"steps", steps}};
    output.stdout_text = render::json_text(document);
    return ExitCode::kOk;
  }
  using render::TextTable;
  TextTable table({{"step"},
                   {"host ms", TextTable::Align::kRight},
                   {"GPU span ms", TextTable::Align::kRight},
                   {"GPU busy ms", TextTable::Align::kRight},
                   {"host gap ms", TextTable::Align::kRight},
                   {"busy %", TextTable::Align::kRight},
                   {"launches", TextTable::Align::kRight},
                   {"graphs", TextTable::Align::kRight},
                   {"verdict"}});
  for (const auto& s : budget.steps) {
    table.add_row({s.name, ms(s.host_duration_us), ms(s.gpu_span_us), ms(s.gpu_busy_us),
                   ms(s.host_gap_us), fmt::format("{:.1f}", s.busy_fraction * 100),
                   std::to_string(s.kernel_launches), std::to_string(s.graph_launches),
                   timeline::step_verdict_name(s.verdict)});
  }
  std::string out =
      fmt::format("{}: {} step{} ({}) — {}: GPU busy {:.1f}% of its span\n",
                  escape_for_terminal(options.path), budget.steps.size(),
                  budget.steps.size() == 1 ? "" : "s", escape_for_terminal(budget.step_selector),
                  timeline::step_verdict_name(budget.overall), busy * 100);
  out += table.to_string();
  out += threshold_text + "\n";
  if (!advice.empty()) out += advice + "\n";
  output.stdout_text = std::move(out);
  return ExitCode::kOk;
}

}  // namespace

void define_budget(CLI::App& parent, Runner& runner) {
  auto options = std::make_shared<BudgetOptions>();
  CLI::App* command = parent.add_subcommand(
      "budget", "Per step: GPU busy vs host gap, and whether the step is kernel- or host-bound");
  command->footer(
      "TRACE is a PyTorch profiler trace (Chrome trace JSON, .json or .json.gz) or an Nsight\n"
      "Systems SQLite export (nsys export --type sqlite; its NVTX ranges are the annotations).\n"
      "Steps are the trace's ProfilerStep#N annotations (torch.profiler schedule), or the\n"
      "annotations --step matches (record_function names, CPU side preferred), or the whole\n"
      "trace. A step's GPU work is every kernel, memcpy and memset whose launch call happened\n"
      "inside it (found by correlation id, so the kernels of a cudaGraphLaunch count); for a\n"
      "GPU-side annotation, the GPU activity inside its span. GPU busy is the union of that\n"
      "work's intervals over all streams; the host gap is the rest of its span. Events with an\n"
      "impossible time (a negative, non-finite or absurdly long duration) are skipped with a\n"
      "warning.\n\n"
      "Examples:\n"
      "  kprof budget trace.json.gz\n"
      "  kprof budget trace.json.gz --step '^decode_step$' --json\n"
      "  kprof budget report.sqlite --step '^decode'   # NVTX ranges of an nsys export");
  command
      ->add_option("TRACE", options->path,
                   "PyTorch profiler trace (.json or .json.gz) or Nsight Systems SQLite export")
      ->required();
  command->add_option("--step", options->step_regex,
                      "Regex (RE2) over annotation names that delimit steps");
  command
      ->add_option("--host-bound-below", options->host_bound_below_pct,
                   "GPU busy % under which a step is host-bound")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  command
      ->add_option("--kernel-bound-from", options->kernel_bound_from_pct,
                   "GPU busy % from which a step is kernel-bound")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  command->add_flag("--json", options->json, "Print JSON (schema kprof.budget/1)");
  command->callback([&runner, options] {
    runner = [options](Output& output) { return run_budget(*options, output); };
  });
}

}  // namespace kprof::cli
