// kprof inspect REPORT...: everything the report recorded — session, devices, and any metric
// of any kernel, selected by regex — for questions the summary table does not answer
// (pipeline/inspect).
#include <memory>

#include "cli/command.h"
#include "pipeline/inspect.h"

namespace kprof::cli {

void define_inspect(CLI::App& parent, Runner& runner) {
  auto options = std::make_shared<pipeline::InspectOptions>();
  CLI::App* command = parent.add_subcommand(
      "inspect", "Any metric of any kernel, ncu's rule findings, the session and devices");
  command->footer(
      "List what a report recorded: any metric of any kernel (values in base units: ns, byte,\n"
      "byte/s, hz, %), ncu's rule findings, the session (ncu version, command line, settings,\n"
      "devices).\n\n"
      "Examples:\n"
      "  kprof inspect run.ncu-rep -k nvjet -m 'dram__bytes|gpu__time_duration'\n"
      "  kprof inspect run.ncu-rep --session            # session and devices, no kernel\n"
      "  kprof inspect run.ncu-rep --rules -m occupancy_limit");
  command->add_option("REPORT", options->paths, "Nsight Compute reports or CSV exports")
      ->required();
  CLI::Option* kernel = command->add_option(
      "-k,--kernel", options->kernel_regex,
      "Only kernels whose function, demangled or mangled name matches this regex (RE2, partial "
      "match)");
  CLI::Option* metrics =
      command->add_option("-m,--metrics", options->metrics_regex,
                          "Only metrics whose name matches this regex (RE2, partial match)");
  CLI::Option* rules =
      command->add_flag("--rules", options->rules, "Also print ncu's rule findings per kernel");
  CLI::Option* instances = command->add_flag("--instances", options->instances,
                                             "Also print per-instance values of instanced metrics");
  command
      ->add_flag("--session", options->session,
                 "Print the session instead of kernels: versions, command line, profiler "
                 "settings, processes, devices")
      ->excludes(kernel)
      ->excludes(metrics)
      ->excludes(rules)
      ->excludes(instances);
  command->add_flag("--json", options->json, "Print JSON (schema kprof.report/1) instead");
  command->add_flag(
      "--fallback-ncu", options->fallback_ncu,
      "A report of a format version kprof does not know (a newer ncu): read ncu's own "
      "export of it (ncu --import REPORT --csv --page raw, the ncu of $KPROF_NCU, "
      "PATH or /usr/local/cuda/bin) instead of what kprof's schema covers");
  command->callback([&runner, options] {
    runner = [options](Output& output) {
      return answer(pipeline::inspect(*options, output.argv), output);
    };
  });
}

}  // namespace kprof::cli
