#include "render/gpus_render.h"

#include <fmt/format.h>

#include "common/text.h"
#include "common/utf8.h"
#include "render/envelope.h"
#include "render/table.h"

namespace kprof::render {
namespace {

std::string gpu_cell(const std::optional<double>& value) {
  return value ? format_number(*value) : "—";
}

std::string peak(const hardware::GpuSpec& spec, const char* key) {
  auto it = spec.peak_tflops.find(key);
  return it == spec.peak_tflops.end() ? "—" : format_number(it->second);
}

nlohmann::json measured_json(const hardware::GpuSpec& s) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, c] : s.measured) {
    out[name] = {
        {"figure", c.figure}, {"unit", c.unit}, {"method", c.method}, {"repeats", c.repeats}};
  }
  return out;
}

// A measured figure in the unit people read it in: TB/s, TFLOP/s, microseconds.
std::string measured_text(const hardware::MeasuredCeiling& c) {
  if (c.unit == "byte/s") return fmt::format("{} TB/s", format_number(c.figure / 1e12));
  if (c.unit == "flop/s") return fmt::format("{} TFLOP/s", format_number(c.figure / 1e12));
  if (c.unit == "s") return fmt::format("{} us", format_number(c.figure * 1e6));
  return fmt::format("{} {}", format_number(c.figure), c.unit);
}

nlohmann::json spec_json(const hardware::GpuSpec& s) {
  auto opt = [](const std::optional<double>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  return {{"name", s.name},
          {"match", s.match},
          {"cc", s.compute_capability},
          {"sms", opt(s.sms)},
          {"boost_clock_mhz", opt(s.boost_clock_mhz)},
          {"memory_gb", opt(s.memory_gb)},
          {"memory_bandwidth_tbs", opt(s.memory_bandwidth_tbs)},
          {"l2_mb", opt(s.l2_mb)},
          {"smem_per_sm_kb", opt(s.smem_per_sm_kb)},
          {"smem_per_block_kb", opt(s.smem_per_block_kb)},
          {"registers_per_sm", opt(s.registers_per_sm)},
          {"max_warps_per_sm", opt(s.max_warps_per_sm)},
          {"max_blocks_per_sm", opt(s.max_blocks_per_sm)},
          {"peak_tflops", s.peak_tflops},
          {"sources", s.sources},
          {"measured", measured_json(s)},
          {"measured_source", s.measured_source.empty() ? nlohmann::json(nullptr)
                                                        : nlohmann::json(s.measured_source)}};
}

// One GPU in detail: what its name matches, its limits, the source of each figure group and the
// ceilings measured on it.
std::string detail_text(const hardware::GpuDatabase& db, const hardware::GpuSpec& s) {
  // Each string may be a user file's (--gpus, a calibration): escaped on its own, a line break
  // included, so none prints as a line of kprof's.
  auto shown = [](const std::string& text) { return escape_for_terminal(text); };
  std::string out = fmt::format("\n{}: matches device names by /{}/ (whole words, case aside)\n",
                                shown(s.name), shown(s.match));
  out += fmt::format(
      "  shared memory {} KB/SM, {} KB/block; {} registers/SM; {} warps and {} "
      "blocks per SM\n",
      gpu_cell(s.smem_per_sm_kb), gpu_cell(s.smem_per_block_kb), gpu_cell(s.registers_per_sm),
      gpu_cell(s.max_warps_per_sm), gpu_cell(s.max_blocks_per_sm));
  for (const auto& [group, ids] : s.sources) {
    out += fmt::format("  {} figures: {}\n", shown(group), shown(ids));
  }
  if (!s.measured.empty()) {
    out += fmt::format("  measured ({}):\n", shown(s.measured_source));
    for (const auto& [name, c] : s.measured) {
      out += fmt::format("    {}: {} (best of {}; {})\n", shown(name), measured_text(c), c.repeats,
                         shown(c.method));
    }
  }
  out += "sources:\n";
  for (const auto& [id, citation] : db.sources) {
    bool cited = false;
    for (const auto& [group, ids] : s.sources) cited |= ids.find(id) != std::string::npos;
    if (cited) out += fmt::format("  [{}] {}\n", shown(id), shown(citation));
  }
  return out;
}

}  // namespace

std::string gpus_text(const hardware::GpuDatabase& db,
                      const std::vector<const hardware::GpuSpec*>& shown) {
  TextTable table({{"gpu"},
                   {"cc"},
                   {"SMs", TextTable::Align::kRight},
                   {"mem GB", TextTable::Align::kRight},
                   {"TB/s", TextTable::Align::kRight},
                   {"L2 MB", TextTable::Align::kRight},
                   {"FP64", TextTable::Align::kRight},
                   {"FP32", TextTable::Align::kRight},
                   {"TF32", TextTable::Align::kRight},
                   {"BF16", TextTable::Align::kRight},
                   {"FP8", TextTable::Align::kRight},
                   {"FP4", TextTable::Align::kRight},
                   {"INT8", TextTable::Align::kRight}});
  for (const auto* s : shown) {
    table.add_row({s->name, s->compute_capability, gpu_cell(s->sms), gpu_cell(s->memory_gb),
                   gpu_cell(s->memory_bandwidth_tbs), gpu_cell(s->l2_mb), peak(*s, "fp64"),
                   peak(*s, "fp32"), peak(*s, "tf32"), peak(*s, "bf16"), peak(*s, "fp8"),
                   peak(*s, "fp4"), peak(*s, "int8")});
  }
  std::string out = table.to_string();
  out +=
      "Dense peaks in TFLOP/s (INT8: TOPS), no 2:4 sparsity; memory TB/s = 1e12 B/s. Database: " +
      escape_for_terminal(db.origin) + ".\n";
  if (shown.size() == 1) out += detail_text(db, *shown.front());
  return out;
}

nlohmann::json gpus_json(const hardware::GpuDatabase& db,
                         const std::vector<const hardware::GpuSpec*>& shown,
                         const std::vector<std::string>& argv) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto* spec : shown) list.push_back(spec_json(*spec));
  return with_envelope("kprof.gpus/1", argv,
                       {{"origin", db.origin}, {"sources", db.sources}, {"gpus", list}});
}

}  // namespace kprof::render
