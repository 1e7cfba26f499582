// kprof doctor: Gate 0 — whether this machine can capture GPU counters, and what to fix.
#include <memory>

#include "capture/verbs.h"
#include "cli/command.h"

namespace kprof::cli {

void define_doctor(CLI::App& parent, Runner& runner) {
  auto options = std::make_shared<capture::DoctorOptions>();
  CLI::App* command =
      parent.add_subcommand("doctor", "Gate 0: can this machine capture GPU counters?");
  command->footer(
      "Checks, in order: ncu found and its version (the toolkit's `ncu` may be a wrapper that\n"
      "runs the newest install); the NVIDIA driver and the CUDA major it supports against the\n"
      "toolkit's (a newer toolkit than the driver makes CUPTI fail to initialise); counter\n"
      "permission (RmProfilingAdminOnly: 1 and not root → ERR_NVGPUCTRPERM);\n"
      "CUDA_INJECTION64_PATH already taken by another profiler; sandboxes that block counters\n"
      "(gVisor); GPU device nodes. With --attach-process PID, the route to that process:\n"
      "launch/attach by TCP (started under `ncu --mode launch`), in-process library (it loaded\n"
      "ncu's injection library, and ncu is 2026.2.1+), or sister only (a warning, not a "
      "failure).\n\n"
      "Exit 0 when ready (warnings allowed), 9 when a check failed.\n\n"
      "Examples:\n"
      "  kprof doctor\n"
      "  kprof doctor --attach-process 4242          # the route to a running engine\n"
      "  kprof doctor --root /mnt/node-root --json   # read another root filesystem's files");
  command->add_option("--ncu", options->ncu,
                      "ncu to check (default: $KPROF_NCU, PATH, /usr/local/cuda/bin/ncu)");
  command->add_option("--root", options->root,
                      "Read /proc, /sys, /dev and /usr/local/cuda under this folder instead of /");
  command->add_option("--attach-process", options->attach_process,
                      "A running process's id: say which route ncu can reach it by (launch/attach "
                      "by TCP, in-process library with ncu 2026.2.1+, or sister only)");
  command->add_flag("--json", options->json, "Print JSON (schema kprof.doctor/1)");
  command->callback([&runner, options] {
    runner = [options](Output& output) {
      return answer(capture::doctor(*options, output.argv), output);
    };
  });
}

}  // namespace kprof::cli
