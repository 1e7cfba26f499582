#include "pipeline/reports.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <set>

#include "common/child_process.h"
#include "common/error.h"
#include "common/file_bytes.h"
#include "common/ncu_locator.h"
#include "common/opened_inputs.h"
#include "common/text.h"
#include "common/utf8.h"
#include "importers/importer.h"

namespace kprof::pipeline {

std::string bundle_report(const std::string& folder, const std::vector<std::string>& names) {
  std::vector<std::string> found;
  for (const std::string& name : names) {
    for (const char* suffix : {".ncu-rep", ".ncu-rep.zst", ".ncu-repz"}) {
      if (name.size() > std::strlen(suffix) &&
          name.compare(name.size() - std::strlen(suffix), std::string::npos, suffix) == 0) {
        found.push_back((std::filesystem::path(folder) / name).string());
      }
    }
  }
  if (found.size() != 1) {
    throw InputError(ExitCode::kInputUnreadable, folder, InputPosition::none(),
                     found.empty() ? "a folder without an .ncu-rep report in it"
                                   : "a folder with several .ncu-rep reports: name one");
  }
  return found.front();
}

// An evidence bundle is a folder holding one capture; accept it wherever a report is expected.
// Where the request's files were opened before it ran (kprof mcp), its report was found then:
// nothing is looked up by name here.
std::string report_in(const std::string& path) {
  if (const OpenedInputs* inputs = OpenedInputs::current()) return inputs->report_of(path);
  if (is_stdin_path(path)) return path;
  std::error_code error;
  if (!std::filesystem::is_directory(path, error)) return path;
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(path, error)) {
    names.push_back(entry.path().filename().string());
  }
  return bundle_report(path, names);
}

namespace {

// Whether two paths name the same file: by device and inode where both exist, else by their
// absolute, normalised spelling (an output not written yet).
bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {};
  struct stat sb {};
  if (::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0) {
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  }
  std::error_code error;
  std::filesystem::path pa = std::filesystem::weakly_canonical(a, error);
  if (error) pa = std::filesystem::absolute(a, error).lexically_normal();
  std::filesystem::path pb = std::filesystem::weakly_canonical(b, error);
  if (error) pb = std::filesystem::absolute(b, error).lexically_normal();
  return pa == pb;
}

}  // namespace

void refuse_output_collisions(const std::vector<CommandFile>& outputs,
                              const std::vector<CommandFile>& inputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const CommandFile& output = outputs[i];
    if (output.path.empty()) continue;
    for (size_t j = 0; j < i; ++j) {
      const CommandFile& earlier = outputs[j];
      if (earlier.path.empty()) continue;
      const bool both_stdout = output.path == "-" && earlier.path == "-";
      if (both_stdout ||
          (output.path != "-" && earlier.path != "-" && same_file(output.path, earlier.path))) {
        throw UsageError(fmt::format("{} {} and {} {} are one file: give each output its own",
                                     earlier.option, escape_for_terminal(earlier.path),
                                     output.option, escape_for_terminal(output.path)));
      }
    }
    if (output.path == "-") continue;
    for (const CommandFile& input : inputs) {
      if (input.path.empty() || is_stdin_path(input.path)) continue;
      std::string file = input.path;
      std::error_code error;
      if (std::filesystem::is_directory(file, error)) {
        // A bundle folder: its capture is the input (and the folder itself no file to write).
        try {
          file = report_in(file);
        } catch (const InputError&) {
          continue;  // read (and refused) as an input later
        }
      }
      if (same_file(output.path, file) || same_file(output.path, input.path)) {
        throw UsageError(
            fmt::format("{} {}: that is an input of this command ({} {}); write "
                        "elsewhere",
                        output.option, escape_for_terminal(output.path), input.option,
                        escape_for_terminal(input.path)));
      }
    }
  }
}

// The report as ncu itself exports it (`ncu --import PATH --csv --page raw`), read by the CSV
// importer: for a format version kprof's schema does not cover, ncu's own reader is the
// reference. The CSV is labelled with the report's path and how it was read.
static model::Report exported_by_ncu(const model::Report& partial,
                                     const importers::ImportOptions& options) {
  const std::string& path = partial.path;
  NcuLocation ncu = locate_ncu("");
  if (ncu.path.empty()) {
    throw InputError(ExitCode::kNotReady, path, InputPosition::none(),
                     fmt::format("--fallback-ncu: no ncu found ({}) to export this report: {}",
                                 ncu.searched, partial.format_note));
  }
  if (is_stdin_path(path)) {
    throw InputError(ExitCode::kInputInvalid, path, InputPosition::none(),
                     "--fallback-ncu needs the report as a file: ncu cannot read stdin");
  }
  ChildRequest request;
  // A relative path that starts with '-' would be read by ncu as an option: "./-x.ncu-rep".
  const std::string import_path = path.rfind('-', 0) == 0 ? "./" + path : path;
  request.argv = {ncu.path, "--import", import_path, "--csv", "--page", "raw"};
  request.timeout = std::chrono::minutes(30);
  ChildResult result = run_child(request);
  if (!result.started || result.exit_code != 0 || result.out.empty()) {
    std::string why = !result.started         ? result.start_error
                      : result.exit_code != 0 ? fmt::format("exit status {}", result.exit_code)
                                              : std::string("no output");
    std::string said = result.err.substr(0, result.err.find('\n'));
    throw InputError(ExitCode::kInputInvalid, path, InputPosition::none(),
                     fmt::format("--fallback-ncu: {} failed ({}){}", quoted_command(request.argv),
                                 why, said.empty() ? "" : ": " + said));
  }
  model::Report report =
      importers::import_bytes(path + " (ncu --import … --csv --page raw)", result.out, options);
  report.format_note = fmt::format("read through {}'s own export ({}): {}", ncu.path,
                                   quoted_command(request.argv), partial.format_note);
  report.format_version = partial.format_version;
  return report;
}

std::vector<model::Report> load_reports(const std::vector<std::string>& paths,
                                        const importers::ImportOptions& options,
                                        const ReadPolicy& policy) {
  std::vector<model::Report> reports;
  reports.reserve(paths.size());
  for (const std::string& path : paths) {
    model::Report report = importers::import_report(report_in(path), options);
    if (policy.fallback_ncu && !report.format_note.empty() &&
        report.format == model::SourceFormat::kNcuRep) {
      report = exported_by_ncu(report, options);
    }
    reports.push_back(std::move(report));
  }
  return reports;
}

std::string reading_notes(const std::vector<model::Report>& reports) {
  std::string notes;
  for (const model::Report& report : reports) {
    if (!report.reading_note.empty()) {
      notes += escape_for_terminal(fmt::format("kprof: {}: {}", report.path, report.reading_note)) +
               "\n";
    }
    if (report.format_note.empty()) continue;
    std::string line = fmt::format("kprof: {}: {}", report.path, report.format_note);
    if (report.format == model::SourceFormat::kNcuRep) {
      if (NcuLocation ncu = locate_ncu(""); !ncu.path.empty()) {
        line += fmt::format(
            "; ncu ({}) reads it whole: `ncu --import {} --csv --page raw`, or rerun with "
            "--fallback-ncu to have kprof read that export",
            ncu.path, report.path);
      } else {
        line += "; with an ncu of that version on PATH, --fallback-ncu reads ncu's own export";
      }
    }
    notes += escape_for_terminal(line) + "\n";
  }
  return notes;
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

}  // namespace kprof::pipeline
