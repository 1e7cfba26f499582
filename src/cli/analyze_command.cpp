// kprof analyze REPORT...: per-kernel bottleneck verdicts (table, JSON, CSV), or with --summary
// the raw numbers that say where each kernel stands.
#include "cli/analyze_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <set>

#include "analysis/analysis_tables.h"
#include "analysis/kernel_summary.h"
#include "analysis/verdict.h"
#include "cli/command.h"
#include "cli/selection.h"
#include "common/file_bytes.h"
#include "common/text.h"
#include "common/utf8.h"
#include "hardware/gpu_specs.h"
#include "importers/common/read_trace.h"
#include "render/html_report.h"
#include "render/report_json.h"
#include "render/report_text.h"
#include "render/table.h"
#include "render/trace_render.h"
#include "render/verdict_render.h"
#include "timeline/trace_join.h"

namespace kprof::cli {
namespace {

std::vector<size_t> ordered(const model::Report& report, std::vector<size_t> selected,
                            const std::string& sort) {
  if (sort == "duration") {
    std::stable_sort(selected.begin(), selected.end(), [&](size_t a, size_t b) {
      return report.kernels[a].number("gpu__time_duration.sum").value_or(-1) >
             report.kernels[b].number("gpu__time_duration.sum").value_or(-1);
    });
  }
  return selected;
}

// Verdicts for the selected kernels of loaded reports, in the requested order, and their text
// table (one per report): shared by run_analyze and the bundles of capture and k8s.
struct AnalyzedReports {
  std::vector<render::AnalyzedKernel> kernels;
  std::vector<const model::Report*> reports;
  std::string table;
};

AnalyzedReports analyze_loaded(const std::vector<model::Report>& reports,
                               const std::vector<std::vector<size_t>>& selected,
                               const AnalyzeOptions& options,
                               const analysis::AnalysisConfig& config,
                               const std::optional<timeline::TraceTimeIndex>& trace) {
  AnalyzedReports result;
  std::vector<render::AnalyzedKernel>& analyzed = result.kernels;
  std::vector<const model::Report*>& report_list = result.reports;
  std::string& text = result.table;
  for (size_t r = 0; r < reports.size(); ++r) {
    const model::Report& report = reports[r];
    report_list.push_back(&report);
    std::vector<render::AnalyzedKernel> these;
    for (size_t i : ordered(report, selected[r], options.sort)) {
      render::AnalyzedKernel k{&report, &report.kernels[i],
                               analysis::analyze_kernel(report, report.kernels[i], config), false,
                               std::nullopt};
      if (trace) {
        k.joined = true;
        k.share = trace->share_of(report.kernels[i]);
      }
      these.push_back(std::move(k));
    }
    if (options.sort == "pipeline") {
      std::stable_sort(these.begin(), these.end(), [](const auto& a, const auto& b) {
        double x = a.share ? a.share->fraction_of_pipeline : -1;
        double y = b.share ? b.share->fraction_of_pipeline : -1;
        return x > y;
      });
    }
    if (!options.json && !options.csv) {
      if (r != 0) text += "\n";
      text += render::report_header(report, these.size());
      text += these.empty() && report.kernels.empty()
                  ? render::no_kernel_results_text(report)
                  : render::verdict_table(these, options.thresholds, options.name_width);
    }
    analyzed.insert(analyzed.end(), std::make_move_iterator(these.begin()),
                    std::make_move_iterator(these.end()));
  }
  return result;
}

// A join that found none of the captured kernels in the trace answers nothing (a trace of
// another workload, or captures of another program).
void require_some_in_trace(const std::vector<render::AnalyzedKernel>& analyzed,
                           const std::vector<std::string>& report_paths,
                           const std::string& trace_path, const timeline::TraceTimeIndex& trace) {
  if (std::any_of(analyzed.begin(), analyzed.end(), [](const auto& k) { return k.share; })) return;
  throw NothingSelected(
      render::nothing_joined(analyzed, report_paths, trace_path, trace.longest_kernels(3)));
}

}  // namespace

ExitCode run_analyze(const AnalyzeOptions& options, Output& output) {
  if (options.json + options.csv + options.summary + !options.html_path.empty() > 1) {
    throw UsageError("--json, --csv, --summary and --html are alternatives; give one");
  }
  std::unique_ptr<RE2> kernel_filter;
  if (!options.kernel_regex.empty()) {
    kernel_filter = compile_user_regex(options.kernel_regex, "--kernel");
  }
  analysis::AnalysisTables tables = analysis::load_analysis_tables(
      options.gpus_path, options.stages_path, options.expectations_path);
  analysis::AnalysisConfig config = tables.config(options.thresholds);

  std::vector<model::Report> reports = load_reports(options.paths, for_analysis());
  std::vector<std::vector<size_t>> selected;
  for (const auto& report : reports)
    selected.push_back(select_kernels(report, kernel_filter.get()));
  if (kernel_filter) require_some_selected(reports, selected, options.kernel_regex);

  if (options.summary) {
    std::vector<std::vector<size_t>> orders;
    for (size_t r = 0; r < reports.size(); ++r) {
      orders.push_back(ordered(reports[r], selected[r], options.sort));
    }
    output.stdout_text = render::summary_text(reports, orders, options.name_width);
    return ExitCode::kOk;
  }
  std::optional<timeline::TraceTimeIndex> trace;
  if (!options.trace_path.empty()) {
    trace.emplace();
    render::TraceSource source{options.trace_path, output.argv,
                               importers::read_trace(options.trace_path, *trace)};
    output.stderr_text += render::trace_warnings(source);
    if (trace->gpu_span_us() <= 0) {
      throw InputError(ExitCode::kInputInvalid, options.trace_path, InputPosition::none(),
                       "no GPU events in this trace: nothing to join the captures to");
    }
  }
  AnalyzedReports result = analyze_loaded(reports, selected, options, config, trace);
  if (trace) require_some_in_trace(result.kernels, options.paths, options.trace_path, *trace);
  std::vector<render::AnalyzedKernel>& analyzed = result.kernels;
  std::vector<const model::Report*>& report_list = result.reports;
  std::string& text = result.table;
  if (!options.html_path.empty()) {
    std::string page = render::html_report(analyzed, report_list, config, options.trace_path);
    write_file_atomically(options.html_path, page);
    size_t plotted = std::count_if(analyzed.begin(), analyzed.end(),
                                   [](const auto& k) { return render::on_roofline(k.verdict); });
    output.stdout_text =
        fmt::format("wrote {}: {} kernels, {} on the roofline\n",
                    escape_for_terminal(options.html_path), analyzed.size(), plotted);
  } else if (options.json) {
    output.stdout_text =
        render::json_text(render::verdict_json(analyzed, report_list, config, output.argv));
  } else if (options.csv) {
    output.stdout_text = render::verdict_csv(analyzed, options.thresholds);
  } else {
    output.stdout_text = std::move(text);
  }
  return ExitCode::kOk;
}

void add_verdict_options(CLI::App& command, AnalyzeOptions& options) {
  command.add_option("--html", options.html_path,
                     "Write a self-contained HTML page (ranked kernels, SVG roofline, stages) to "
                     "this file");
  command.add_option("REPORT", options.paths, "Nsight Compute reports or CSV exports")->required();
  command.add_option("-k,--kernel", options.kernel_regex,
                     "Only kernels whose function, demangled or mangled name matches this "
                     "regex (RE2, partial match)");
  command
      .add_option("--sort", options.sort,
                  "Row order: duration (longest first), pipeline (largest share of the "
                  "joined trace first) or id")
      ->check(CLI::IsMember({"id", "duration", "pipeline"}))
      ->capture_default_str();
  command
      .add_option("--compute-threshold", options.thresholds.compute_pct,
                  "SM throughput (% of peak) from which a kernel is compute-bound")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  command
      .add_option("--memory-threshold", options.thresholds.memory_pct,
                  "Memory throughput (% of peak) from which a kernel is memory-bound")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  command.add_flag("--json", options.json,
                   "Verdicts as JSON (schema kprof.analysis/1, docs/kprof.analysis.schema.json)");
  command.add_flag("--csv", options.csv, "Verdicts as CSV, one row per kernel");
  command.add_flag("--summary", options.summary,
                   "Instead of verdicts, the raw summary: duration, SM/memory/DRAM throughput, "
                   "occupancy, registers, grid, block");
  command.add_option("--gpus", options.gpus_path,
                     "A GPU database file that overrides or extends the built-in one "
                     "(see kprof gpus)");
  command.add_option("--stages", options.stages_path,
                     "A pipeline-stage rule table replacing the built-in one (data/stages.json)");
  command.add_option("--expectations", options.expectations_path,
                     "A table of expected bottlenecks replacing the built-in one "
                     "(data/expected_bottlenecks.json)");
  command.add_option("--name-width", options.name_width, "Kernel name column width (at least 8)")
      ->check(CLI::Range(8, 100000))
      ->capture_default_str();
}

void define_analyze(CLI::App& parent, Runner& runner) {
  auto options = std::make_shared<AnalyzeOptions>();
  CLI::App* command = parent.add_subcommand(
      "analyze", "Per-kernel bottleneck verdicts: compute, memory or latency bound, and why");
  command->footer(
      "For each profiled kernel, longest first: the verdict (compute-bound, memory-bound, at the\n"
      "ridge, latency-bound) by the thresholds printed under the table; the unit that binds or\n"
      "leans (dram, l2, l1, tensor, fp32, fp64, …, as ncu's own breakdown ranks them); achieved\n"
      "TFLOP/s (ncu's roofline formulas); DRAM bandwidth as a share of its peak; achieved and\n"
      "theoretical occupancy with the limiter; the dominant warp stall; the pipeline stage.\n"
      "What the capture cannot support is listed as not derivable — never shown as zero.\n"
      "REPORT is an .ncu-rep or an ncu CSV export (--page raw or details), optionally .zst.\n\n"
      "Examples:\n"
      "  kprof analyze run.ncu-rep\n"
      "  kprof analyze run.ncu-rep -k 'gemm|nvjet' --json > verdicts.json\n"
      "  kprof analyze run.ncu-rep --memory-threshold 60 --csv\n"
      "  kprof analyze run.ncu-rep --summary      # raw counters: duration, throughputs, launch");
  add_verdict_options(*command, *options);
  command->add_option("--trace", options->trace_path,
                      "Join a PyTorch profiler trace: each kernel's share of the pipeline and its "
                      "Amdahl bound (as kprof report)");
  command->callback([&runner, options] {
    runner = [options](Output& output) { return run_analyze(*options, output); };
  });
}

std::optional<capture::BundleAnalysis> analyze_for_bundle(const std::string& report_path) try {
  AnalyzeOptions options;
  options.paths = {report_path};
  analysis::AnalysisTables tables = analysis::load_analysis_tables("", "", "");
  analysis::AnalysisConfig config = tables.config(options.thresholds);
  std::vector<model::Report> reports = load_reports(options.paths, for_analysis());
  std::vector<std::vector<size_t>> selected = {select_kernels(reports.front(), nullptr)};
  AnalyzedReports analyzed = analyze_loaded(reports, selected, options, config, std::nullopt);
  capture::BundleAnalysis bundle;
  bundle.table = analyzed.table;
  bundle.json =
      render::json_text(render::verdict_json(analyzed.kernels, analyzed.reports, config, {}));
  bundle.report = std::move(reports.front());
  return bundle;
} catch (const NothingSelected&) {
  return std::nullopt;
}

}  // namespace kprof::cli
