// kprof inspect REPORT...: everything the report recorded — session, devices, and any metric
// of any kernel, selected by regex — for questions the summary table does not answer.
#include <fmt/format.h>

#include <memory>

#include "cli/command.h"
#include "cli/report_header.h"
#include "cli/selection.h"
#include "render/report_json.h"
#include "render/table.h"

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

std::string optional_number(const std::optional<std::uint64_t>& value) {
  return value ? std::to_string(*value) : std::string("(not given)");
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : " ") + item;
  return out;
}

std::string render_session(const model::Report& report) {
  const model::Session& s = report.session;
  const model::ProfilerSettings& p = s.settings;
  std::string out = "session\n";
  auto line = [&](std::string_view key, const std::string& value) {
    if (!value.empty()) out += fmt::format("  {:<26} {}\n", key, value);
  };
  if (s.versions.empty()) {
    line("Nsight Compute", s.ncu_version);
  }
  for (const auto& [provider, version] : s.versions) line(provider, version);
  line("command line", s.command_line);
  if (s.creation_time) line("created (unix time)", std::to_string(*s.creation_time));
  line("host", s.host_os);
  line("target", s.target_os);
  line("target CPU", s.target_cpu);
  line("settings read from", p.settings_source);
  line("sets", join(p.sets));
  line("sections", join(p.sections));
  line("metrics", join(p.metrics));
  line("kernel name filter", p.kernel_name);
  line("kernel name base", p.kernel_name_base);
  line("kernel id filter", p.kernel_id);
  if (!p.settings_source.empty()) {
    line("launch skip", optional_number(p.launch_skip));
    line("launch count", optional_number(p.launch_count));
  }
  line("replay mode", p.replay_mode);
  line("clock control", p.clock_control);
  line("cache control", p.cache_control);
  line("target processes", p.target_processes);
  line("application", join(p.application));
  for (const model::Process& process : report.processes) {
    line("process", fmt::format("{} {} on {}", process.id, process.name, process.host));
  }
  for (const model::Device& device : report.devices) {
    line("device", fmt::format("{} {} (cc {}), {} attributes", device.id, device.name,
                               device.compute_capability(), device.attributes.size()));
  }
  return out;
}

std::string render_kernel(const model::Kernel& kernel, const RE2* metric_filter,
                          const InspectOptions& options) {
  std::string out = fmt::format("kernel {}: {}\n", kernel.id, kernel.display_name());
  auto line = [&](std::string_view key, const std::string& value) {
    if (!value.empty()) out += fmt::format("  {:<16} {}\n", key, value);
  };
  line("function", kernel.function_name);
  line("demangled", kernel.demangled_name);
  line("mangled", kernel.mangled_name);
  line("process", fmt::format("{} {}", kernel.process_id, kernel.process_name));
  line("context/stream", fmt::format("{}/{}", kernel.context_id, kernel.stream_id));
  line("device", std::to_string(kernel.device_id));
  line("grid/block", fmt::format("{} {}", kernel.grid.to_string(), kernel.block.to_string()));
  render::TextTable table({{"metric"}, {"value", render::TextTable::Align::kRight}, {"unit"}});
  size_t shown = 0;
  for (const model::Metric& metric : kernel.metrics) {
    if (metric_filter && !RE2::PartialMatch(metric.name, *metric_filter)) continue;
    ++shown;
    std::string value = metric.value.to_string();
    if (metric.instances.size() > 1) value += fmt::format(" [{} instances]", metric.instances.size());
    table.add_row({metric.name, value, metric.unit});
    if (options.instances) {
      for (const auto& instance : metric.instances) {
        table.add_row({"    @ " + instance.correlation_id.to_string(), instance.value.to_string(),
                       ""});
      }
    }
  }
  if (shown != 0) out += table.to_string();
  else out += "  (no metric matches)\n";
  if (options.rules) {
    for (const model::RuleFinding& rule : kernel.rules) {
      std::string speedup = rule.estimated_speedup
                                ? fmt::format(" (est. speedup {} {:.2f}%)", rule.speedup_type,
                                              *rule.estimated_speedup)
                                : "";
      out += fmt::format("  [{}] {}/{}{}: {}\n", model::rule_type_code(rule.type), rule.section,
                         rule.rule, speedup, rule.message);
    }
  }
  return out;
}

ExitCode run_inspect(const InspectOptions& options, Output& output) {
  std::unique_ptr<RE2> kernel_filter;
  if (!options.kernel_regex.empty()) {
    kernel_filter = compile_user_regex(options.kernel_regex, "--kernel");
  }
  std::unique_ptr<RE2> metric_filter;
  if (!options.metrics_regex.empty()) {
    metric_filter = compile_user_regex(options.metrics_regex, "--metrics");
  }
  std::vector<model::Report> reports = load_reports(options.paths);
  std::vector<std::vector<size_t>> selected;
  for (const auto& report : reports) selected.push_back(select_kernels(report, kernel_filter.get()));
  if (kernel_filter) require_some_selected(reports, selected, options.kernel_regex);

  if (options.json) {
    render::JsonOptions json_options;
    if (metric_filter) {
      json_options.include_metric = [&](const std::string& name) {
        return RE2::PartialMatch(name, *metric_filter);
      };
    }
    json_options.include_instances = options.instances;
    nlohmann::json document = render::envelope(output.argv);
    document["reports"] = nlohmann::json::array();
    for (size_t r = 0; r < reports.size(); ++r) {
      document["reports"].push_back(render::report_json(reports[r], selected[r], json_options));
    }
    output.stdout_text = document.dump(1) + "\n";
    return ExitCode::kOk;
  }
  std::string out;
  for (size_t r = 0; r < reports.size(); ++r) {
    if (r != 0) out += "\n";
    out += describe_report(reports[r], selected[r].size());
    if (options.session) out += render_session(reports[r]);
    for (size_t i : selected[r]) {
      out += render_kernel(reports[r].kernels[i], metric_filter.get(), options);
    }
  }
  output.stdout_text = std::move(out);
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
      "  kprof inspect run.ncu-rep --session -m '^$'     # session only\n"
      "  kprof inspect run.ncu-rep --rules -m occupancy_limit");
  command->add_option("REPORT", options->paths, "Nsight Compute reports or CSV exports")
      ->required();
  command->add_option("-k,--kernel", options->kernel_regex,
                      "Only kernels whose function, demangled or mangled name matches this "
                      "regex (RE2, partial match)");
  command->add_option("-m,--metrics", options->metrics_regex,
                      "Only metrics whose name matches this regex (RE2, partial match)");
  command->add_flag("--session", options->session,
                    "Also print the session: versions, command line, profiler settings, devices");
  command->add_flag("--rules", options->rules, "Also print ncu's rule findings per kernel");
  command->add_flag("--instances", options->instances,
                    "Also print per-instance values of instanced metrics");
  command->add_flag("--json", options->json, "Print JSON (schema kprof.report/1) instead");
  command->callback([&runner, options] {
    runner = [options](Output& output) { return run_inspect(*options, output); };
  });
}

}  // namespace kprof::cli
