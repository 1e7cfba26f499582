// What a pipeline answers: the result as kprof prints it (a table, JSON or CSV), the notes for
// standard error (the readers' warnings, what a step noticed), and the exit code. The CLI prints
// it; every other front end takes the same answer, so a number never differs between them.
#pragma once

#include <string>
#include <vector>

#include "common/error.h"

namespace kprof::pipeline {

struct Answer {
  std::string out;
  std::string notes;
  ExitCode code = ExitCode::kOk;
};

}  // namespace kprof::pipeline
