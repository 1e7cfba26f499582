// kprof gpus [NAME]: the hardware database (datasheet figures with their sources).
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "common/text.h"
#include "hardware/gpu_specs.h"
#include "render/table.h"

namespace kprof::cli {
namespace {

struct GpusOptions {
  std::string name;
  std::string gpus_path;
  bool json = false;
};

std::string cell(const std::optional<double>& value) { return value ? format_number(*value) : "—"; }

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

ExitCode run_gpus(const GpusOptions& options, Output& output) {
  hardware::GpuDatabase db = hardware::load_gpu_database(options.gpus_path);
  std::vector<const hardware::GpuSpec*> shown;
  if (options.name.empty()) {
    for (const auto& spec : db.gpus) shown.push_back(&spec);
  } else if (const hardware::GpuSpec* spec = db.find_by_name(options.name)) {
    shown.push_back(spec);
  } else {
    std::string names;
    for (const auto& spec : db.gpus) names += "\n  " + spec.name;
    throw NothingSelected(
        fmt::format("no GPU named \"{}\" in the database; it has:{}", options.name, names));
  }
  if (options.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto* spec : shown) list.push_back(spec_json(*spec));
    output.stdout_text = nlohmann::json{{"schema", "kprof.gpus/1"},
                                        {"origin", db.origin},
                                        {"sources", db.sources},
                                        {"gpus", list}}
                             .dump(1) +
                         "\n";
    return ExitCode::kOk;
  }
  using render::TextTable;
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
    table.add_row({s->name, s->compute_capability, cell(s->sms), cell(s->memory_gb),
                   cell(s->memory_bandwidth_tbs), cell(s->l2_mb), peak(*s, "fp64"),
                   peak(*s, "fp32"), peak(*s, "tf32"), peak(*s, "bf16"), peak(*s, "fp8"),
                   peak(*s, "fp4"), peak(*s, "int8")});
  }
  std::string out = table.to_string();
  out +=
      "Dense peaks in TFLOP/s (INT8: TOPS), no 2:4 sparsity; memory TB/s = 1e12 B/s. Database: " +
      db.origin + ".\n";
  if (shown.size() == 1) {
    const hardware::GpuSpec& s = *shown.front();
    out += fmt::format("\n{}: matches device names by /{}/\n", s.name, s.match);
    out += fmt::format(
        "  shared memory {} KB/SM, {} KB/block; {} registers/SM; {} warps and {} "
        "blocks per SM\n",
        cell(s.smem_per_sm_kb), cell(s.smem_per_block_kb), cell(s.registers_per_sm),
        cell(s.max_warps_per_sm), cell(s.max_blocks_per_sm));
    for (const auto& [group, ids] : s.sources) {
      out += fmt::format("  {} figures: {}\n", group, ids);
    }
    if (!s.measured.empty()) {
      out += fmt::format("  measured ({}):\n", s.measured_source);
      for (const auto& [name, c] : s.measured) {
        out += fmt::format("    {}: {} (best of {}; {})\n", name, measured_text(c), c.repeats,
                           c.method);
      }
    }
    out += "sources:\n";
    for (const auto& [id, citation] : db.sources) {
      bool cited = false;
      for (const auto& [group, ids] : s.sources) cited |= ids.find(id) != std::string::npos;
      if (cited) out += fmt::format("  [{}] {}\n", id, citation);
    }
  }
  output.stdout_text = std::move(out);
  return ExitCode::kOk;
}

}  // namespace

void define_gpus(CLI::App& parent, Runner& runner) {
  auto options = std::make_shared<GpusOptions>();
  CLI::App* command = parent.add_subcommand(
      "gpus", "The hardware database: datasheet peaks, memory, limits, with sources");
  command->footer(
      "Lists every GPU kprof knows, or one in detail with the source of each figure group.\n"
      "Analyses prefer the peaks a report itself carries (ncu's peak_sustained metrics) and say\n"
      "when they used this database instead.\n\n"
      "Examples:\n"
      "  kprof gpus\n"
      "  kprof gpus B300\n"
      "  kprof gpus --gpus my_gpus.json --json    # with a file that overrides or adds GPUs\n"
      "  kprof gpus --gpus h200_calibration.json H200   # with ceilings measured on that GPU");
  command->add_option("NAME", options->name, "Show one GPU (exact or partial name)");
  command->add_option("--gpus", options->gpus_path,
                      "A GPU database file (same shape as data/gpus.json) overriding or adding "
                      "entries by name, or a calibration file (kprof.calibration/1) adding "
                      "measured ceilings");
  command->add_flag("--json", options->json, "Print JSON instead");
  command->callback([&runner, options] {
    runner = [options](Output& output) { return run_gpus(*options, output); };
  });
}

}  // namespace kprof::cli
