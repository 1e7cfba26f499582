#include "cli/report_header.h"

#include <fmt/format.h>

#include "common/utf8.h"

namespace kprof::cli {

std::string describe_report(const model::Report& report, size_t selected_kernels) {
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

}  // namespace kprof::cli
