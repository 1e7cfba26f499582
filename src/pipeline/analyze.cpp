#include "pipeline/analyze.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "analysis/analysis_tables.h"
#include "analysis/kernel_summary.h"
#include "common/file_bytes.h"
#include "common/text.h"
#include "common/utf8.h"
#include "hardware/gpu_specs.h"
#include "importers/common/read_trace.h"
#include "pipeline/reports.h"
#include "pipeline/trace_files.h"
#include "render/annotated_trace.h"
#include "render/fix_list_render.h"
#include "render/html_report.h"
#include "render/report_json.h"
#include "render/report_text.h"
#include "render/table.h"
#include "render/trace_render.h"
#include "render/verdict_render.h"
#include "timeline/fix_list.h"
#include "timeline/step_budget.h"
#include "timeline/trace_join.h"

namespace kprof::pipeline {
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
    if ((!options.json && !options.csv) || options.text_too) {
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

// One reading of a trace for two sinks: the trace time index and the step budget (for the fix
// list's per-step figures). A sink that does not want a category gets its events as spans.
class TeeSink final : public importers::TraceEventSink {
 public:
  TeeSink(importers::TraceEventSink& first, importers::TraceEventSink& second)
      : first_(first), second_(second) {}
  void on_event(const importers::TraceEvent& event) override {
    for (importers::TraceEventSink* sink : {&first_, &second_}) {
      if (sink->wants_category(event.category)) {
        sink->on_event(event);
      } else {
        sink->on_span(event.timestamp_us, event.duration_us);
      }
    }
  }
  bool wants_category(std::string_view category) const override {
    return first_.wants_category(category) || second_.wants_category(category);
  }
  void on_span(double timestamp_us, double duration_us) override {
    first_.on_span(timestamp_us, duration_us);
    second_.on_span(timestamp_us, duration_us);
  }
  void on_graph_nodes(std::shared_ptr<const importers::GraphNodeTable> table) override {
    first_.on_graph_nodes(table);
    second_.on_graph_nodes(std::move(table));
  }

 private:
  importers::TraceEventSink& first_;
  importers::TraceEventSink& second_;
};

// The least a kernel launch takes on the captures' GPU: kprof calibrate's back-to-back time of an
// empty kernel where the --gpus calibration measured this GPU, else the trace's shortest kernel.
timeline::KernelFloor kernel_floor(const std::vector<render::AnalyzedKernel>& analyzed,
                                   const analysis::AnalysisConfig& config,
                                   const timeline::TraceTimeIndex& trace) {
  for (const render::AnalyzedKernel& k : analyzed) {
    if (!config.gpus || !k.report) break;
    const model::Device* device = k.report->device_of(*k.kernel);
    const hardware::GpuSpec* spec = device ? config.gpus->find_for_device(device->name) : nullptr;
    if (!spec) continue;
    auto measured = spec->measured.find("launch_back_to_back");
    if (measured == spec->measured.end() || measured->second.unit != "s") break;
    return {measured->second.figure * 1e6,
            fmt::format("kprof calibrate's launch_back_to_back on the {}: an empty kernel's "
                        "launch time back to back",
                        spec->name)};
  }
  if (trace.shortest_kernel_us() > 0) {
    return {trace.shortest_kernel_us(), "the shortest kernel this trace ran"};
  }
  return {};
}

// The steps' verdicts, which say whether kernels matter at all before the list says which.
std::optional<timeline::StepGate> step_gate(const timeline::Budget& budget) {
  bool whole_trace = budget.steps.size() == 1 && budget.steps.front().source == "whole trace";
  timeline::StepGate gate;
  for (const timeline::StepBudget& step : budget.steps) {
    if (step.verdict == timeline::StepVerdict::kGraphCapture ||
        step.verdict == timeline::StepVerdict::kNoGpuWork) {
      continue;
    }
    ++gate.steps;
    if (step.verdict == timeline::StepVerdict::kHostBound) ++gate.host_bound_steps;
    if (step.verdict == timeline::StepVerdict::kKernelBound) ++gate.kernel_bound_steps;
    // Devices run side by side: the step takes its longest device's wall span.
    const timeline::DeviceBudget* longest = nullptr;
    for (const timeline::DeviceBudget& device : step.devices) {
      if (!longest || device.wall_span_us > longest->wall_span_us) longest = &device;
    }
    if (longest) {
      gate.wall_us += longest->wall_span_us;
      gate.busy_us += longest->gpu_busy_us;
    }
  }
  if (gate.steps == 0 || whole_trace) return std::nullopt;
  gate.wall_us /= static_cast<double>(gate.steps);
  gate.busy_us /= static_cast<double>(gate.steps);
  return gate;
}

// The fix list of the joined launches, with the trace's steps where kprof budget finds some.
timeline::FixList fix_list_of(const std::vector<render::AnalyzedKernel>& analyzed,
                              const timeline::TraceTimeIndex& trace, const timeline::Budget& budget,
                              const analysis::AnalysisConfig& config) {
  std::vector<timeline::CapturedLaunch> launches;
  for (const render::AnalyzedKernel& k : analyzed) {
    launches.push_back({k.kernel, &k.verdict, k.share, k.report ? k.report->path : ""});
  }
  std::uint64_t steps = 0;
  double step_us = 0, step_wall_us = 0, step_devices = 0;
  std::vector<std::string> step_names;
  bool whole_trace = budget.steps.size() == 1 && budget.steps.front().source == "whole trace";
  if (!whole_trace && !budget.steps.empty()) {
    for (const timeline::StepBudget& step : budget.steps) {
      if (step.verdict == timeline::StepVerdict::kGraphCapture) continue;
      ++steps;
      step_us += step.gpu_span_us;
      // A step's wall time is its longest device's: devices run side by side.
      double wall = 0;
      for (const timeline::DeviceBudget& device : step.devices) {
        wall = std::max(wall, device.wall_span_us);
      }
      step_wall_us += wall;
      step_devices += static_cast<double>(std::max<std::size_t>(1, step.devices.size()));
      step_names.push_back(step.name);
    }
    if (steps > 0) {
      step_us /= static_cast<double>(steps);
      step_wall_us /= static_cast<double>(steps);
      step_devices /= static_cast<double>(steps);
    }
  }
  timeline::FixList list = timeline::build_fix_list(launches, trace.gpu_span_us(), steps, step_us,
                                                    kernel_floor(analyzed, config, trace));
  list.step_wall_us = step_wall_us;
  list.step_devices = std::max(1.0, step_devices);
  list.serving = timeline::serving_units(step_names, list);
  list.gate = step_gate(budget);
  // Coverage: the trace's kernel time the joined groups carry, and the longest kernels none was
  // joined to.
  std::set<std::string> joined;
  for (const render::AnalyzedKernel& k : analyzed) {
    if (k.share) joined.insert(k.share->name);
  }
  list.trace_kernel_us = trace.kernel_time_us();
  for (const auto& [name, time] : trace.kernels_by_time()) {
    if (joined.count(name)) {
      list.joined_kernel_us += time.total_us;
    } else if (list.unjoined_trace_kernels.size() < 5) {
      list.unjoined_trace_kernels.emplace_back(name, time.total_us);
    }
  }
  return list;
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

// An output file never replaces an input (`--annotate trace.json` of that trace, --html over
// the --gpus table or the capture in a bundle folder) nor the other output.
void refuse_analyze_collisions(const AnalyzeOptions& options) {
  std::vector<CommandFile> inputs;
  for (const std::string& path : options.paths) inputs.push_back({"REPORT", path});
  inputs.push_back({"--trace", options.trace_path});
  inputs.push_back({"--gpus", options.gpus_path});
  inputs.push_back({"--stages", options.stages_path});
  inputs.push_back({"--expectations", options.expectations_path});
  refuse_output_collisions({{"--html", options.html_path}, {"--annotate", options.annotate_path}},
                           inputs);
}

}  // namespace

Answer analyze(const AnalyzeOptions& options, const std::vector<std::string>& argv) {
  Answer output;
  if (options.json + options.csv + options.summary + !options.html_path.empty() > 1) {
    throw UsageError("--json, --csv, --summary and --html are alternatives; give one");
  }
  if (options.annotate_path == "-" &&
      (options.json || options.csv || options.per_launch || !options.html_path.empty())) {
    throw UsageError(
        "--annotate - writes the annotated trace to standard output: it takes neither --json, "
        "--csv, --per-launch nor --html");
  }
  // Before anything is read: an output over an input is a usage error, whatever the inputs hold.
  refuse_analyze_collisions(options);
  std::unique_ptr<RE2> kernel_filter;
  if (!options.kernel_regex.empty()) {
    kernel_filter = compile_user_regex(options.kernel_regex, "--kernel");
  }
  analysis::AnalysisTables tables = analysis::load_analysis_tables(
      options.gpus_path, options.stages_path, options.expectations_path);
  analysis::AnalysisConfig config = tables.config(options.thresholds);

  std::vector<model::Report> reports =
      load_reports(options.paths, for_analysis(), ReadPolicy{options.fallback_ncu});
  output.notes += reading_notes(reports);
  std::vector<std::vector<size_t>> selected;
  for (const auto& report : reports)
    selected.push_back(select_kernels(report, kernel_filter.get()));
  if (kernel_filter) require_some_selected(reports, selected, options.kernel_regex);

  if (options.summary) {
    std::vector<std::vector<size_t>> orders;
    for (size_t r = 0; r < reports.size(); ++r) {
      orders.push_back(ordered(reports[r], selected[r], options.sort));
    }
    output.out = render::summary_text(reports, orders, options.name_width);
    return output;
  }
  if (!options.annotate_path.empty() && (options.trace_path.empty() || !options.fix_list)) {
    throw UsageError("--annotate writes a trace's timeline: it needs kprof report --trace");
  }
  std::optional<timeline::TraceTimeIndex> trace;
  timeline::BudgetBuilder steps_of_trace;
  // The annotated timeline and the HTML page's step draw the timeline the budget was taken over.
  if (!options.annotate_path.empty() || !options.html_path.empty()) steps_of_trace.keep_timeline();
  importers::TraceReadStats trace_stats;
  if (!options.trace_path.empty()) {
    trace.emplace();
    TeeSink both(*trace, steps_of_trace);
    render::TraceSource source{options.trace_path, argv, read_trace_file(options.trace_path, both)};
    trace_stats = source.stats;
    output.notes += render::trace_warnings(source);
    if (trace->gpu_span_us() <= 0) {
      throw InputError(ExitCode::kInputInvalid, options.trace_path, InputPosition::none(),
                       "no GPU events in this trace: nothing to join the captures to");
    }
  }
  AnalyzedReports result = analyze_loaded(reports, selected, options, config, trace);
  std::optional<timeline::FixList> fixes;
  std::optional<timeline::Budget> budget;
  if (trace) {
    require_some_in_trace(result.kernels, options.paths, options.trace_path, *trace);
    if (options.fix_list) {
      budget = steps_of_trace.finish("", {});
      budget->launch_records.producer_counts_drops = trace_stats.producer_counts_drops;
      output.notes += render::launch_records_warning(options.trace_path, budget->launch_records);
      fixes = fix_list_of(result.kernels, *trace, *budget, config);
    }
  }
  if (!options.annotate_path.empty()) {
    render::AnnotatedTraceInput input;
    input.budget = &*budget;
    input.fixes = &*fixes;
    input.stages = config.stages;
    input.trace_path = options.trace_path;
    input.report_paths = options.paths;
    input.device_names = trace_stats.device_names;
    input.argv = argv;
    render::AnnotatedTraceCounts counts;
    std::string annotated = render::annotated_trace_json(input, &counts);
    if (options.annotate_path == "-") {  // the trace on standard output, as `--html -`
      output.out = std::move(annotated);
      return output;
    }
    write_file_atomically(options.annotate_path, annotated);
    output.notes += fmt::format(
        "kprof: wrote {}: {} GPU slices ({} kernels with a captured group's findings), {} steps, "
        "{} idle intervals; open it in https://ui.perfetto.dev or chrome://tracing\n",
        escape_for_terminal(options.annotate_path), counts.slices, counts.annotated, counts.steps,
        counts.idle);
  }
  std::vector<render::AnalyzedKernel>& analyzed = result.kernels;
  std::vector<const model::Report*>& report_list = result.reports;
  std::string& text = result.table;
  // With a trace the answer is the fix list; the per-launch verdicts follow on request.
  if (fixes && ((!options.json && !options.csv) || options.text_too)) {
    text = render::fix_list_text(*fixes, options.top, options.name_width) +
           (options.per_launch ? "\n" + text : "");
  }
  if (!options.html_path.empty()) {
    std::string page = render::html_report(analyzed, report_list, config, options.trace_path,
                                           fixes ? &*fixes : nullptr, budget ? &*budget : nullptr);
    if (options.html_path == "-") {  // the page on standard output: `--html - > page.html`
      output.out = std::move(page);
      return output;
    }
    write_file_atomically(options.html_path, page);
    size_t plotted = std::count_if(analyzed.begin(), analyzed.end(),
                                   [](const auto& k) { return render::on_roofline(k.verdict); });
    output.out = fmt::format("wrote {}: {} kernels, {} on the roofline\n",
                             escape_for_terminal(options.html_path), analyzed.size(), plotted);
  } else if (options.json) {
    nlohmann::json answer = render::verdict_json(analyzed, report_list, config, argv);
    if (fixes) answer["fix_list"] = render::fix_list_json(*fixes);
    output.out = render::json_text(answer);
    if (options.text_too) output.text = std::move(text);
  } else if (options.csv) {
    output.out = render::verdict_csv(analyzed, options.thresholds);
  } else {
    output.out = std::move(text);
  }
  return output;
}

std::optional<BundleAnalysis> analyze_for_bundle(const std::string& report_path) try {
  AnalyzeOptions options;
  options.paths = {report_path};
  analysis::AnalysisTables tables = analysis::load_analysis_tables("", "", "");
  analysis::AnalysisConfig config = tables.config(options.thresholds);
  std::vector<model::Report> reports = load_reports(options.paths, for_analysis());
  std::vector<std::vector<size_t>> selected = {select_kernels(reports.front(), nullptr)};
  AnalyzedReports analyzed = analyze_loaded(reports, selected, options, config, std::nullopt);
  BundleAnalysis bundle;
  bundle.table = analyzed.table;
  bundle.json =
      render::json_text(render::verdict_json(analyzed.kernels, analyzed.reports, config, {}));
  bundle.report = std::move(reports.front());
  return bundle;
} catch (const NothingSelected&) {
  return std::nullopt;
}

}  // namespace kprof::pipeline
