// When a trace window opens and closes: the start mode and delay, the duration, the control file's
// commands, the event cap and the process's exit. Pure: the control thread feeds it the time and
// what it read, and does what it answers.
#pragma once

#include <string_view>

#include "tracer/tracer_config.h"

namespace kprof::tracer {

enum class ControlCommand { kNone, kStart, kStop, kUnknown };

// The control file's content: "start" or "stop", surrounding white space ignored.
ControlCommand parse_control_command(std::string_view content);

enum class StopReason { kControl, kDuration, kCap, kExit };
const char* stop_reason_name(StopReason reason);

struct WindowDecision {
  enum class Action { kNothing, kStart, kStop } action = Action::kNothing;
  StopReason reason = StopReason::kControl;  // for kStop
};

class WindowPolicy {
 public:
  WindowPolicy(StartMode start, double delay_s, double duration_s)
      : start_(start), delay_s_(delay_s), duration_s_(duration_s) {}

  // now_s: seconds since the tracer started; command: what the control file newly says;
  // cap_hit: the open window reached KPROF_TRACE_MAX_EVENTS.
  WindowDecision step(double now_s, ControlCommand command, bool cap_hit);
  WindowDecision at_exit();
  // The window opened by the last kStart really began at now_s (after its buffers were ready):
  // its duration counts from here.
  void opened_at(double now_s) { opened_at_s_ = now_s; }
  bool active() const { return active_; }

 private:
  WindowDecision start(double now_s);
  WindowDecision stop(StopReason reason);

  StartMode start_;
  double delay_s_, duration_s_;
  bool active_ = false;
  bool first_window_due_ = true;  // the delayed first window (start mode "now") not opened yet
  double opened_at_s_ = 0;
};

}  // namespace kprof::tracer
