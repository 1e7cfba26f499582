// The inspect pipeline: everything a report recorded — session, devices, and any metric of any
// kernel, selected by regex — as text or as the model's JSON (kprof.report/1), streamed.
#pragma once

#include <string>
#include <vector>

#include "pipeline/answer.h"

namespace kprof::pipeline {

struct InspectOptions {
  std::vector<std::string> paths;
  std::string kernel_regex;
  std::string metrics_regex;
  bool session = false;
  bool rules = false;
  bool instances = false;
  bool json = false;
  bool text_too = false;      // with json: the text answer too (Answer::text), from one run
  bool fallback_ncu = false;  // a report of an unknown format version: ncu's export (ReadPolicy)
};

Answer inspect(const InspectOptions& options, const std::vector<std::string>& argv);

}  // namespace kprof::pipeline
