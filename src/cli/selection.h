// Loading the reports named on the command line and choosing kernels by name.
#pragma once

#include <re2/re2.h>

#include <memory>
#include <string>
#include <vector>

#include "importers/importer.h"
#include "model/report.h"

namespace kprof::cli {

// All reports are read before anything is printed; the first bad file stops the command.
std::vector<model::Report> load_reports(const std::vector<std::string>& paths,
                                        const importers::ImportOptions& options = {});

// What verdicts, summaries and diffs read: aggregates, never per-instance values.
inline importers::ImportOptions for_analysis() {
  importers::ImportOptions options;
  options.instances = false;
  return options;
}

// A compiled user regex (RE2 syntax, partial match); throws UsageError when it does not compile.
std::unique_ptr<RE2> compile_user_regex(const std::string& pattern, const std::string& option);

// Kernels whose function, demangled or mangled name matches (all when filter is null).
std::vector<size_t> select_kernels(const model::Report& report, const RE2* filter);

// Throws NothingSelected listing some available kernel names when no report has a match.
void require_some_selected(const std::vector<model::Report>& reports,
                           const std::vector<std::vector<size_t>>& selected,
                           const std::string& pattern);

}  // namespace kprof::cli
