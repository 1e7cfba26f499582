// Runs a program with an argv (no shell) and captures its exit code and output, for CLI tests.
#pragma once

#include <string>
#include <vector>

namespace kprof::testing {

struct ProcessResult {
  int exit_code = -1;  // -1 when it did not exit normally
  std::string out;
  std::string err;
};

ProcessResult run_process(const std::vector<std::string>& argv);

// Same, with `input` written to the program's stdin through a pipe (closed after it: the
// program reads end of file there), as `cat FILE | program` would.
ProcessResult run_process_with_input(const std::vector<std::string>& argv,
                                     const std::string& input);

}  // namespace kprof::testing
