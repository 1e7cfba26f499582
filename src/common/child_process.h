// Running ncu (or any tool kprof drives) from an argv — never through a shell — in its own
// process group, so that a timeout or Ctrl-C can stop it and everything it started at once.
// Output arrives line by line while the process runs (for progress), and whole at the end.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kprof {

struct ChildRequest {
  std::vector<std::string> argv;                         // argv[0] is a path or a PATH name
  std::vector<std::pair<std::string, std::string>> env;  // added to (or replacing in) ours
  std::optional<std::chrono::milliseconds> timeout;      // wall clock, then the group is stopped
  std::chrono::milliseconds grace{5000};                 // after SIGINT, before SIGKILL
  // Called with each complete line (without '\n') of stdout or stderr as it arrives; returning
  // true asks for the process group to be sent SIGINT (used to detach an ncu attach client).
  std::function<bool(const std::string& line, bool from_stderr)> on_line;
  // Called about every 100 ms while the child runs; returning true asks for SIGINT as above
  // (used to detach once the report file is on disk).
  std::function<bool()> on_tick;
  // Keep running when kprof is interrupted (the cleanup after an interrupt must finish).
  bool survive_interrupt = false;
  // false: the output only reaches on_line, ChildResult's out/err/combined stay empty (a traced
  // server may print for hours).
  bool keep_output = true;
};

struct ChildResult {
  bool started = false;  // false: could not be executed (start_error says why)
  std::string start_error;
  int exit_code = -1;           // the exit status, or 128 + signal when killed by a signal
  int signal = 0;               // the signal that ended it, 0 when it exited
  bool timed_out = false;       // stopped by kprof because the timeout passed
  bool interrupted = false;     // stopped because kprof got SIGINT, SIGTERM, SIGHUP or SIGQUIT
  bool stop_requested = false;  // stopped by kprof because on_line asked for it
  std::string out, err;         // everything it printed
  std::string combined;         // stdout and stderr interleaved in the order they were read
  std::chrono::milliseconds elapsed{0};
};

// Blocks until the child exits. While it runs, kprof's own SIGINT, SIGTERM, SIGHUP (a closed
// terminal, a dropped ssh) and SIGQUIT are caught and forwarded to the child's process group as
// SIGINT (then SIGKILL after the grace period).
ChildResult run_child(const ChildRequest& request);

// Searches PATH like execvp would; empty when not found or not executable.
std::string find_executable(const std::string& name);

// True once kprof has received one of those signals during run_child (for callers that must
// mark their work incomplete).
bool interrupt_received();

// For work made of many child processes (a Kubernetes operation): from now on those signals
// only set the flag interrupt_received() reads — also between children — so the caller
// can clean up before it exits; run_child stops its child at once when the flag is set.
void keep_interrupts();

}  // namespace kprof
