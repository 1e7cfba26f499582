// kprof inspect REPORT...: everything the report recorded — session, devices, and any metric
// of any kernel, selected by regex — for questions the summary table does not answer.
#include <fmt/format.h>

#include <memory>

#include "cli/command.h"
#include "cli/selection.h"
#include "render/report_json.h"
#include "render/report_text.h"

namespace kprof::cli {
namespace {

struct InspectOptions {
  std::vector<std::string> paths;
  std::string kernel_regex;
  std::string metrics_regex;
  bool session = false;
  bool rules = false;
  bool instances = false;
  bool json = false;
};

ExitCode run_inspect(const InspectOptions& options, Output& output) {
  std::unique_ptr<RE2> kernel_filter;
  if (!options.kernel_regex.empty()) {
    kernel_filter = compile_user_regex(options.kernel_regex, "--kernel");
  }
  std::unique_ptr<RE2> metric_filter;
  if (!options.metrics_regex.empty()) {
    metric_filter = compile_user_regex(options.metrics_regex, "--metrics");
  }
  std::vector<model::Report> reports = load_reports(options.paths, [&] {
    importers::ImportOptions import;
    import.instances = options.instances || !options.json;  // the text counts instances
    return import;
  }());
  std::vector<std::vector<size_t>> selected;
  for (const auto& report : reports) {
    // --session lists the session and devices, no kernel.
    selected.push_back(options.session ? std::vector<size_t>{}
                                       : select_kernels(report, kernel_filter.get()));
  }
  if (kernel_filter) require_some_selected(reports, selected, options.kernel_regex);

  if (options.json) {
    render::JsonOptions json_options;
    if (metric_filter) {
      json_options.include_metric = [&](const std::string& name) {
        return RE2::PartialMatch(name, *metric_filter);
      };
    }
    json_options.include_instances = options.instances;
    output.stdout_text = render::report_document_text(output.argv, reports, selected, json_options);
    return ExitCode::kOk;
  }
  render::KernelTextOptions text_options;
  if (metric_filter) {
    text_options.include_metric = [&](const std::string& name) {
      return RE2::PartialMatch(name, *metric_filter);
    };
  }
  text_options.rules = options.rules;
  text_options.instances = options.instances;
  output.stdout_text = render::inspect_text(reports, selected, text_options, options.session);
  return ExitCode::kOk;
}

}  // namespace

void define_inspect(CLI::App& parent, Runner& runner) {
  auto options = std::make_shared<InspectOptions>();
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
  command->callback([&runner, options] {
    runner = [options](Output& output) { return run_inspect(*options, output); };
  });
}

}  // namespace kprof::cli
