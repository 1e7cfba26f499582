#include "render/verdict_columns.h"

#include <fmt/format.h>

#include <cmath>
#include <map>

#include "common/text.h"

namespace kprof::render {
namespace {

using Align = TextTable::Align;
using Shown = VerdictColumn::Shown;

// A number as the table prints it: "—" when missing, "~0" when it rounds away.
std::string column_cell(const std::optional<double>& value, double scale = 1) {
  if (!value || std::isnan(*value)) return "—";
  double scaled = *value * scale;
  return scaled != 0 && std::fabs(scaled) < 0.0005 ? "~0" : format_number(scaled);
}

// A number as the page prints it.
std::string number_or_dash(const std::optional<double>& value, double scale = 1) {
  return value && !std::isnan(*value) ? format_number(*value * scale) : "—";
}

// A number as the CSV writes it: all its digits, empty when missing.
std::string csv_number(const std::optional<double>& value) {
  return value && !std::isnan(*value) ? fmt::format("{}", *value) : std::string();
}

std::string or_dash(const std::string& text) { return text.empty() ? "—" : text; }

std::string td(const std::string& inner) { return "<td>" + inner + "</td>"; }
std::string td_text(const std::string& inner) { return "<td class=\"text\">" + inner + "</td>"; }
std::string td_name(const std::string& inner) { return "<td class=\"name\">" + inner + "</td>"; }

std::string top_stall(const analysis::KernelVerdict& v) {
  if (v.stalls.empty()) return "—";
  return fmt::format("{} {:.0f}%", v.stalls.front().reason, v.stalls.front().share * 100);
}

std::string limiter_cell(const analysis::KernelVerdict& v) {
  if (!v.achieved_occupancy && !v.theoretical_occupancy) return "—";
  std::string text = fmt::format("{}/{}", column_cell(v.achieved_occupancy, 100),
                                 column_cell(v.theoretical_occupancy, 100));
  if (!v.occupancy_limiter.empty() && v.occupancy_limiter != "none") {
    text += " " + v.occupancy_limiter;
  }
  return text;
}

std::string short_ceiling_name(const std::string& ceiling) {
  for (const char* suffix : {"_bandwidth", "_flops"}) {
    std::string_view tail(suffix);
    if (ceiling.size() > tail.size() && ceiling.ends_with(tail)) {
      return ceiling.substr(0, ceiling.size() - tail.size());
    }
  }
  return ceiling;
}

// The ceiling the kernel came closest to: "dram 97% (peak 83%)".
std::string measured_ceiling_cell(const analysis::KernelVerdict& v) {
  if (v.measured_ceilings.empty()) return "—";
  const analysis::CeilingUse& top = v.measured_ceilings.front();
  std::string text =
      fmt::format("{} {:.0f}%", short_ceiling_name(top.ceiling), top.fraction_of_measured * 100);
  if (top.fraction_of_peak) text += fmt::format(" (peak {:.0f}%)", *top.fraction_of_peak * 100);
  return text;
}

std::string share_cell(const AnalyzedKernel& k) {
  if (!k.share) return "not in trace";
  return fmt::format("{:.1f}", k.share->fraction_of_pipeline * 100);
}

std::string speedup_cell(const AnalyzedKernel& k) {
  if (!k.share) return "—";
  return std::isinf(k.share->max_e2e_speedup) ? "∞"
                                              : fmt::format("{:.2f}×", k.share->max_e2e_speedup);
}

std::string verdict_text(const analysis::KernelVerdict& v) {
  std::string verdict = analysis::roofline_name(v.roofline);
  if (v.contradicts_expectation) verdict += " (!)";
  return verdict;
}

// Each column, once. Lambdas without captures convert to the plain function pointers.
const std::map<std::string_view, VerdictColumn>& columns() {
  using K = const AnalyzedKernel&;
  using C = const CellContext&;
  static const std::map<std::string_view, VerdictColumn> all = [] {
    std::vector<VerdictColumn> list = {
        {"report", "", Align::kLeft, Shown::kAlways, nullptr, "report",
         [](K k, C) { return csv_field(k.report->path); }, "", nullptr},
        {"id", "id", Align::kRight, Shown::kAlways,
         [](K k, C) { return std::to_string(k.kernel->id); }, "launch",
         [](K k, C) { return std::to_string(k.kernel->id); }, "<th>id</th>",
         [](K k, C) { return td(std::to_string(k.kernel->id)); }},
        {"kernel", "kernel", Align::kLeft, Shown::kAlways,
         [](K k, C c) { return ellipsize(k.kernel->display_name(), c.name_width); }, "kernel",
         [](K k, C) { return csv_field(k.kernel->display_name()); },
         "<th class=\"name\">kernel</th>",
         [](K k, C) {
           const std::string name = html_escape(k.kernel->display_name());
           return "<td class=\"name\" title=\"" + name + "\">" + name + "</td>";
         }},
        {"us", "us", Align::kRight, Shown::kAlways,
         [](K k, C) { return column_cell(k.verdict.duration_ns, 1e-3); }, "wall_clock_us",
         [](K k, C) {
           const auto& ns = k.verdict.duration_ns;
           return csv_number(ns ? std::optional<double>(*ns / 1000) : std::nullopt);
         },
         "<th>us</th>", [](K k, C) { return td(number_or_dash(k.verdict.duration_ns, 1e-3)); }},
        {"pipeline_share", "% pipe", Align::kRight, Shown::kWhenJoined,
         [](K k, C) { return share_cell(k); }, "", nullptr, "<th>% pipeline</th>",
         [](K k, C) {
           return k.share ? fmt::format("<td>{:.2f}</td>", k.share->fraction_of_pipeline * 100)
                          : std::string("<td>not in trace</td>");
         }},
        {"max_e2e", "max e2e", Align::kRight, Shown::kWhenJoined,
         [](K k, C) { return speedup_cell(k); }, "", nullptr, "<th>max e2e</th>",
         [](K k, C) {
           return k.share ? fmt::format("<td>{:.3f}×</td>", k.share->max_e2e_speedup)
                          : std::string("<td>—</td>");
         }},
        {"verdict", "verdict", Align::kLeft, Shown::kAlways,
         [](K k, C) { return verdict_text(k.verdict); }, "roofline",
         [](K k, C) { return csv_field(analysis::roofline_name(k.verdict.roofline)); },
         "<th>verdict</th>",
         [](K k, C) { return td_text(analysis::roofline_name(k.verdict.roofline)); }},
        {"bound_by", "bound by", Align::kLeft, Shown::kAlways,
         [](K k, C) { return or_dash(k.verdict.bound_by); }, "bound_by",
         [](K k, C) { return csv_field(k.verdict.bound_by); }, "<th>bound by</th>",
         [](K k, C) { return td_text(html_escape(or_dash(k.verdict.bound_by))); }},
        {"sm", "SM %", Align::kRight, Shown::kAlways,
         [](K k, C) { return column_cell(k.verdict.sm_throughput_pct); }, "sm_throughput_pct",
         [](K k, C) { return csv_number(k.verdict.sm_throughput_pct); }, "<th>SM %</th>",
         [](K k, C) { return td(number_or_dash(k.verdict.sm_throughput_pct)); }},
        {"memory", "mem %", Align::kRight, Shown::kAlways,
         [](K k, C) { return column_cell(k.verdict.memory_throughput_pct); },
         "memory_throughput_pct",
         [](K k, C) { return csv_number(k.verdict.memory_throughput_pct); }, "<th>mem %</th>",
         [](K k, C) { return td(number_or_dash(k.verdict.memory_throughput_pct)); }},
        {"tflops", "TFLOP/s", Align::kRight, Shown::kAlways,
         [](K k, C) { return column_cell(k.verdict.tflops); }, "tflops",
         [](K k, C) { return csv_number(k.verdict.tflops); }, "<th>TFLOP/s</th>",
         [](K k, C) { return td(number_or_dash(k.verdict.tflops)); }},
        {"dram_bw", "DRAM BW", Align::kRight, Shown::kAlways,
         [](K k, C) {
           const auto& u = k.verdict.memory_bw_utilization;
           return u ? fmt::format("{:.0f}%", *u * 100) : std::string("—");
         },
         "memory_bw_utilization",
         [](K k, C) { return csv_number(k.verdict.memory_bw_utilization); }, "<th>DRAM BW %</th>",
         [](K k, C) { return td(number_or_dash(k.verdict.memory_bw_utilization, 100)); }},
        {"arithmetic_intensity", "", Align::kLeft, Shown::kAlways, nullptr, "arithmetic_intensity",
         [](K k, C) { return csv_number(k.verdict.arithmetic_intensity); }, "", nullptr},
        {"measured_ceiling", "measured ceiling", Align::kLeft, Shown::kWhenCalibrated,
         [](K k, C) { return measured_ceiling_cell(k.verdict); }, "", nullptr, "", nullptr},
        {"achieved_occupancy", "", Align::kLeft, Shown::kAlways, nullptr, "sm_occupancy",
         [](K k, C) { return csv_number(k.verdict.achieved_occupancy); }, "", nullptr},
        {"theoretical_occupancy", "", Align::kLeft, Shown::kAlways, nullptr,
         "theoretical_occupancy",
         [](K k, C) { return csv_number(k.verdict.theoretical_occupancy); }, "", nullptr},
        {"occupancy", "occ % ach/theo limiter", Align::kLeft, Shown::kAlways,
         [](K k, C) { return limiter_cell(k.verdict); }, "", nullptr, "<th>occ % ach/theo</th>",
         [](K k, C) {
           return "<td>" + number_or_dash(k.verdict.achieved_occupancy, 100) + "/" +
                  number_or_dash(k.verdict.theoretical_occupancy, 100) + "</td>";
         }},
        {"occupancy_limiter", "", Align::kLeft, Shown::kAlways, nullptr, "occupancy_limiter",
         [](K k, C) { return csv_field(k.verdict.occupancy_limiter); }, "<th>limiter</th>",
         [](K k, C) { return td_text(html_escape(k.verdict.occupancy_limiter)); }},
        {"registers_per_thread", "", Align::kLeft, Shown::kAlways, nullptr, "registers_per_thread",
         [](K k, C) { return csv_number(k.verdict.registers_per_thread); }, "", nullptr},
        {"top_stall", "top stall", Align::kLeft, Shown::kAlways,
         [](K k, C) { return top_stall(k.verdict); }, "top_stall",
         [](K k, C) {
           return csv_field(k.verdict.stalls.empty() ? "" : k.verdict.stalls.front().reason);
         },
         "<th>top stall</th>",
         [](K k, C) {
           return td_text(k.verdict.stalls.empty() ? "—"
                                                   : html_escape(k.verdict.stalls.front().reason));
         }},
        {"top_stall_share", "", Align::kLeft, Shown::kAlways, nullptr, "top_stall_share",
         [](K k, C) {
           return k.verdict.stalls.empty() ? std::string()
                                           : fmt::format("{}", k.verdict.stalls.front().share);
         },
         "", nullptr},
        {"stage", "stage", Align::kLeft, Shown::kAlways,
         [](K k, C) { return or_dash(k.verdict.stage); }, "stage",
         [](K k, C) { return csv_field(k.verdict.stage); }, "<th>stage</th>",
         [](K k, C) { return td_text(html_escape(k.verdict.stage)); }},
        {"expected_bottleneck", "", Align::kLeft, Shown::kAlways, nullptr, "expected_bottleneck",
         [](K k, C) { return csv_field(k.verdict.expected_bottleneck); }, "", nullptr},
        {"contradicts_expectation", "", Align::kLeft, Shown::kAlways, nullptr,
         "contradicts_expectation",
         [](K k, C) { return std::string(k.verdict.contradicts_expectation ? "true" : "false"); },
         "", nullptr},
        {"headroom", "", Align::kLeft, Shown::kAlways, nullptr, "optimization_headroom",
         [](K k, C) { return csv_field(k.verdict.headroom); }, "<th class=\"name\">headroom</th>",
         [](K k, C) { return td_name(html_escape(k.verdict.headroom)); }},
        {"missing", "", Align::kLeft, Shown::kAlways, nullptr, "", nullptr,
         "<th class=\"name\">missing</th>",
         [](K k, C) {
           std::string missing;
           for (const auto& m : k.verdict.missing)
             missing += (missing.empty() ? "" : "; ") + m.substr(0, m.find(' '));
           return td_name(html_escape(missing));
         }},
        {"compute_threshold", "", Align::kLeft, Shown::kAlways, nullptr, "compute_threshold_pct",
         [](K, C c) { return fmt::format("{}", c.thresholds->compute_pct); }, "", nullptr},
        {"memory_threshold", "", Align::kLeft, Shown::kAlways, nullptr, "memory_threshold_pct",
         [](K, C c) { return fmt::format("{}", c.thresholds->memory_pct); }, "", nullptr},
    };
    std::map<std::string_view, VerdictColumn> by_name;
    for (const VerdictColumn& column : list) by_name.emplace(column.name, column);
    return by_name;
  }();
  return all;
}

std::vector<const VerdictColumn*> in_order(std::initializer_list<std::string_view> names) {
  std::vector<const VerdictColumn*> out;
  for (std::string_view name : names) out.push_back(&columns().at(name));
  return out;
}

}  // namespace

std::vector<const VerdictColumn*> table_columns(bool joined, bool calibrated) {
  std::vector<const VerdictColumn*> shown;
  for (const VerdictColumn* column :
       in_order({"id", "kernel", "us", "pipeline_share", "max_e2e", "verdict", "bound_by", "sm",
                 "memory", "tflops", "dram_bw", "measured_ceiling", "occupancy", "top_stall",
                 "stage"})) {
    if ((column->shown == Shown::kWhenJoined && !joined) ||
        (column->shown == Shown::kWhenCalibrated && !calibrated))
      continue;
    shown.push_back(column);
  }
  return shown;
}

std::vector<const VerdictColumn*> csv_columns() {
  return in_order({"report",
                   "id",
                   "kernel",
                   "stage",
                   "us",
                   "verdict",
                   "bound_by",
                   "sm",
                   "memory",
                   "tflops",
                   "dram_bw",
                   "arithmetic_intensity",
                   "achieved_occupancy",
                   "theoretical_occupancy",
                   "occupancy_limiter",
                   "registers_per_thread",
                   "top_stall",
                   "top_stall_share",
                   "expected_bottleneck",
                   "contradicts_expectation",
                   "headroom",
                   "compute_threshold",
                   "memory_threshold"});
}

std::vector<const VerdictColumn*> html_columns(bool joined) {
  std::vector<const VerdictColumn*> shown;
  for (const VerdictColumn* column :
       in_order({"id", "kernel", "pipeline_share", "max_e2e", "us", "verdict", "bound_by", "sm",
                 "memory", "tflops", "dram_bw", "occupancy", "occupancy_limiter", "top_stall",
                 "stage", "headroom", "missing"})) {
    if (column->shown == Shown::kWhenJoined && !joined) continue;
    shown.push_back(column);
  }
  return shown;
}

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace kprof::render
