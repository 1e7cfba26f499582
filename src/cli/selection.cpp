#include "cli/selection.h"

#include <fmt/format.h>

#include <set>

#include "cli/command.h"
#include "importers/importer.h"

namespace kprof::cli {

std::vector<model::Report> load_reports(const std::vector<std::string>& paths) {
  std::vector<model::Report> reports;
  reports.reserve(paths.size());
  for (const std::string& path : paths) reports.push_back(importers::import_report(path));
  return reports;
}

std::unique_ptr<RE2> compile_user_regex(const std::string& pattern, const std::string& option) {
  RE2::Options options;
  options.set_log_errors(false);
  auto regex = std::make_unique<RE2>(pattern, options);
  if (!regex->ok()) {
    throw UsageError(fmt::format("{} \"{}\" is not a valid regular expression: {}", option,
                                 pattern, regex->error()));
  }
  return regex;
}

std::vector<size_t> select_kernels(const model::Report& report, const RE2* filter) {
  std::vector<size_t> selected;
  for (size_t i = 0; i < report.kernels.size(); ++i) {
    const model::Kernel& kernel = report.kernels[i];
    if (!filter || RE2::PartialMatch(kernel.function_name, *filter) ||
        RE2::PartialMatch(kernel.demangled_name, *filter) ||
        RE2::PartialMatch(kernel.mangled_name, *filter)) {
      selected.push_back(i);
    }
  }
  return selected;
}

void require_some_selected(const std::vector<model::Report>& reports,
                           const std::vector<std::vector<size_t>>& selected,
                           const std::string& pattern) {
  for (const auto& list : selected) {
    if (!list.empty()) return;
  }
  std::set<std::string> names;
  for (const auto& report : reports) {
    for (const auto& kernel : report.kernels) names.insert(kernel.display_name());
  }
  std::string listing;
  size_t shown = 0;
  for (const auto& name : names) {
    if (shown++ == 10) {
      listing += fmt::format("\n  … and {} more", names.size() - 10);
      break;
    }
    listing += "\n  " + name;
  }
  throw NothingSelected(fmt::format("no kernel matches --kernel \"{}\"; the report{} hold{}:{}",
                                    pattern, reports.size() == 1 ? "" : "s",
                                    reports.size() == 1 ? "s" : "", listing));
}

}  // namespace kprof::cli
