#include "render/source_render.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "common/utf8.h"
#include "render/envelope.h"
#include "render/report_json.h"
#include "render/table.h"

namespace kprof::render {
namespace {

constexpr std::uint64_t kInstructionBytes = 16;

std::string count(double value) { return fmt::format("{:.0f}", value); }

// Counts as JSON integers (they are: samples, instructions, bytes), any other value as it is.
nlohmann::json number(double value) {
  if (value >= 0 && value < 9007199254740992.0 &&
      value == static_cast<double>(static_cast<std::uint64_t>(value))) {
    return static_cast<std::uint64_t>(value);
  }
  return value;
}

std::string share(double part, double whole) {
  return whole > 0 ? fmt::format("{:.1f}%", 100.0 * part / whole) : "-";
}

std::string base_name(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string location(const std::optional<analysis::SourceLocation>& where) {
  return where ? fmt::format("{}:{}", base_name(where->file), where->line) : "";
}

std::string reasons_text(const analysis::HotInstruction& row, std::size_t most) {
  std::string text;
  for (std::size_t k = 0; k < row.reasons.size() && k < most; ++k) {
    if (!text.empty()) text += ", ";
    text += fmt::format("{} {:.0f}%", row.reasons[k].first,
                        row.samples > 0 ? 100.0 * row.reasons[k].second / row.samples : 0.0);
  }
  return text;
}

// The instruction as well as it can be shown: SASS, else the PTX line, else the encoding.
std::string instruction_text(const analysis::KernelSource& view, std::size_t i) {
  if (!view.sass[i].empty()) return view.sass[i];
  if (!view.ptx[i].empty()) return view.ptx[i];
  if (!view.encoding[i].empty()) return "[" + view.encoding[i] + "]";
  return "";
}

std::string kernel_text(const std::string& report, const analysis::KernelSource& view) {
  std::string out = fmt::format("{}  ({}, kernel {})\n", escape_for_terminal(view.name),
                                escape_for_terminal(report), view.kernel);
  const analysis::SourceCounters& counters = view.counters;
  std::string module =
      view.module_reference
          ? fmt::format("module {:#x}{}{}", *view.module_reference,
                        view.sm.empty() ? "" : ", " + view.sm,
                        view.cubin_bytes ? fmt::format(", cubin {} bytes", view.cubin_bytes)
                                         : std::string(", no cubin stored"))
          : std::string("no module recorded");
  if (!view.unavailable.empty()) {
    out += fmt::format("  function {}; {}\n  {}\n", escape_for_terminal(view.mangled), module,
                       view.unavailable);
    return out;
  }
  out += fmt::format("  function {}: {} instructions ({} bytes) from {:#x}; {}\n",
                     escape_for_terminal(view.mangled), counters.instructions(), counters.size,
                     counters.start, module);
  double samples = counters.total(analysis::kSamples);
  std::size_t sampled = 0;
  if (auto m = counters.metric(analysis::kSamples)) {
    for (const auto& row : counters.values) sampled += row[*m] > 0;
  }
  out += fmt::format(
      "  {} warp samples at {} instructions, {} instructions executed; line info: {}\n",
      count(samples), sampled, count(counters.total(analysis::kExecuted)), view.line_info);
  if (view.hottest.empty()) {
    out += "  no instruction has samples or executed counts\n";
    return out;
  }
  out += view.ranked_by_samples ? "\n  hottest instructions by warp samples:\n"
                                : "\n  no warp samples; most executed instructions:\n";
  TextTable table({{"offset"},
                   {"samples", TextTable::Align::kRight},
                   {"share", TextTable::Align::kRight},
                   {"stall reasons (of its samples)"},
                   {"executed", TextTable::Align::kRight},
                   {"line"},
                   {"instruction"}});
  for (const analysis::HotInstruction& row : view.hottest) {
    table.add_row({fmt::format("{:#x}", row.index * kInstructionBytes), count(row.samples),
                   share(row.samples, samples), reasons_text(row, 3),
                   count(counters.value(row.index, analysis::kExecuted)),
                   location(view.cuda[row.index]), instruction_text(view, row.index)});
  }
  std::string rows = table.to_string();
  for (size_t at = 0; at < rows.size();) {  // indented under the kernel
    size_t end = rows.find('\n', at);
    if (end == std::string::npos) end = rows.size();
    out += "  " + rows.substr(at, end - at) + "\n";
    at = end + 1;
  }
  if (!view.lines.empty()) {
    out += "\n  CUDA source lines:\n";
    TextTable lines({{"line"},
                     {"samples", TextTable::Align::kRight},
                     {"share", TextTable::Align::kRight},
                     {"executed", TextTable::Align::kRight},
                     {"instructions", TextTable::Align::kRight}});
    for (const analysis::LineTotal& line : view.lines) {
      lines.add_row({location(line.location), count(line.samples), share(line.samples, samples),
                     count(line.executed), std::to_string(line.instructions)});
    }
    std::string text = lines.to_string();
    for (size_t at = 0; at < text.size();) {
      size_t end = text.find('\n', at);
      if (end == std::string::npos) end = text.size();
      out += "  " + text.substr(at, end - at) + "\n";
      at = end + 1;
    }
  }
  return out;
}

nlohmann::json location_json(const std::optional<analysis::SourceLocation>& where) {
  if (!where) return nullptr;
  return {{"file", where->file}, {"line", where->line}};
}

nlohmann::json kernel_json(const std::string& report, const analysis::KernelSource& view) {
  const analysis::SourceCounters& counters = view.counters;
  nlohmann::json kernel = {{"report", report},
                           {"kernel", view.kernel},
                           {"name", view.name},
                           {"mangled_name", view.mangled}};
  kernel["module"] = view.module_reference
                         ? nlohmann::json{{"reference", *view.module_reference},
                                          {"sm", view.sm.empty() ? nlohmann::json(nullptr)
                                                                 : nlohmann::json(view.sm)},
                                          {"cubin_bytes", view.cubin_bytes}}
                         : nlohmann::json(nullptr);
  if (!view.unavailable.empty()) {
    kernel["unavailable"] = view.unavailable;
    return kernel;
  }
  kernel["function"] = {{"start", counters.start},
                        {"size_bytes", counters.size},
                        {"instructions", counters.instructions()},
                        {"symbol_index", view.symbol_index ? nlohmann::json(*view.symbol_index)
                                                           : nlohmann::json(nullptr)}};
  kernel["line_info"] = view.line_info;
  kernel["samples"] = number(counters.total(analysis::kSamples));
  kernel["inst_executed"] = number(counters.total(analysis::kExecuted));
  kernel["ranked_by"] = view.ranked_by_samples ? "samples" : "inst_executed";
  kernel["per_pc_metrics"] = counters.metrics;
  nlohmann::json hottest = nlohmann::json::array();
  for (const analysis::HotInstruction& row : view.hottest) {
    nlohmann::json reasons = nlohmann::json::object();
    for (const auto& [reason, value] : row.reasons) reasons[reason] = number(value);
    nlohmann::json values = nlohmann::json::object();
    for (std::size_t m = 0; m < counters.metrics.size(); ++m) {
      if (counters.values[row.index][m] != 0) {
        values[counters.metrics[m]] = number(counters.values[row.index][m]);
      }
    }
    auto text_or_null = [](const std::string& text) {
      return text.empty() ? nlohmann::json(nullptr) : nlohmann::json(text);
    };
    hottest.push_back({{"offset", row.index * kInstructionBytes},
                       {"address", counters.start + row.index * kInstructionBytes},
                       {"samples", number(row.samples)},
                       {"stall_reasons", reasons},
                       {"inst_executed", number(counters.value(row.index, analysis::kExecuted))},
                       {"line", location_json(view.cuda[row.index])},
                       {"ptx", text_or_null(view.ptx[row.index])},
                       {"sass", text_or_null(view.sass[row.index])},
                       {"encoding", text_or_null(view.encoding[row.index])},
                       {"metrics", values}});
  }
  kernel["hottest"] = hottest;
  nlohmann::json lines = nlohmann::json::array();
  for (const analysis::LineTotal& line : view.lines) {
    lines.push_back({{"file", line.location.file},
                     {"line", line.location.line},
                     {"samples", number(line.samples)},
                     {"inst_executed", number(line.executed)},
                     {"instructions", line.instructions}});
  }
  kernel["lines"] = lines;
  return kernel;
}

bool any_instruction(const std::vector<analysis::KernelSource>& kernels) {
  for (const auto& view : kernels) {
    if (!view.hottest.empty()) return true;
  }
  return false;
}

bool any_sass(const std::vector<analysis::KernelSource>& kernels) {
  for (const auto& view : kernels) {
    for (const std::string& text : view.sass) {
      if (!text.empty()) return true;
    }
  }
  return false;
}

}  // namespace

std::string source_text(const std::vector<std::string>& report_names,
                        const std::vector<analysis::KernelSource>& kernels,
                        const SassSource& sass) {
  std::string out;
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    if (k > 0) out += "\n";
    out += kernel_text(report_names.at(kernels[k].report), kernels[k]);
  }
  if (any_instruction(kernels)) {
    out +=
        "\nA sample lands on the instruction a warp waits at (a load's consumer, long_scoreboard),"
        "\nnot on the instruction it waits for.\n";
    if (!any_sass(kernels)) {
      out += sass.skipped ? "SASS text not shown (--no-sass): "
             : sass.disassembler.empty()
                 ? "SASS text needs nvdisasm (not found on PATH, in $CUDA_HOME/bin or "
                   "/usr/local/cuda/bin; give --nvdisasm PATH): "
                 : "SASS text: " + sass.disassembler + " gave none: ";
      out += "instructions are shown by their PTX line (-lineinfo), else their encoding.\n";
    }
  }
  return out;
}

std::string source_json_text(const std::vector<std::string>& argv,
                             const std::vector<std::string>& report_names,
                             const std::vector<analysis::KernelSource>& kernels,
                             const SassSource& sass) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& view : kernels) list.push_back(kernel_json(report_names.at(view.report), view));
  nlohmann::json body = {
      {"kernels", list},
      {"disassembler",
       sass.disassembler.empty() ? nlohmann::json(nullptr) : nlohmann::json(sass.disassembler)}};
  return json_text(with_envelope("kprof.source/1", argv, std::move(body)));
}

}  // namespace kprof::render
