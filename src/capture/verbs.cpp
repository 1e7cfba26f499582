#include "capture/verbs.h"

#include <fmt/format.h>

#include "capture/attach_route.h"
#include "capture/capture_render.h"
#include "capture/tools_render.h"
#include "common/file_bytes.h"
#include "common/redact.h"
#include "pipeline/plan_trace.h"
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

Check attach_route_check(int pid, const std::string& ncu_version_line,
                         const std::string& proc_root) {
  std::optional<RouteTarget> target = inspect_process(pid, proc_root);
  if (!target) {
    return {
        "attach route", Check::Status::kWarning,
        fmt::format("process {}: not found on this machine (or not readable by this user)", pid),
        "give the id of a running process (the engine's, not its launcher's)"};
  }
  RouteChoice route = choose_attach_route(parse_ncu_version(ncu_version_line), *target);
  return {"attach route",
          route.route == AttachRoute::kSisterOnly ? Check::Status::kWarning : Check::Status::kInfo,
          fmt::format("process {}: {} — {}", pid, route_title(route.route), route.why), route.next};
}

pipeline::Answer doctor(const DoctorOptions& options, const std::vector<std::string>& argv) {
  DoctorReport report = check_this_machine(options.ncu, options.root);
  if (options.attach_process) {
    report.checks.push_back(
        attach_route_check(*options.attach_process, report.ncu_version, options.root + "/proc"));
  }
  pipeline::Answer answer;
  answer.out = options.json ? render::json_text(doctor_json(report, argv)) : doctor_text(report);
  answer.code = report.ready() ? ExitCode::kOk : ExitCode::kNotReady;
  return answer;
}

CapturePlan make_plan(const PlanOptions& options, const std::vector<std::string>& argv) {
  if (options.trace.empty())
    throw UsageError(
        "a plan needs --trace: a trace of the same program (kprof trace, or the "
        "PyTorch profiler) says which launches the filter matches and how long");
  PlanLimits limits = options.limits;
  if (options.memory_fraction) {
    if (!limits.device_gb)
      throw UsageError("--gpu-memory-utilization needs --device-memory-gb (the device's size)");
    if (!limits.resident_gb) {
      limits.resident_gb = *options.memory_fraction * *limits.device_gb;
      if (limits.memory_from.empty())
        limits.memory_from = fmt::format("--gpu-memory-utilization {} of {} GB",
                                         *options.memory_fraction, *limits.device_gb);
    }
  }
  if (limits.resident_gb && limits.memory_from.empty()) limits.memory_from = "--resident-gb";
  if (limits.resident_gb && limits.device_gb && *limits.resident_gb > *limits.device_gb)
    throw UsageError(fmt::format("resident memory {} GB is more than the device's {} GB",
                                 *limits.resident_gb, *limits.device_gb));
  pipeline::PlanTrace trace =
      pipeline::read_plan_trace(options.trace, argv, kernel_filter(options.capture),
                                options.capture.kernel_name_base, options.step_regex);
  if (trace.launches.empty()) {
    std::string names;
    for (const std::string& name : trace.closest_names) names += (names.empty() ? "" : ", ") + name;
    throw NothingSelected(fmt::format(
        "the kernel filter \"{}\" matches none of the {} kernel launches in {}'s steps{}",
        options.capture.kernel_regex, trace.kernel_launches, options.trace,
        names.empty() ? "" : "; the most launched: " + names));
  }
  return plan_capture(trace, options.capture, limits);
}

pipeline::Answer plan(const PlanOptions& options, const std::vector<std::string>& argv) {
  CapturePlan planned = make_plan(options, argv);
  pipeline::Answer answer;
  answer.out = options.json ? render::json_text(plan_json(planned, argv)) : plan_text(planned);
  answer.notes = planned.trace.warnings;
  answer.code = planned.over && !planned.chosen ? ExitCode::kPlanOverLimit : ExitCode::kOk;
  return answer;
}

}  // namespace kprof::capture
