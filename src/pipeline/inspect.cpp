#include "pipeline/inspect.h"

#include <re2/re2.h>

#include <memory>

#include "pipeline/reports.h"
#include "render/report_json.h"
#include "render/report_text.h"

namespace kprof::pipeline {

Answer inspect(const InspectOptions& options, const std::vector<std::string>& argv) {
  Answer output;
  std::unique_ptr<RE2> kernel_filter;
  if (!options.kernel_regex.empty()) {
    kernel_filter = compile_user_regex(options.kernel_regex, "--kernel");
  }
  std::unique_ptr<RE2> metric_filter;
  if (!options.metrics_regex.empty()) {
    metric_filter = compile_user_regex(options.metrics_regex, "--metrics");
  }
  std::vector<model::Report> reports = load_reports(
      options.paths,
      [&] {
        importers::ImportOptions import;
        // the text counts instances
        import.instances = options.instances || !options.json || options.text_too;
        return import;
      }(),
      ReadPolicy{options.fallback_ncu});
  output.notes += reading_notes(reports);
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
    output.out = render::report_document_text(argv, reports, selected, json_options);
    if (!options.text_too) return output;
  }
  render::KernelTextOptions text_options;
  if (metric_filter) {
    text_options.include_metric = [&](const std::string& name) {
      return RE2::PartialMatch(name, *metric_filter);
    };
  }
  text_options.rules = options.rules;
  text_options.instances = options.instances;
  (options.json ? output.text : output.out) =
      render::inspect_text(reports, selected, text_options, options.session);
  return output;
}

}  // namespace kprof::pipeline
