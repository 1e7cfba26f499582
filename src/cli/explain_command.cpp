// kprof explain LOG -- NCU ARGS...: what an ncu run did and, if it went wrong, why and what to do.
#include <memory>

#include "capture/verbs.h"
#include "cli/command.h"

namespace kprof::cli {

void define_explain(CLI::App& parent, Runner& runner) {
  auto options = std::make_shared<capture::ExplainOptions>();
  CLI::App* command = parent.add_subcommand(
      "explain", "Why an ncu run profiled nothing or failed, from its console output");
  command->footer(
      "ncu exits 0 when it profiled nothing, when a set name is unknown, when the command ran\n"
      "under `env` or a shell: read its output instead. Give the saved console output (stdout\n"
      "and stderr, e.g. `ncu … 2>&1 | tee ncu.log`), its exit status, and after `--` the ncu\n"
      "command line. The summary goes to stdout, the diagnoses (FAILED/warning, what to do)\n"
      "to stderr, as `kprof capture` prints them. Exit 7 when the run failed — a non-zero\n"
      "exit status no rule explains included —, 0 otherwise (warnings included).\n\n"
      "What kprof capture finds beyond ncu's output is not in a log and cannot be explained\n"
      "from one: timeout, interrupted, target_gone (the attached process exited), "
      "report_unreadable,\n"
      "unknown_metric (checked in the report), attach_process_not_found, attached_other_process,\n"
      "and the warm sequence's steps: warm_not_attached, warm_not_ready, warmup_requests_failed,\n"
      "load_requests_failed, and the latency guard's: guard_fired, guard_not_ready,\n"
      "guard_below_baseline (the manifest's diagnoses name them; docs/capture.md).\n\n"
      "Example:\n"
      "  kprof explain ncu.log --exit-code 0 -- ncu --launch-count 1 -- env FOO=1 ./app");
  command->add_option("LOG", options->log_path, "ncu's console output")->required();
  command->add_option("--exit-code", options->exit_code, "ncu's exit status")
      ->capture_default_str();
  command->add_option("NCU", options->ncu_argv, "The ncu command line, after --");
  command->add_flag("--json", options->json, "Print JSON (schema kprof.explain/1)");
  command->callback([&runner, options] {
    runner = [options](Output& output) {
      return answer(capture::explain(*options, output.argv), output);
    };
  });
}

}  // namespace kprof::cli
