// kprof explain LOG -- NCU ARGS...: what an ncu run did and, if it went wrong, why and what to do.
#include <algorithm>
#include <memory>

#include "capture/ncu_diagnosis.h"
#include "cli/capture_support.h"
#include "cli/command.h"
#include "common/file_bytes.h"
#include "render/report_json.h"
#include "render/tools_render.h"

namespace kprof::cli {
namespace {

struct ExplainOptions {
  std::string log_path;
  int exit_code = 0;
  std::vector<std::string> ncu_argv;
  bool json = false;
};

// The rule capture follows too: stdout carries the result (the run's summary, or the JSON that
// holds the diagnoses), stderr the diagnoses as text — in every mode, failed or not.
ExitCode run_explain(const ExplainOptions& options, Output& output) {
  FileBytes log = read_input_file(options.log_path);
  capture::NcuRun run{options.ncu_argv, log.bytes, options.exit_code};
  if (run.argv.empty()) run.argv.push_back("ncu");
  capture::NcuProgress progress = capture::parse_progress(run.output);
  std::vector<capture::Diagnosis> diagnoses = capture::diagnose(run);
  bool failed = std::any_of(diagnoses.begin(), diagnoses.end(),
                            [](const capture::Diagnosis& d) { return d.failure; });
  render::NcuRunSummary summary{options.exit_code,         progress.processes_connected,
                                progress.kernels_profiled, progress.passes_per_kernel,
                                progress.report_paths,     failed,
                                !diagnoses.empty()};
  output.stdout_text =
      options.json
          ? render::json_text(render::explain_json(summary, diagnoses_json(diagnoses), output.argv))
          : render::explain_text(summary);
  output.stderr_text = render_diagnoses(diagnoses);
  return failed ? ExitCode::kCaptureFailed : ExitCode::kOk;
}

}  // namespace

void define_explain(CLI::App& parent, Runner& runner) {
  auto options = std::make_shared<ExplainOptions>();
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
      "load_requests_failed (the manifest's diagnoses name them; README, kprof capture).\n\n"
      "Example:\n"
      "  kprof explain ncu.log --exit-code 0 -- ncu --launch-count 1 -- env FOO=1 ./app");
  command->add_option("LOG", options->log_path, "ncu's console output")->required();
  command->add_option("--exit-code", options->exit_code, "ncu's exit status")
      ->capture_default_str();
  command->add_option("NCU", options->ncu_argv, "The ncu command line, after --");
  command->add_flag("--json", options->json, "Print JSON (schema kprof.explain/1)");
  command->callback([&runner, options] {
    runner = [options](Output& output) { return run_explain(*options, output); };
  });
}

}  // namespace kprof::cli
