#include "tracer/window_policy.h"

namespace kprof::tracer {

ControlCommand parse_control_command(std::string_view content) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!content.empty() && space(content.front())) content.remove_prefix(1);
  while (!content.empty() && space(content.back())) content.remove_suffix(1);
  if (content.empty()) return ControlCommand::kNone;
  if (content == "start") return ControlCommand::kStart;
  if (content == "stop") return ControlCommand::kStop;
  return ControlCommand::kUnknown;
}

const char* stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::kControl:
      return "control file";
    case StopReason::kDuration:
      return "duration";
    case StopReason::kCap:
      return "event cap";
    case StopReason::kExit:
      break;
  }
  return "process exit";
}

WindowDecision WindowPolicy::start(double now_s) {
  active_ = true;
  first_window_due_ = false;
  opened_at_s_ = now_s;
  return {WindowDecision::Action::kStart, StopReason::kControl};
}

WindowDecision WindowPolicy::stop(StopReason reason) {
  active_ = false;
  return {WindowDecision::Action::kStop, reason};
}

WindowDecision WindowPolicy::step(double now_s, ControlCommand command, bool cap_hit) {
  if (active_) {
    if (cap_hit) return stop(StopReason::kCap);
    if (command == ControlCommand::kStop) return stop(StopReason::kControl);
    if (duration_s_ > 0 && now_s - opened_at_s_ >= duration_s_) return stop(StopReason::kDuration);
    return {};
  }
  if (command == ControlCommand::kStart) return start(now_s);
  // "stop" before the delayed first window cancels it: the user asked for no tracing now.
  if (command == ControlCommand::kStop) first_window_due_ = false;
  if (start_ == StartMode::kNow && first_window_due_ && now_s >= delay_s_) return start(now_s);
  return {};
}

WindowDecision WindowPolicy::at_exit() {
  if (active_) return stop(StopReason::kExit);
  return {};
}

}  // namespace kprof::tracer
