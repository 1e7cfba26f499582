// The diff pipeline: two captures (or two runs of a findings database) compared kernel by kernel
// against threshold and measured noise, or two traces per kernel, stage and step by Welch's
// t-test; `kprof diff`, whose exit code gates CI.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "analysis/capture_diff.h"
#include "pipeline/answer.h"

namespace kprof::pipeline {

struct DiffOptions {
  std::string baseline, candidate;
  std::string db_path;  // with --db, BASELINE and CANDIDATE are run ids
  analysis::DiffOptions diff;
  // Captures: --pair BASELINE=CANDIDATE as given, one a use; parsed into diff.pairs by diff().
  std::vector<std::string> pairs;
  bool no_auto_pair = false;  // --no-auto-pair: diff.auto_pair off
  bool json = false;
  bool text_too = false;  // with json: the text answer too (Answer::text), from one run
  bool no_fail = false;
  size_t name_width = 48;
  double alpha = 0.01;     // traces: significance level of Welch's t-test
  std::string step_regex;  // traces: as kprof budget --step
  size_t top = 20;         // traces: kernels listed
  // traces: a `kprof report --trace --json` answer whose fix list is checked against them, and
  // the findings database its outcomes are stored in ("" for neither).
  std::string predicted_path;
  std::string outcomes_db;
  std::string db_schema =
      "kprof";  // --db/--outcomes-db on PostgreSQL: the schema of kprof's tables
};

// The answer's code is kRegression (6) when something regressed, else kCoverageLow (13) when the
// compared kernels cover less than diff.min_coverage_pct of a side's GPU time (both 0 with
// no_fail); UsageError for a capture against a trace, a run id that is none, a --pair that is
// not BASELINE=CANDIDATE or is ambiguous; NothingSelected when the captures have no kernel in
// common or a --pair pattern selects no kernel it could pair.
Answer diff(const DiffOptions& options, const std::vector<std::string>& argv);

}  // namespace kprof::pipeline
