// kprof doctor: Gate 0 — whether this machine can capture GPU counters, and what to fix.
#include <algorithm>
#include <memory>

#include "capture/doctor.h"
#include "capture/ncu_locator.h"
#include "cli/command.h"
#include "render/report_json.h"
#include "render/tools_render.h"

namespace kprof::cli {
namespace {

struct DoctorOptions {
  std::string ncu;
  std::string root = "";
  bool json = false;
};

const char* status_text(capture::Check::Status status) {
  switch (status) {
    case capture::Check::Status::kOk:
      return "ok";
    case capture::Check::Status::kWarning:
      return "warning";
    case capture::Check::Status::kFailed:
      return "FAILED";
    case capture::Check::Status::kInfo:
      return "info";
  }
  return "";
}

ExitCode run_doctor(const DoctorOptions& options, Output& output) {
  capture::NcuLocation ncu = capture::locate_ncu(options.ncu);
  capture::SystemFacts facts = capture::gather_system_facts(options.root, ncu.path, ncu.searched);
  std::vector<capture::Check> checks = capture::run_doctor_checks(facts);
  bool failed = std::any_of(checks.begin(), checks.end(), [](const capture::Check& c) {
    return c.status == capture::Check::Status::kFailed;
  });
  std::vector<render::DoctorRow> rows;
  for (const auto& c : checks) rows.push_back({c.name, status_text(c.status), c.detail, c.next});
  output.stdout_text = options.json
                           ? render::json_text(render::doctor_json(rows, !failed, output.argv))
                           : render::doctor_text(rows, !failed);
  return failed ? ExitCode::kNotReady : ExitCode::kOk;
}

}  // namespace

void define_doctor(CLI::App& parent, Runner& runner) {
  auto options = std::make_shared<DoctorOptions>();
  CLI::App* command =
      parent.add_subcommand("doctor", "Gate 0: can this machine capture GPU counters?");
  command->footer(
      "Checks, in order: ncu found and its version (the toolkit's `ncu` may be a wrapper that\n"
      "runs the newest install); the NVIDIA driver and the CUDA major it supports against the\n"
      "toolkit's (a newer toolkit than the driver makes CUPTI fail to initialise); counter\n"
      "permission (RmProfilingAdminOnly: 1 and not root → ERR_NVGPUCTRPERM);\n"
      "CUDA_INJECTION64_PATH already taken by another profiler; sandboxes that block counters\n"
      "(gVisor); GPU device nodes.\n\n"
      "Exit 0 when ready (warnings allowed), 9 when a check failed.\n\n"
      "Examples:\n"
      "  kprof doctor\n"
      "  kprof doctor --root /mnt/node-root --json   # read another root filesystem's files");
  command->add_option("--ncu", options->ncu,
                      "ncu to check (default: $KPROF_NCU, PATH, /usr/local/cuda/bin/ncu)");
  command->add_option("--root", options->root,
                      "Read /proc, /sys, /dev and /usr/local/cuda under this folder instead of /");
  command->add_flag("--json", options->json, "Print JSON (schema kprof.doctor/1)");
  command->callback([&runner, options] {
    runner = [options](Output& output) { return run_doctor(*options, output); };
  });
}

}  // namespace kprof::cli
