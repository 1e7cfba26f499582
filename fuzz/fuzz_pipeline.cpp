// libFuzzer target for the whole pipeline, not only a parser: bytes → whatever kprof detects
// (.ncu-rep or ncu CSV → report; Chrome trace JSON, gzip or Nsight Systems SQLite → trace) →
// the analyses (verdicts; ranking, steps, join index) → every renderer. Each JSON output must
// serialise without a lenient handler (so every string is valid UTF-8) and parse back, the CSV
// must read back with one field count, and every terminal text must be shown literally
// (escaping it again, line breaks kept, changes nothing). A violation aborts.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>

#include "analysis/analysis_tables.h"
#include "capture/capture_plan.h"
#include "common/error.h"
#include "common/utf8.h"
#include "importers/chrome_trace/chrome_trace_reader.h"
#include "importers/common/read_trace.h"
#include "importers/importer.h"
#include "importers/ncu_csv/csv_records.h"
#include "importers/nsys_sqlite/nsys_sqlite_reader.h"
#include "pipeline/plan_trace.h"
#include "render/annotated_trace.h"
#include "render/fix_list_render.h"
#include "render/html_report.h"
#include "render/op_render.h"
#include "render/report_json.h"
#include "render/report_text.h"
#include "render/trace_render.h"
#include "render/verdict_render.h"
#include "timeline/fix_list.h"
#include "timeline/kernel_ranking.h"
#include "timeline/op_attribution.h"
#include "timeline/rank_comparison.h"
#include "timeline/step_budget.h"
#include "timeline/trace_join.h"

namespace {

using namespace kprof;

[[noreturn]] void violation(const std::string& what, const std::string& output) {
  std::fprintf(stderr, "pipeline fuzzer: %s\n--- output ---\n%s\n", what.c_str(), output.c_str());
  std::abort();
}

void check_json(const nlohmann::json& document, const std::string& what) {
  std::string text = document.dump(1);  // throws (uncaught: a finding) on invalid UTF-8
  if (!is_valid_utf8(text)) violation(what + ": not UTF-8", text);
  if (nlohmann::json::parse(text, nullptr, false).is_discarded()) {
    violation(what + ": does not parse back", text);
  }
  // What kprof prints (render::json_text) is the same document.
  if (render::json_text(document) != text + "\n") violation(what + ": json_text differs", text);
}

void check_text(const std::string& text, const std::string& what) {
  if (escape_for_terminal(text, /*keep_newlines=*/true) != text) {
    violation(what + ": a terminal would act on part of it", text);
  }
}

void check_csv(const std::string& text) {
  if (!is_valid_utf8(text)) violation("verdict CSV: not UTF-8", text);
  std::vector<importers::CsvRecord> records;
  try {
    records = importers::parse_csv_records("verdicts.csv", text);
  } catch (const InputError& error) {
    violation(std::string("verdict CSV does not read back: ") + error.what(), text);
  }
  for (const auto& record : records) {
    if (record.fields.size() != records.front().fields.size()) {
      violation("verdict CSV: rows of different lengths", text);
    }
  }
}

const analysis::AnalysisTables& tables() {
  static const analysis::AnalysisTables loaded = analysis::load_analysis_tables();
  return loaded;
}

void run_report(const std::string& path, std::string_view bytes) {
  model::Report report;
  try {
    report = importers::import_bytes(path, bytes);
  } catch (const InputError&) {
    return;
  }
  analysis::AnalysisConfig config = tables().config();
  std::vector<size_t> all(report.kernels.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  std::vector<render::AnalyzedKernel> analyzed;
  for (size_t i : all) {
    analyzed.push_back({&report, &report.kernels[i],
                        analysis::analyze_kernel(report, report.kernels[i], config), false,
                        std::nullopt});
  }
  std::vector<const model::Report*> reports = {&report};
  check_text(render::report_header(report, all.size()), "report description");
  check_text(render::verdict_table(analyzed, config.thresholds, 48), "verdict table");
  check_json(render::verdict_json(analyzed, reports, config, {"kprof", "analyze", path}),
             "verdict JSON");
  check_csv(render::verdict_csv(analyzed, config.thresholds));
  // The fix list, every launch joined to a made-up trace time of its own duration (kprof report
  // with a trace; the join itself is fuzzed through the trace inputs).
  std::vector<timeline::CapturedLaunch> launches;
  for (const render::AnalyzedKernel& k : analyzed) {
    timeline::KernelShare share;
    share.time = {k.verdict.duration_ns.value_or(0) / 1000, 1};
    share.matched_launch_config = (k.kernel->id % 2) == 0;
    launches.push_back({k.kernel, &k.verdict, share, path});
  }
  timeline::FixList fixes = timeline::build_fix_list(launches, 1000, 3, 300);
  check_text(render::fix_list_text(fixes, 0, 48), "fix list text");
  check_json(render::fix_list_json(fixes), "fix list JSON");
  std::string html = render::html_report(analyzed, reports, config, "");
  if (!is_valid_utf8(html)) violation("HTML: not UTF-8", html);
  render::JsonOptions options;
  options.include_instances = true;
  nlohmann::json document = render::envelope({"kprof", "inspect", path});
  document["reports"] = nlohmann::json::array({render::report_json(report, all, options)});
  check_json(document, "report JSON");
  std::set<std::string> missing;
  check_text(render::summary_table(report, all, 48, missing), "summary table");
  check_text(render::session_text(report), "session text");
  render::KernelTextOptions text_options;
  text_options.rules = true;
  text_options.instances = true;
  for (const model::Kernel& kernel : report.kernels) {
    check_text(render::kernel_text(kernel, text_options), "kernel text");
  }
}

// Hands every event to the three trace analyses, as rank, budget and report --trace read them.
class FanOut final : public importers::TraceEventSink {
 public:
  FanOut(std::vector<importers::TraceEventSink*> sinks) : sinks_(std::move(sinks)) {}
  void on_event(const importers::TraceEvent& event) override {
    for (auto* sink : sinks_) {
      if (sink->wants_category(event.category)) {
        sink->on_event(event);
      } else {
        sink->on_span(event.timestamp_us, event.duration_us);
      }
    }
  }
  void on_span(double timestamp_us, double duration_us) override {
    for (auto* sink : sinks_) sink->on_span(timestamp_us, duration_us);
  }
  void on_graph_nodes(std::shared_ptr<const importers::GraphNodeTable> table) override {
    for (auto* sink : sinks_) sink->on_graph_nodes(table);
  }

 private:
  std::vector<importers::TraceEventSink*> sinks_;
};

// kprof plan over the trace (issue 41): every kernel matched, over limits of every kind, so that
// the proposal's search and both renderings run. The plan reads a file, as the CLI does.
void run_plan(const std::string& file) {
  pipeline::PlanTrace trace;
  try {
    trace = pipeline::read_plan_trace(file, {"kprof", "plan"}, "", "", "");
  } catch (const InputError&) {
    return;
  } catch (const UsageError&) {
    return;
  }
  if (trace.launches.empty()) return;
  capture::CaptureSpec spec;
  spec.preset = capture::Preset::kFull;
  spec.launch_count = 7;
  capture::PlanLimits limits;
  capture::ProbeBudget liveness;
  liveness.probe = "liveness";
  limits.probes.push_back(liveness);
  limits.slo_p99_ms = 2000;
  limits.budget_s = 20;
  limits.device_gb = 80;
  limits.resident_gb = 60;
  limits.kubernetes = true;
  capture::CapturePlan plan = capture::plan_capture(trace, spec, limits);
  check_json(capture::plan_json(plan, {"kprof", "plan"}), "plan JSON");
  check_text(capture::plan_text(plan), "plan text");
  check_json(capture::plan_for_bundle(plan), "plan bundle block");
}

void run_trace(const std::string& path, std::string_view bytes, bool through_file) {
  static const analysis::StageTable stages = analysis::load_stage_table();
  timeline::RankingBuilder ranking_builder(stages, true);
  timeline::BudgetBuilder budget_builder;
  budget_builder.keep_timeline();  // for the annotated trace and the HTML step timeline below
  timeline::TraceTimeIndex index;
  // The trace as its own graph capture too (rank --by op --graph-capture: the same file may be).
  timeline::OpAttributionBuilder capture_builder(timeline::AttributeBy::kOp);
  FanOut sink({&ranking_builder, &budget_builder, &index, &capture_builder});
  render::TraceSource source{path, {"kprof", "rank", path}, {}};
  try {
    if (through_file) {
      std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<long>(bytes.size()));
      source.stats = importers::read_trace(path, sink);
    } else {
      source.stats = importers::read_chrome_trace_bytes(path, bytes, sink);
    }
  } catch (const InputError&) {
    return;
  }
  check_text(render::trace_warnings(source), "trace warnings");
  if (through_file) {
    run_plan(path);
  } else {
    static const std::string file = "/tmp/kprof-fuzz-plan-" + std::to_string(::getpid());
    std::ofstream(file, std::ios::binary).write(bytes.data(), static_cast<long>(bytes.size()));
    run_plan(file);
    std::remove(file.c_str());
  }
  timeline::Ranking ranking = ranking_builder.finish();
  check_json(render::ranking_json(ranking, source), "rank JSON");
  check_text(render::ranking_text(ranking, source, 20, 70), "rank text");
  timeline::Budget budget = budget_builder.finish("", {});
  check_json(render::budget_json(budget, {}, source), "budget JSON");
  check_text(render::budget_text(budget, {}, source), "budget text");
  check_json(render::step_ranking_json(budget, source), "rank --per-step JSON");
  check_text(render::step_ranking_text(budget, source, 20, 70), "rank --per-step text");
  // report --annotate and the HTML page's step timeline, with a fix list of no group.
  timeline::FixList no_fixes;
  render::AnnotatedTraceInput annotate{
      &budget, &no_fixes, &stages, path, {}, source.stats.device_names, {"kprof", "report"}};
  std::string annotated = render::annotated_trace_json(annotate, nullptr);
  if (!is_valid_utf8(annotated)) violation("annotated trace: not UTF-8", annotated);
  if (nlohmann::json::parse(annotated, nullptr, false).is_discarded()) {
    violation("annotated trace: does not parse back", annotated);
  }
  std::string page = render::html_report({}, {}, tables().config(), path, &no_fixes, &budget);
  if (!is_valid_utf8(page)) violation("HTML step timeline: not UTF-8", page);
  // The same trace as two ranks: kprof rank/budget given several traces.
  std::vector<render::TraceSource> sources{source, source};
  std::vector<timeline::Ranking> rankings{ranking, ranking};
  timeline::RankComparison comparison = timeline::compare_rankings(rankings);
  check_json(render::ranks_ranking_json(sources, rankings, comparison), "rank over ranks JSON");
  check_text(render::ranks_ranking_text(sources, rankings, comparison, 20, 70),
             "rank over ranks text");
  std::vector<timeline::Budget> budgets{budget, budget};
  std::vector<timeline::StepComparison> steps = timeline::compare_budgets(budgets);
  check_json(render::ranks_budget_json(sources, budgets, steps, {}), "budget over ranks JSON");
  check_text(render::ranks_budget_text(sources, budgets, steps, {}), "budget over ranks text");
  (void)index.gpu_span_us();
  // rank --by op|module|range --graph-capture: the second reading attributes its graph replays
  // through the first's captured launches (or, for a tracer trace, its own graph node table).
  for (timeline::AttributeBy by : {timeline::AttributeBy::kOp, timeline::AttributeBy::kModule,
                                   timeline::AttributeBy::kRange}) {
    timeline::OpAttributionBuilder ops_builder(by);
    ops_builder.use_stage_table(&stages);
    ops_builder.use_graph_capture(capture_builder.finish_capture());
    try {
      if (through_file) {
        importers::read_trace(path, ops_builder);
      } else {
        importers::read_chrome_trace_bytes(path, bytes, ops_builder);
      }
    } catch (const InputError&) {
      return;
    }
    timeline::OpAttribution ops = ops_builder.finish();
    check_json(render::op_attribution_json(ops, source), "rank --by op JSON");
    check_text(render::op_attribution_text(ops, source, 20, 70), "rank --by op text");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  for (const importers::Importer* importer : importers::all_importers()) {
    if (importer->recognizes(bytes)) {
      run_report("fuzz.report", bytes);
      return 0;
    }
  }
  bool gzip = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
  if (gzip || importers::looks_like_sqlite(bytes)) {
    // These are read from a file, as the CLI reads them.
    static const std::string file = "/tmp/kprof-fuzz-pipeline-" + std::to_string(::getpid());
    run_trace(file, bytes, true);
    std::remove(file.c_str());
  } else if (importers::looks_like_chrome_trace(bytes)) {
    run_trace("fuzz.json", bytes, false);
  }
  return 0;
}
