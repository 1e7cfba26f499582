// kprof report --trace TRACE REPORT...: captured kernels ranked by their share of a real serving
// trace, with verdicts and the most fixing each could buy end to end (Amdahl).
#include <memory>

#include "cli/analyze_command.h"

namespace kprof::cli {

void define_report(CLI::App& parent, Runner& runner) {
  auto options = std::make_shared<AnalyzeOptions>();
  options->sort = "pipeline";
  CLI::App* command = parent.add_subcommand(
      "report", "Captured kernels joined to a trace: verdicts, pipeline shares, Amdahl bounds");
  command->footer(
      "Joins ncu captures to a PyTorch profiler trace of the serving step they came from. Each\n"
      "captured kernel is found in the trace by its name (normalised as kprof rank does) and, "
      "when\n"
      "the trace has it, its grid and block; its fraction of the pipeline is its total trace time\n"
      "over the span of the trace's GPU work, and max_e2e_speedup = 1 / (1 - fraction): what\n"
      "removing it entirely would buy. Rows: largest share first, then the verdict columns of\n"
      "kprof analyze. A captured kernel the trace never ran is marked 'not in trace'; when\n"
      "the trace ran none of them, nothing is joined: exit 5 (nothing in common).\n\n"
      "Examples:\n"
      "  kprof report --trace trace.json.gz capture.ncu-rep\n"
      "  kprof report --trace trace.json.gz capture.ncu-rep --json > report.json");
  add_verdict_options(*command, *options);
  command->add_option("--trace", options->trace_path, "PyTorch profiler trace (.json or .json.gz)")
      ->required();
  command->callback([&runner, options] {
    runner = [options](Output& output) { return run_analyze(*options, output); };
  });
}

}  // namespace kprof::cli
