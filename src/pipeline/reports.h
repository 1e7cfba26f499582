// Loading the reports a request names and choosing kernels by name: what every pipeline over
// captures (analyze, inspect, diff, report) starts with.
#pragma once

#include <re2/re2.h>

#include <memory>
#include <string>
#include <vector>

#include "importers/importer.h"
#include "model/report.h"

namespace kprof::pipeline {

// What to do with a report whose format version kprof does not know (model::Report::
// format_note): read it as far as the known schema goes (the default), or — fallback_ncu, the
// CLI's --fallback-ncu — have ncu export it (`ncu --import REPORT --csv --page raw`, run from an
// argv, never a shell) and read that CSV instead. ncu is found as capture finds it ($KPROF_NCU,
// PATH, /usr/local/cuda/bin/ncu; common/ncu_locator).
struct ReadPolicy {
  bool fallback_ncu = false;
};

// The report a bundle folder holds, of the names of its entries: its one .ncu-rep (.ncu-rep.zst,
// .ncu-repz), as `folder / name`; InputError (kInputUnreadable) naming the folder when it holds
// none or several. load_reports reads a folder as this report; kprof mcp opens it beneath its
// root first.
std::string bundle_report(const std::string& folder, const std::vector<std::string>& names);

// The report a path names: itself, or the one .ncu-rep report of an evidence bundle's folder (a
// bundle is accepted wherever a report is expected); InputError for a folder with none or several.
std::string report_in(const std::string& path);

// An output of a command with the option that names it ("--annotate"), or an input ("--gpus",
// "REPORT").
struct CommandFile {
  std::string option;
  std::string path;
};

// No output may replace an input of the same command or another of its outputs (`--annotate
// trace.json` of that trace, `--html X --annotate X` losing one while saying both were written,
// --html over the --gpus table): UsageError naming both. Files are compared by identity (device
// and inode, so links and other spellings of a path are caught) where the output exists, by
// their absolute, normalised paths where it does not yet; "-" (standard output) collides with
// another "-" output only. Empty paths are ignored.
void refuse_output_collisions(const std::vector<CommandFile>& outputs,
                              const std::vector<CommandFile>& inputs);

// All reports are read before anything is printed; the first bad file stops the command. A
// fallback without an ncu is an InputError naming the report with kNotReady (exit 9), one whose
// ncu fails kInputInvalid (exit 4).
std::vector<model::Report> load_reports(const std::vector<std::string>& paths,
                                        const importers::ImportOptions& options = {},
                                        const ReadPolicy& policy = {});

// The readers' warnings for standard error: one line per report of an unknown format version
// (what was read, what skipped, and where an ncu is found how to have ncu read it), and one per
// file the reader did not read whole (a CSV export with other text around its table).
std::string reading_notes(const std::vector<model::Report>& reports);

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

}  // namespace kprof::pipeline
