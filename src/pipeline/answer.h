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
  // With json and text_too in the request (kprof mcp, which answers both): the text answer of
  // the same run, out being the JSON.
  std::string text;
};

// Puts the answer in the format asked for; with text_too beside json, the text too.
template <typename Json, typename Text>
void put_answer(Answer& answer, bool json, bool text_too, Json&& json_out, Text&& text_out) {
  if (json) {
    answer.out = json_out();
    if (text_too) answer.text = text_out();
  } else {
    answer.out = text_out();
  }
}

}  // namespace kprof::pipeline
