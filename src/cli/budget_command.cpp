// kprof budget TRACE: per step, is the GPU kept busy (kernel-bound) or waiting for the host?
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "analysis/stages.h"
#include "cli/command.h"
#include "cli/ranks_command.h"
#include "importers/common/read_trace.h"
#include "render/report_json.h"
#include "render/trace_render.h"
#include "timeline/step_budget.h"

namespace kprof::cli {
namespace {

struct BudgetOptions {
  std::vector<std::string> paths;  // several: one trace per tensor-parallel rank
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
  if (options.paths.size() > 1) {
    return run_budget_over_ranks({options.paths, options.step_regex, thresholds, options.json},
                                 output);
  }
  const std::string& path = options.paths.front();
  analysis::StageTable stages = analysis::load_stage_table("");
  timeline::BudgetBuilder builder(&stages);
  render::TraceSource source{path, output.argv, importers::read_trace(path, builder)};
  output.stderr_text += render::trace_warnings(source);
  timeline::Budget budget;
  try {
    budget = builder.finish(options.step_regex, thresholds);
  } catch (const std::invalid_argument& error) {
    throw UsageError(error.what());
  }
  if (budget.total_span_us <= 0) {
    throw InputError(ExitCode::kInputInvalid, path, InputPosition::none(),
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
      "Steps are the first kind of step annotation found: PyTorch's ProfilerStep#N, vLLM's\n"
      "execute_context_N(T)_generation_N(T) (or execute_new_N_cached_N), SGLang's step[...],\n"
      "TensorRT-LLM's _forward_step; or the annotations --step matches (record_function names,\n"
      "CPU side preferred); or the whole trace. A step's GPU work is every kernel, memcpy and\n"
      "memset whose launch call happened inside it in the same process (found by correlation id,\n"
      "so the kernels of a cudaGraphLaunch count); for a GPU-side annotation, the GPU activity\n"
      "inside its span. Each device is accounted on its own: GPU busy is the union of its work's\n"
      "intervals over its streams, and each idle interval is the host's (host gap: the next\n"
      "item's launch call ended after the device ran out of work) or the device's own (already\n"
      "enqueued: inside a CUDA graph, a dependency, launch latency). The verdict is taken from\n"
      "busy / (busy + host gap). Exposed communication is time a device ran only communication\n"
      "kernels (NCCL, custom all-reduce, multimem). Several traces, one per tensor-parallel\n"
      "rank, are read one after the other and compared step by step (the i-th step of each);\n"
      "they must have as many steps. Events with an impossible time (a negative, non-finite or\n"
      "absurdly long duration) are skipped with a warning.\n\n"
      "Examples:\n"
      "  kprof budget trace.json.gz\n"
      "  kprof budget trace.json.gz --step '^decode_step$' --json\n"
      "  kprof budget report.sqlite --step '^decode'   # NVTX ranges of an nsys export\n"
      "  kprof budget rank0.json.gz rank1.json.gz      # one trace per tensor-parallel rank");
  command
      ->add_option("TRACE", options->paths,
                   "PyTorch profiler trace (.json or .json.gz) or Nsight Systems SQLite export; "
                   "several: one per rank, compared step by step")
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
