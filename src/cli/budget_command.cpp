// kprof budget TRACE: per step, is the GPU kept busy (kernel-bound) or waiting for the host?
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "importers/common/read_trace.h"
#include "render/report_json.h"
#include "render/trace_render.h"
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

ExitCode run_budget(const BudgetOptions& options, Output& output) {
  if (options.host_bound_below_pct > options.kernel_bound_from_pct) {
    throw UsageError("--host-bound-below must not exceed --kernel-bound-from");
  }
  timeline::BudgetThresholds thresholds{options.host_bound_below_pct / 100,
                                        options.kernel_bound_from_pct / 100};
  timeline::BudgetBuilder builder;
  render::TraceSource source{options.path, output.argv,
                             importers::read_trace(options.path, builder)};
  output.stderr_text += render::trace_warnings(source);
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
  output.stdout_text = options.json
                           ? render::json_text(render::budget_json(budget, thresholds, source))
                           : render::budget_text(budget, thresholds, source);
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
