#include "capture/verbs.h"

#include "capture/capture_render.h"
#include "capture/tools_render.h"
#include "common/file_bytes.h"
#include "common/redact.h"
#include "render/report_json.h"

namespace kprof::capture {

pipeline::Answer explain(const ExplainOptions& options, const std::vector<std::string>& argv) {
  FileBytes log = read_input_file(options.log_path);
  // The ncu command line and its console (the profiled program's own output) are where a key
  // enters explain's answer: redacted as they are read.
  ExplainedRun run = explain_ncu_run(redact_secrets(options.ncu_argv), redact_secrets(log.bytes),
                                     options.exit_code);
  pipeline::Answer answer;
  answer.out = options.json ? render::json_text(explain_json(run, argv)) : explain_text(run);
  answer.notes = diagnoses_text(run.diagnoses);
  answer.code = run.failed() ? ExitCode::kCaptureFailed : ExitCode::kOk;
  return answer;
}

pipeline::Answer doctor(const DoctorOptions& options, const std::vector<std::string>& argv) {
  DoctorReport report = check_this_machine(options.ncu, options.root);
  pipeline::Answer answer;
  answer.out = options.json ? render::json_text(doctor_json(report, argv)) : doctor_text(report);
  answer.code = report.ready() ? ExitCode::kOk : ExitCode::kNotReady;
  return answer;
}

}  // namespace kprof::capture
