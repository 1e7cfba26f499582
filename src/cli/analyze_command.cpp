// kprof analyze REPORT...: one row per profiled kernel with the numbers that say where it
// stands (duration, SM/memory/DRAM throughput, occupancy, registers, launch shape).
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <set>

#include "analysis/kernel_summary.h"
#include "cli/command.h"
#include "cli/report_header.h"
#include "cli/selection.h"
#include "common/text.h"
#include "render/report_json.h"
#include "render/table.h"

namespace kprof::cli {
namespace {

struct AnalyzeOptions {
  std::vector<std::string> paths;
  std::string kernel_regex;
  std::string metrics_regex;
  std::string sort = "id";
  bool json = false;
  bool instances = false;
  size_t name_width = 60;
};

std::string cell(const std::optional<double>& value, double scale = 1) {
  return value ? format_number(*value * scale) : "—";
}

std::string occupancy_cell(const analysis::KernelSummary& s) {
  if (!s.achieved_occupancy_pct && !s.theoretical_occupancy_pct) return "—";
  return fmt::format("{}/{}", cell(s.achieved_occupancy_pct), cell(s.theoretical_occupancy_pct));
}

std::string render_table(const std::vector<model::Report>& reports,
                         const std::vector<std::vector<size_t>>& selected,
                         const AnalyzeOptions& options) {
  using render::TextTable;
  std::string out;
  std::set<std::string> missing;
  for (size_t r = 0; r < reports.size(); ++r) {
    const model::Report& report = reports[r];
    std::vector<size_t> order = selected[r];
    std::vector<analysis::KernelSummary> summaries(report.kernels.size());
    for (size_t i : order) summaries[i] = analysis::summarize(report, report.kernels[i]);
    if (options.sort == "duration") {
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return summaries[a].duration_ns.value_or(-1) > summaries[b].duration_ns.value_or(-1);
      });
    }
    if (r != 0) out += "\n";
    out += describe_report(report, order.size());
    TextTable table({{"id", TextTable::Align::kRight},
                     {"kernel"},
                     {"duration us", TextTable::Align::kRight},
                     {"SM %", TextTable::Align::kRight},
                     {"mem %", TextTable::Align::kRight},
                     {"DRAM %", TextTable::Align::kRight},
                     {"occ % ach/theo", TextTable::Align::kRight},
                     {"regs", TextTable::Align::kRight},
                     {"grid"},
                     {"block"}});
    for (size_t i : order) {
      const model::Kernel& kernel = report.kernels[i];
      const analysis::KernelSummary& s = summaries[i];
      missing.insert(s.missing.begin(), s.missing.end());
      table.add_row({std::to_string(kernel.id),
                     render::ellipsize(kernel.display_name(), options.name_width),
                     cell(s.duration_ns, 1e-3), cell(s.sm_throughput_pct),
                     cell(s.memory_throughput_pct), cell(s.dram_throughput_pct),
                     occupancy_cell(s), cell(s.registers_per_thread), kernel.grid.to_string(),
                     kernel.block.to_string()});
    }
    if (report.kernels.empty()) {
      out += "  no kernel results: ncu profiled nothing into this report (a --kernel-name or\n"
             "  --launch-skip that matched no launch, or an application that made no CUDA call)\n";
      continue;
    }
    out += table.to_string();
  }
  if (!missing.empty()) {
    out += "— = not collected by this capture:";
    for (const auto& name : missing) out += " " + name;
    out += "\n";
  }
  return out;
}

ExitCode run_analyze(const AnalyzeOptions& options, Output& output) {
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
  output.stdout_text = render_table(reports, selected, options);
  return ExitCode::kOk;
}

}  // namespace

void define_analyze(CLI::App& parent, Runner& runner) {
  auto options = std::make_shared<AnalyzeOptions>();
  CLI::App* command = parent.add_subcommand(
      "analyze", "One row per profiled kernel: duration, throughputs, occupancy, launch shape");
  command->footer(
      "One row per profiled kernel: duration, SM / memory / DRAM throughput (% of peak),\n"
      "achieved/theoretical occupancy, registers per thread, grid and block.\n"
      "REPORT is an .ncu-rep file or an ncu CSV export (--page raw or details), optionally\n"
      "zstd-compressed (.zst, .ncu-repz). A '—' marks a metric the capture did not collect.\n\n"
      "Examples:\n"
      "  kprof analyze run.ncu-rep\n"
      "  kprof analyze run.ncu-rep --sort duration -k 'gemm|nvjet'\n"
      "  kprof analyze run.ncu-rep --json --metrics '^launch__'   # model as JSON");
  command->add_option("REPORT", options->paths, "Nsight Compute reports or CSV exports")
      ->required();
  command->add_option("-k,--kernel", options->kernel_regex,
                      "Only kernels whose function, demangled or mangled name matches this "
                      "regex (RE2, partial match)");
  command->add_option("--sort", options->sort, "Row order: id (report order) or duration")
      ->check(CLI::IsMember({"id", "duration"}))
      ->capture_default_str();
  command->add_flag("--json", options->json,
                    "Print the report model as JSON (schema kprof.report/1): session, devices, "
                    "and per kernel the summary, ncu's rule results and every metric");
  command->add_option("-m,--metrics", options->metrics_regex,
                      "With --json: only metrics whose name matches this regex");
  command->add_flag("--instances", options->instances,
                    "With --json: include per-instance values of instanced metrics");
  command->add_option("--name-width", options->name_width, "Kernel name column width")
      ->capture_default_str();
  command->callback([&runner, options] {
    runner = [options](Output& output) { return run_analyze(*options, output); };
  });
}

}  // namespace kprof::cli
