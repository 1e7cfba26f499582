#include "capture/verbs.h"

#include "capture/capture_render.h"
#include "capture/tools_render.h"
#include "common/file_bytes.h"
#include "render/report_json.h"

namespace kprof::capture {

pipeline::Answer explain(const ExplainOptions& options, const std::vector<std::string>& argv) {
  FileBytes log = read_input_file(options.log_path);
  ExplainedRun run = explain_ncu_run(options.ncu_argv, std::move(log.bytes), options.exit_code);
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
