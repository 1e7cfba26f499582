#include "render/report_text.h"

#include <fmt/format.h>

#include "analysis/kernel_summary.h"
#include "common/text.h"
#include "common/utf8.h"
#include "render/table.h"

namespace kprof::render {
namespace {

std::string report_cell(const std::optional<double>& value, double scale = 1) {
  return value ? format_number(*value * scale) : "—";
}

std::string occupancy_cell(const analysis::KernelSummary& s) {
  if (!s.achieved_occupancy_pct && !s.theoretical_occupancy_pct) return "—";
  return fmt::format("{}/{}", report_cell(s.achieved_occupancy_pct),
                     report_cell(s.theoretical_occupancy_pct));
}

std::string optional_number(const std::optional<std::uint64_t>& value) {
  return value ? std::to_string(*value) : std::string("(not given)");
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : " ") + item;
  return out;
}

constexpr size_t kWrapWidth = 96;

}  // namespace

std::string summary_table(const model::Report& report, const std::vector<size_t>& order,
                          size_t name_width, std::set<std::string>& missing) {
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
    analysis::KernelSummary s = analysis::summarize(report, kernel);
    missing.insert(s.missing.begin(), s.missing.end());
    table.add_row({std::to_string(kernel.id), ellipsize(kernel.display_name(), name_width),
                   report_cell(s.duration_ns, 1e-3), report_cell(s.sm_throughput_pct),
                   report_cell(s.memory_throughput_pct), report_cell(s.dram_throughput_pct),
                   occupancy_cell(s), report_cell(s.registers_per_thread), kernel.grid.to_string(),
                   kernel.block.to_string()});
  }
  return table.to_string();
}

std::string session_text(const model::Report& report) {
  const model::Session& s = report.session;
  const model::ProfilerSettings& p = s.settings;
  std::string out = "session\n";
  auto line = [&](std::string_view key, const std::string& value) {
    if (!value.empty()) {
      out += fmt::format("  {:<26} {}\n", escape_for_terminal(key), escape_for_terminal(value));
    }
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

std::string kernel_text(const model::Kernel& kernel, const KernelTextOptions& options) {
  std::string out =
      fmt::format("kernel {}: {}\n", kernel.id, escape_for_terminal(kernel.display_name()));
  auto line = [&](std::string_view key, const std::string& value) {
    if (!value.empty()) out += fmt::format("  {:<16} {}\n", key, escape_for_terminal(value));
  };
  line("function", kernel.function_name);
  line("demangled", kernel.demangled_name);
  line("mangled", kernel.mangled_name);
  line("process", fmt::format("{} {}", kernel.process_id, kernel.process_name));
  line("context/stream", fmt::format("{}/{}", kernel.context_id, kernel.stream_id));
  line("device", std::to_string(kernel.device_id));
  line("grid/block", fmt::format("{} {}", kernel.grid.to_string(), kernel.block.to_string()));
  TextTable table({{"metric"}, {"value", TextTable::Align::kRight}, {"unit"}});
  // A value too wide for the column gets its own lines under its metric.
  auto add = [&](const std::string& name, const std::string& value, const std::string& unit) {
    std::string shown = escape_for_terminal(value);
    if (display_width(shown) <= kMaxValueWidth) {
      table.add_row({name, shown, unit});
      return;
    }
    table.add_row({name, fmt::format("({} characters:)", display_width(shown)), unit});
    for (const std::string& piece : wrap_text(shown, kWrapWidth)) table.add_line("    " + piece);
  };
  size_t shown = 0;
  for (const model::Metric& metric : kernel.metrics) {
    if (options.include_metric && !options.include_metric(metric.name)) continue;
    ++shown;
    std::string value = metric.value.to_string();
    if (metric.instances.size() > 1) {
      value += fmt::format(" [{} instances]", metric.instances.size());
    }
    add(metric.name, value, metric.unit);
    if (options.instances) {
      for (const auto& instance : metric.instances) {
        add("    @ " + instance.correlation_id.to_string(), instance.value.to_string(), "");
      }
    }
  }
  if (shown != 0) {
    out += table.to_string();
  } else {
    out += "  (no metric matches)\n";
  }
  if (options.rules) {
    for (const model::RuleFinding& rule : kernel.rules) {
      std::string speedup = rule.estimated_speedup
                                ? fmt::format(" (est. speedup {} {:.2f}%)", rule.speedup_type,
                                              *rule.estimated_speedup)
                                : "";
      out += escape_for_terminal(fmt::format("  [{}] {}/{}{}: {}", model::rule_type_code(rule.type),
                                             rule.section, rule.rule, speedup, rule.message)) +
             "\n";
    }
  }
  return out;
}

std::string no_kernel_results_text(const model::Report& report) {
  if (report.skipped_graph_results != 0) {
    return fmt::format(
        "  no kernel results: {} CUDA graph result{} (ncu --graph-profiling graph profiles a "
        "graph\n  launch as one result); kprof's verdicts are per kernel: capture with "
        "--graph-profiling node\n",
        report.skipped_graph_results, report.skipped_graph_results == 1 ? "" : "s");
  }
  if (report.skipped_range_results + report.skipped_cmdlist_results != 0) {
    return "  no kernel results: only range results (ncu --replay-mode range or app-range "
           "profiles a\n  range as one result); kprof's verdicts are per kernel: capture with "
           "--replay-mode kernel\n";
  }
  return "  no kernel results: ncu profiled nothing into this report (a --kernel-name or\n"
         "  --launch-skip that matched no launch, or an application that made no CUDA call)\n";
}

std::string report_header(const model::Report& report, size_t selected_kernels) {
  std::string text =
      fmt::format("{} ({}): ", report.path, model::source_format_name(report.format));
  text +=
      selected_kernels == report.kernels.size()
          ? fmt::format("{} kernel{}", report.kernels.size(), report.kernels.size() == 1 ? "" : "s")
          : fmt::format("{} of {} kernels", selected_kernels, report.kernels.size());
  for (const model::Device& device : report.devices) {
    std::string details;
    std::string cc = device.compute_capability();
    if (!cc.empty()) details += "cc " + cc;
    if (auto sms = device.number("device__attribute_multiprocessor_count")) {
      details += fmt::format("{}{} SMs", details.empty() ? "" : ", ", *sms);
    }
    std::string name = device.name.empty() ? fmt::format("device {}", device.id) : device.name;
    text += details.empty() ? fmt::format(" · {}", name) : fmt::format(" · {} ({})", name, details);
  }
  const model::Session& session = report.session;
  if (!session.ncu_version.empty()) text += " · Nsight Compute " + session.ncu_version;
  const model::ProfilerSettings& settings = session.settings;
  if (!settings.clock_control.empty()) {
    text += " · clock control " + settings.clock_control;
  } else if (!settings.settings_source.empty()) {
    text += " · clock control not given (ncu's default: base in 2025.x)";
  }
  size_t skipped =
      report.skipped_range_results + report.skipped_cmdlist_results + report.skipped_graph_results;
  if (skipped != 0) {
    text += fmt::format(" · {} range/command-list/graph result{} not shown", skipped,
                        skipped == 1 ? "" : "s");
  }
  // Path, device name and versions come from the file (and its name): shown literally.
  return escape_for_terminal(text) + "\n";
}

std::string summary_text(const std::vector<model::Report>& reports,
                         const std::vector<std::vector<size_t>>& orders, size_t name_width) {
  std::string out;
  std::set<std::string> missing;
  for (size_t r = 0; r < reports.size(); ++r) {
    const model::Report& report = reports[r];
    if (r != 0) out += "\n";
    out += report_header(report, orders[r].size());
    if (report.kernels.empty()) {
      out += no_kernel_results_text(report);
      continue;
    }
    out += summary_table(report, orders[r], name_width, missing);
  }
  if (!missing.empty()) {
    out += "— = not collected by this capture:";
    for (const auto& name : missing) out += " " + name;
    out += "\n";
  }
  return out;
}

std::string inspect_text(const std::vector<model::Report>& reports,
                         const std::vector<std::vector<size_t>>& selected,
                         const KernelTextOptions& options, bool session) {
  std::string out;
  for (size_t r = 0; r < reports.size(); ++r) {
    if (r != 0) out += "\n";
    if (session) {
      out += report_header(reports[r], reports[r].kernels.size());
      out += session_text(reports[r]);
      continue;
    }
    out += report_header(reports[r], selected[r].size());
    for (size_t i : selected[r]) out += kernel_text(reports[r].kernels[i], options);
  }
  return out;
}

}  // namespace kprof::render
