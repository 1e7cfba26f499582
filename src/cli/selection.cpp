#include "cli/selection.h"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <set>

#include "cli/command.h"
#include "common/error.h"
#include "common/file_bytes.h"
#include "common/utf8.h"
#include "importers/importer.h"

namespace kprof::cli {

// An evidence bundle is a folder holding one capture; accept it wherever a report is expected.
static std::string report_in(const std::string& path) {
  if (is_stdin_path(path)) return path;
  std::error_code error;
  if (!std::filesystem::is_directory(path, error)) return path;
  std::vector<std::string> found;
  for (const auto& entry : std::filesystem::directory_iterator(path, error)) {
    std::string name = entry.path().filename().string();
    for (const char* suffix : {".ncu-rep", ".ncu-rep.zst", ".ncu-repz"}) {
      if (name.size() > std::strlen(suffix) &&
          name.compare(name.size() - std::strlen(suffix), std::string::npos, suffix) == 0) {
        found.push_back(entry.path().string());
      }
    }
  }
  if (found.size() != 1) {
    throw InputError(ExitCode::kInputUnreadable, path, InputPosition::none(),
                     found.empty() ? "a folder without an .ncu-rep report in it"
                                   : "a folder with several .ncu-rep reports: name one");
  }
  return found.front();
}

std::vector<model::Report> load_reports(const std::vector<std::string>& paths,
                                        const importers::ImportOptions& options) {
  std::vector<model::Report> reports;
  reports.reserve(paths.size());
  for (const std::string& path : paths)
    reports.push_back(importers::import_report(report_in(path), options));
  return reports;
}

std::unique_ptr<RE2> compile_user_regex(const std::string& pattern, const std::string& option) {
  RE2::Options options;
  options.set_log_errors(false);
  auto regex = std::make_unique<RE2>(pattern, options);
  if (!regex->ok()) {
    throw UsageError(fmt::format("{} \"{}\" is not a valid regular expression: {}", option, pattern,
                                 regex->error()));
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
    listing += "\n  " + escape_for_terminal(name);
  }
  throw NothingSelected(fmt::format("no kernel matches --kernel \"{}\"; the report{} hold{}:{}",
                                    pattern, reports.size() == 1 ? "" : "s",
                                    reports.size() == 1 ? "s" : "", listing));
}

}  // namespace kprof::cli
