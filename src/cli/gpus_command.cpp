// kprof gpus [NAME]: the hardware database (datasheet figures with their sources).
#include <fmt/format.h>

#include <memory>

#include "cli/command.h"
#include "hardware/gpu_specs.h"
#include "render/gpus_render.h"
#include "render/report_json.h"

namespace kprof::cli {
namespace {

struct GpusOptions {
  std::string name;
  std::string gpus_path;
  bool json = false;
};

ExitCode run_gpus(const GpusOptions& options, Output& output) {
  hardware::GpuDatabase db = hardware::load_gpu_database(options.gpus_path);
  std::vector<const hardware::GpuSpec*> shown;
  if (options.name.empty()) {
    for (const auto& spec : db.gpus) shown.push_back(&spec);
  } else if (std::vector<const hardware::GpuSpec*> named = db.find_named(options.name);
             !named.empty()) {
    shown = std::move(named);
  } else {
    std::string names;
    for (const auto& spec : db.gpus) names += "\n  " + spec.name;
    throw NothingSelected(
        fmt::format("no GPU named \"{}\" in the database; it has:{}", options.name, names));
  }
  output.stdout_text = options.json ? render::json_text(render::gpus_json(db, shown, output.argv))
                                    : render::gpus_text(db, shown);
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
      "  kprof gpus \"NVIDIA GH200 480GB\"          # the entry analyze uses for that device\n"
      "  kprof gpus --gpus my_gpus.json --json    # with a file that overrides or adds GPUs\n"
      "  kprof gpus --gpus h200_calibration.json H200   # with ceilings measured on that GPU");
  command->add_option("NAME", options->name,
                      "Show one GPU: its name, a device name as a report records it (the entry "
                      "analyze would use), or words of names (all the GPUs they name)");
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
