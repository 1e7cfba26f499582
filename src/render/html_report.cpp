#include "render/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "common/text.h"
#include "render/annotated_trace.h"
#include "render/fix_list_render.h"
#include "render/verdict_columns.h"

namespace kprof::render {
namespace {

std::string escape(std::string_view text) { return html_escape(text); }

std::string number_or_dash(const std::optional<double>& value, double scale = 1) {
  return value && !std::isnan(*value) ? format_number(*value * scale) : "—";
}

struct Roof {
  std::string label;
  double flops_per_second;
  std::string source;
};

const char* kVerdictColours[][2] = {{"compute-bound", "#1b7837"}, {"memory-bound", "#2166ac"},
                                    {"at the ridge", "#762a83"},  {"latency-bound", "#d6604d"},
                                    {"issue-bound", "#b35806"},   {"overhead-bound", "#8c510a"},
                                    {"unknown", "#777777"}};

std::string colour_of(const std::string& verdict) {
  for (auto& [name, colour] : kVerdictColours) {
    if (verdict == name) return colour;
  }
  return "#777777";
}

// Log-log roofline: intensity (FLOP/byte) on x, FLOP/s on y.
std::string roofline_svg(const std::vector<AnalyzedKernel>& kernels, double dram_peak,
                         const std::vector<Roof>& roofs, const std::string& dram_source) {
  const double width = 860, height = 520, left = 80, right = 20, top = 20, bottom = 60;
  double x_min = 1e-2, x_max = 1e4, y_min = 1e9, y_max = 1e16;
  auto x_of = [&](double intensity) {
    return left + (std::log10(intensity) - std::log10(x_min)) /
                      (std::log10(x_max) - std::log10(x_min)) * (width - left - right);
  };
  auto y_of = [&](double flops) {
    return height - bottom -
           (std::log10(flops) - std::log10(y_min)) / (std::log10(y_max) - std::log10(y_min)) *
               (height - top - bottom);
  };
  std::string svg = fmt::format(
      "<svg id=\"roofline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"Roofline\">\n",
      width, height, width, height);
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#fafafa\" stroke=\"#ccc\"/>\n",
      left, top, width - left - right, height - top - bottom);
  for (int e = -2; e <= 4; ++e) {
    double x = x_of(std::pow(10.0, e));
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#eee\"/>"
        "<text x=\"{0:.1f}\" y=\"{3}\" font-size=\"11\" text-anchor=\"middle\">1e{4}</text>\n",
        x, top, height - bottom, height - bottom + 15, e);
  }
  for (int e = 9; e <= 16; ++e) {
    double y = y_of(std::pow(10.0, e));
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#eee\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" font-size=\"11\" text-anchor=\"end\">1e{5}</text>\n",
        left, y, width - right, left - 6, y + 4, e);
  }
  svg += fmt::format(
      "<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\">arithmetic "
      "intensity (FLOP per DRAM byte)</text>\n",
      (left + width - right) / 2, height - 20);
  svg += fmt::format(
      "<text x=\"16\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\" "
      "transform=\"rotate(-90 16 {})\">achieved FLOP/s</text>\n",
      (top + height - bottom) / 2, (top + height - bottom) / 2);
  // Roofs: the DRAM slope up to each compute ceiling, then flat.
  if (dram_peak > 0) {
    for (const Roof& roof : roofs) {
      double ridge = roof.flops_per_second / dram_peak;
      double x0 = x_min, y0 = dram_peak * x_min;
      svg += fmt::format(
          "<polyline class=\"roof\" fill=\"none\" stroke=\"#444\" stroke-width=\"1.5\" "
          "points=\"{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}\"><title>{}: {} TFLOP/s ({}); DRAM "
          "{} TB/s ({}); ridge at {} FLOP/byte</title></polyline>\n",
          x_of(x0), y_of(std::max(y0, y_min)), x_of(ridge), y_of(roof.flops_per_second),
          x_of(x_max), y_of(roof.flops_per_second), escape(roof.label),
          format_number(roof.flops_per_second / 1e12), escape(roof.source),
          format_number(dram_peak / 1e12), escape(dram_source), format_number(ridge));
      svg += fmt::format(
          "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\" text-anchor=\"end\">{} "
          "{} TFLOP/s</text>\n",
          width - right - 4, y_of(roof.flops_per_second) - 4, escape(roof.label),
          format_number(roof.flops_per_second / 1e12));
    }
  }
  for (const AnalyzedKernel& k : kernels) {
    const analysis::KernelVerdict& v = k.verdict;
    if (!on_roofline(v)) continue;
    double intensity = std::clamp(*v.arithmetic_intensity, x_min, x_max);
    double flops = std::clamp(*v.tflops * 1e12, y_min, y_max);
    std::string verdict = analysis::roofline_name(v.roofline);
    svg += fmt::format(
        "<circle class=\"kernel\" data-launch=\"{}\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"5\" "
        "fill=\"{}\" fill-opacity=\"0.75\" stroke=\"#222\"><title>{} (id {})\n{} · {}\n{} "
        "TFLOP/s at {} FLOP/byte · DRAM {} of peak · {} us</title></circle>\n",
        k.kernel->id, x_of(intensity), y_of(flops), colour_of(verdict),
        escape(k.kernel->display_name()), k.kernel->id, verdict,
        escape(v.bound_by.empty() ? "nothing binds" : "bound by " + v.bound_by),
        format_number(*v.tflops), format_number(*v.arithmetic_intensity),
        v.memory_bw_utilization ? fmt::format("{:.0f}%", *v.memory_bw_utilization * 100) : "—",
        number_or_dash(v.duration_ns, 1e-3));
  }
  return svg + "</svg>\n";
}

const char* kIdleColours[][2] = {
    {"host gap", "#f4a582"}, {"device-side idle", "#bababa"}, {"dependency wait", "#e7c000"}};

std::string idle_colour(timeline::IdleKind kind) {
  std::string name = timeline::idle_kind_name(kind);
  for (auto& [label, colour] : kIdleColours) {
    if (name == label) return colour;
  }
  return "#bababa";
}

// The step the timeline shows: the median of the steps with GPU work by GPU span (graph-capture
// steps left out), so that one outlier does not stand for the run.
const timeline::StepBudget* typical_step(const timeline::Budget& budget, std::size_t* number) {
  std::vector<std::size_t> candidates;
  for (std::size_t i = 0; i < budget.steps.size(); ++i) {
    const timeline::StepBudget& step = budget.steps[i];
    if (step.verdict != timeline::StepVerdict::kGraphCapture && !step.work.empty()) {
      candidates.push_back(i);
    }
  }
  if (candidates.empty()) return nullptr;
  std::stable_sort(candidates.begin(), candidates.end(), [&](std::size_t a, std::size_t b) {
    return budget.steps[a].gpu_span_us < budget.steps[b].gpu_span_us;
  });
  *number = candidates[candidates.size() / 2];
  return &budget.steps[*number];
}

// Slices drawn at most: a step of more would make a page no browser scrolls.
constexpr std::size_t kMaxTimelineSlices = 5000;

std::string step_timeline_html(const timeline::Budget& budget, const timeline::FixList* fixes) {
  std::size_t number = 0;
  const timeline::StepBudget* step = typical_step(budget, &number);
  if (!step) return "";
  // Rows: per device its idle row, then its streams (-1: the trace did not say).
  std::map<std::int64_t, std::set<std::int64_t>> streams_of;
  double t0 = 0, t1 = 0;
  bool any = false;
  auto extend = [&](double from, double to) {
    t0 = any ? std::min(t0, from) : from;
    t1 = any ? std::max(t1, to) : to;
    any = true;
  };
  for (std::size_t i : step->work) {
    const timeline::TimelineItem& item = budget.timeline[i];
    streams_of[item.device].insert(item.stream.value_or(-1));
    extend(item.start_us, item.end_us);
  }
  for (const timeline::IdleInterval& idle : step->idle) {
    streams_of[idle.device];
    extend(idle.from_us, idle.to_us);
  }
  if (!any || t1 <= t0) return "";
  struct Row {
    std::int64_t device;
    std::optional<std::int64_t> stream;  // nullopt: the device's idle row
  };
  std::vector<Row> rows;
  for (const auto& [device, streams] : streams_of) {
    rows.push_back({device, std::nullopt});
    for (std::int64_t stream : streams) rows.push_back({device, stream});
  }
  auto row_of = [&](std::int64_t device, std::optional<std::int64_t> stream) {
    for (std::size_t r = 0; r < rows.size(); ++r) {
      if (rows[r].device == device && rows[r].stream == stream) return r;
    }
    return std::size_t{0};
  };
  const double width = 1100, left = 150, right = 20, top = 10, row_height = 22, axis = 34;
  double height = top + static_cast<double>(rows.size()) * row_height + axis;
  double plot = width - left - right;
  auto x_of = [&](double t) { return left + (t - t0) / (t1 - t0) * plot; };

  std::string html = fmt::format(
      "<h2>One step's timeline</h2>\n<p id=\"step-timeline-caption\">Step {} of {} ({}, the "
      "median GPU span): {} — GPU span {} µs, busy {:.1f} %, host gap {} µs, device-side idle "
      "{} µs, dependency wait {} µs. Kernels are coloured by their group's verdict (grey: not "
      "captured); idle intervals are shaded by what the device waited for. Hover for the "
      "numbers.</p>\n<div class=\"legend\">",
      number + 1, budget.steps.size(), escape(step->name),
      escape(timeline::step_verdict_name(step->verdict)), format_number(step->gpu_span_us),
      step->busy_fraction * 100, format_number(step->host_gap_us),
      format_number(step->device_idle_us), format_number(step->dependency_wait_us));
  for (auto& [name, colour] : kVerdictColours) {
    html += fmt::format("<span><i style=\"background:{}\"></i>{}</span>", colour, name);
  }
  html += "<span><i style=\"background:#d0d0d0\"></i>not captured</span>";
  for (auto& [name, colour] : kIdleColours) {
    html +=
        fmt::format("<span><i style=\"background:{};border-radius:0\"></i>{}</span>", colour, name);
  }
  html += "</div>\n";
  html += fmt::format(
      "<svg id=\"step-timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" "
      "height=\"{}\" viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"One step's timeline\">\n",
      width, height, width, height);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    double y = top + static_cast<double>(r) * row_height;
    std::string label = rows[r].stream
                            ? (*rows[r].stream >= 0 ? fmt::format("stream {}", *rows[r].stream)
                                                    : std::string("stream ?"))
                            : (rows[r].device >= 0 ? fmt::format("GPU {} idle", rows[r].device)
                                                   : std::string("GPU idle"));
    html += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"/>"
        "<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"end\">{}</text>\n",
        left, y, plot, row_height, r % 2 ? "#ffffff" : "#f6f6f6", left - 8, y + 15, label);
  }
  // Idle intervals: a band over the device's rows and a solid bar in its idle row.
  for (const timeline::IdleInterval& idle : step->idle) {
    double y = top + static_cast<double>(row_of(idle.device, std::nullopt)) * row_height;
    double rows_of_device = static_cast<double>(streams_of[idle.device].size() + 1);
    double x = x_of(idle.from_us), w = std::max(0.5, x_of(idle.to_us) - x);
    std::string title =
        fmt::format("{}: {} µs, at +{} µs", timeline::idle_kind_name(idle.kind),
                    format_number(idle.to_us - idle.from_us), format_number(idle.from_us - t0));
    html += fmt::format(
        "<rect class=\"idle\" x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\" "
        "fill-opacity=\"0.25\"/><rect class=\"idle-bar\" x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" "
        "height=\"{}\" fill=\"{}\"><title>{}</title></rect>\n",
        x, y, w, rows_of_device * row_height, idle_colour(idle.kind), x, y + 3, w, row_height - 6,
        idle_colour(idle.kind), escape(title));
  }
  FixGroupIndex groups(fixes);
  std::size_t drawn = 0;
  for (std::size_t i : step->work) {
    if (drawn == kMaxTimelineSlices) break;
    const timeline::TimelineItem& item = budget.timeline[i];
    FixGroupIndex::Match match = groups.find(item);
    std::string colour = match.group ? colour_of(match.group->roofline) : "#d0d0d0";
    std::string title =
        fmt::format("{}\n{} µs at +{} µs", item.name, format_number(item.end_us - item.start_us),
                    format_number(item.start_us - t0));
    if (match.group) {
      const timeline::FixGroup& g = *match.group;
      title += fmt::format("\n{}{}; fix #{}: estimated saving {} µs over the trace", g.roofline,
                           g.bound_by.empty() ? "" : ", bound by " + g.bound_by, match.rank,
                           number_or_dash(g.estimated_saving_us));
    } else if (item.category == "kernel") {
      title += "\nnot captured" + (match.how.empty() ? "" : " (" + match.how + ")");
    }
    double x = x_of(item.start_us), w = std::max(0.5, x_of(item.end_us) - x);
    double y =
        top + static_cast<double>(row_of(item.device, item.stream.value_or(-1))) * row_height + 2;
    html += fmt::format(
        "<rect class=\"k\" x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\">"
        "<title>{}</title></rect>\n",
        x, y, w, row_height - 4, colour, escape(title));
    ++drawn;
  }
  double axis_y = top + static_cast<double>(rows.size()) * row_height;
  for (int tick = 0; tick <= 4; ++tick) {
    double t = t0 + (t1 - t0) * tick / 4;
    html += fmt::format(
        "<line x1=\"{0:.2f}\" y1=\"{1}\" x2=\"{0:.2f}\" y2=\"{2}\" stroke=\"#999\"/>"
        "<text x=\"{0:.2f}\" y=\"{3}\" font-size=\"12\" text-anchor=\"{5}\">{4} µs</text>\n",
        x_of(t), axis_y, axis_y + 5, axis_y + 20, format_number(t - t0),
        tick == 0   ? "start"
        : tick == 4 ? "end"
                    : "middle");  // the end labels inside the plot
  }
  html += "</svg>\n";
  if (step->work.size() > drawn) {
    html += fmt::format(
        "<p class=\"note\">The first {} of the step's {} GPU activities are drawn.</p>\n", drawn,
        step->work.size());
  }
  return html;
}

}  // namespace

bool on_roofline(const analysis::KernelVerdict& v) {
  return v.tflops && *v.tflops > 0 && v.arithmetic_intensity && *v.arithmetic_intensity > 0;
}

std::string html_report(const std::vector<AnalyzedKernel>& kernels,
                        const std::vector<const model::Report*>& reports,
                        const analysis::AnalysisConfig& config, const std::string& trace_path,
                        const timeline::FixList* fix_list, const timeline::Budget* budget) {
  // Peaks: DRAM from the report when it carries it, compute roofs from the hardware database
  // (dense figures), FP32 from the report's own FFMA peak when present.
  double dram_peak = 0;
  std::string dram_source;
  for (const AnalyzedKernel& k : kernels) {
    if (k.verdict.dram_peak_bytes_per_second) {
      dram_peak = *k.verdict.dram_peak_bytes_per_second;
      dram_source = k.verdict.dram_peak_source;
      break;
    }
  }
  std::vector<Roof> roofs;
  std::string gpu_name = "unknown GPU";
  const hardware::GpuSpec* spec = nullptr;
  if (!reports.empty() && !reports.front()->devices.empty()) {
    gpu_name = reports.front()->devices.front().name;
    spec = config.gpus ? config.gpus->find_for_device(gpu_name) : nullptr;
  }
  if (spec) {
    std::string source = "hardware database: " + spec->name + " " +
                         (spec->sources.count("compute") ? spec->sources.at("compute") : "");
    for (auto [key, label] :
         {std::pair{"bf16", "BF16 tensor"}, std::pair{"fp32", "FP32"}, std::pair{"fp64", "FP64"}}) {
      auto it = spec->peak_tflops.find(key);
      if (it != spec->peak_tflops.end()) roofs.push_back({label, it->second * 1e12, source});
    }
  }
  std::string title = reports.size() == 1 ? reports.front()->path : "kprof report";
  std::string html = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  html += "<title>kprof: " + escape(title) + "</title>\n";
  html += R"(<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; }
table { border-collapse: collapse; margin: 12px 0; }
th, td { padding: 3px 8px; border-bottom: 1px solid #ddd; text-align: right; white-space: nowrap; }
th { cursor: pointer; background: #f3f3f3; position: sticky; top: 0; }
td.name, th.name { text-align: left; max-width: 420px; overflow: hidden; text-overflow: ellipsis; }
td.text { text-align: left; }
.legend span { display: inline-block; margin-right: 14px; }
.legend i { display: inline-block; width: 10px; height: 10px; border-radius: 5px; margin-right: 4px; }
.note { color: #555; }
</style></head><body>
)";
  html += "<h1>kprof report</h1>\n<p>";
  for (const model::Report* report : reports) {
    html += escape(report->path) + " — " + std::to_string(report->kernels.size()) +
            " kernels, Nsight Compute " + escape(report->session.ncu_version) + "<br>\n";
  }
  if (!trace_path.empty()) html += "joined to the trace " + escape(trace_path) + "<br>\n";
  html += "GPU: " + escape(gpu_name) + "</p>\n";
  html += fmt::format(
      "<p class=\"note\">Thresholds: compute-bound when SM throughput ≥ {}% of peak, memory-bound "
      "when memory throughput ≥ {}%; both: at the ridge; neither: latency-bound, or issue-bound "
      "with the issue slots ≥ 60% busy; an SM side of non-math instructions (every math pipe < "
      "60%): overhead-bound. DRAM peak: {}. "
      "Compute roofs: dense datasheet peaks ({}). Points: achieved FLOP/s (ncu's roofline "
      "formulas) over DRAM bytes/s.</p>\n",
      format_number(config.thresholds.compute_pct), format_number(config.thresholds.memory_pct),
      escape(dram_source.empty() ? "not in the capture" : dram_source),
      spec ? escape(spec->name) : "no database entry for this GPU");
  if (fix_list) html += fix_list_html(*fix_list);
  if (budget) html += step_timeline_html(*budget, fix_list);
  html += "<h2>Roofline</h2>\n<div class=\"legend\">";
  for (auto& [name, colour] : kVerdictColours) {
    html += fmt::format("<span><i style=\"background:{}\"></i>{}</span>", colour, name);
  }
  html += "</div>\n" + roofline_svg(kernels, dram_peak, roofs, dram_source);
  size_t unplotted = std::count_if(kernels.begin(), kernels.end(),
                                   [](const AnalyzedKernel& k) { return !on_roofline(k.verdict); });
  if (unplotted) {
    html += fmt::format(
        "<p class=\"note\">{} kernel{} not on the roofline: the capture lacks their "
        "FLOP/s or DRAM traffic (see the table's missing column).</p>\n",
        unplotted, unplotted == 1 ? " is" : "s are");
  }
  bool joined = std::any_of(kernels.begin(), kernels.end(), [](const auto& k) { return k.joined; });
  const std::vector<const VerdictColumn*> shown = html_columns(joined);
  html += "<h2>Kernels</h2>\n<table id=\"kernels\"><thead><tr>";
  for (const VerdictColumn* column : shown) html += column->html_header;
  html += "</tr></thead><tbody>\n";
  std::map<std::string, double> stage_time;
  double total_time = 0;
  const CellContext context{&config.thresholds, 0};
  for (const AnalyzedKernel& k : kernels) {
    const analysis::KernelVerdict& v = k.verdict;
    double weight = k.share ? k.share->time.total_us : v.duration_ns.value_or(0) / 1000;
    stage_time[v.stage.empty() ? "other" : v.stage] += weight;
    total_time += weight;
    html += "<tr>";
    for (const VerdictColumn* column : shown) html += column->html_cell(k, context);
    html += "</tr>\n";
  }
  html +=
      "</tbody></table>\n<h2>Stages</h2>\n<table id=\"stages\"><thead><tr><th class=\"name\">"
      "stage</th><th>";
  html += joined ? "trace ms" : "captured ms";
  html += "</th><th>share</th></tr></thead><tbody>\n";
  std::vector<std::pair<std::string, double>> stages(stage_time.begin(), stage_time.end());
  std::sort(stages.begin(), stages.end(), [](auto& a, auto& b) { return a.second > b.second; });
  for (const auto& [stage, us] : stages) {
    html += fmt::format("<tr><td class=\"name\">{}</td><td>{}</td><td>{:.1f}%</td></tr>\n",
                        escape(stage), format_number(us / 1000),
                        total_time > 0 ? us / total_time * 100 : 0);
  }
  html += "</tbody></table>\n";
  html += fmt::format(
      "<p class=\"note\">Generated by kprof {}. Stage shares weigh each captured "
      "kernel by {}.</p>\n",
      KPROF_VERSION, joined ? "its total time in the trace" : "its captured duration");
  // Sorting by a click on a column header; no network, no libraries.
  html += R"(<script>
document.querySelectorAll('table').forEach(function (table) {
  table.querySelectorAll('th').forEach(function (header, column) {
    header.addEventListener('click', function () {
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      var ascending = header.dataset.order !== 'asc';
      header.dataset.order = ascending ? 'asc' : 'desc';
      rows.sort(function (a, b) {
        var x = a.cells[column].textContent, y = b.cells[column].textContent;
        var nx = parseFloat(x.replace(/,/g, '')), ny = parseFloat(y.replace(/,/g, ''));
        var order = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
        return ascending ? order : -order;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
</script>
</body></html>
)";
  return html;
}

}  // namespace kprof::render
