// Runs a program with an argv (no shell) and captures its exit code and output, for CLI tests.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace kprof::testing {

struct ProcessResult {
  int exit_code = -1;  // -1 when it did not exit normally
  std::string out;
  std::string err;
  long max_rss_kib = 0;  // the program's peak resident memory (wait4's ru_maxrss)
};

ProcessResult run_process(const std::vector<std::string>& argv);

// Same, with `input` written to the program's stdin through a pipe (closed after it: the
// program reads end of file there), as `cat FILE | program` would.
ProcessResult run_process_with_input(const std::vector<std::string>& argv,
                                     const std::string& input);

// Same, sending `signal` to the program once `when()` turns true (polled every 50 ms), as a
// closed terminal sends SIGHUP; SIGKILL after `limit_s` so a program that ignores it cannot hang
// the test (exit_code -1 then).
ProcessResult run_process_signalled(const std::vector<std::string>& argv,
                                    const std::function<bool()>& when, int signal,
                                    double limit_s = 60);

}  // namespace kprof::testing
