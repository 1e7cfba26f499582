// What an ncu run did and, when it went wrong, why — read from ncu's console output, its exit
// status and the command line. ncu exits 0 when it profiled nothing, when a set name is
// unknown, when a metric is unavailable: the output, not the status, tells. Pure functions;
// every rule is tested on a real recording (data/h200/ncu-outputs).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "capture/ncu_progress.h"  // parse_progress: the diagnoses read the same progress
#include "capture/ncu_versions.h"

namespace kprof::capture {

struct NcuRun {
  std::vector<std::string> argv;  // ncu and its arguments, as run
  std::string output;             // ncu's console output (stdout and stderr, interleaved)
  int exit_code = 0;              // as a shell reports it: 128 + N when killed by signal N
  // kprof itself stopped ncu (a timeout, Ctrl-C, detaching an attach client): its exit status
  // is then kprof's doing, not a failure to explain.
  bool stopped_by_kprof = false;
  // The version of the ncu that ran (from `ncu --version`); unknown: advice fits every version.
  std::optional<NcuVersion> ncu_version = std::nullopt;
};

struct Diagnosis {
  std::string id;    // stable identifier, e.g. "env_wrapper"
  bool failure;      // false: a warning about a run that otherwise worked
  std::string what;  // one line: what happened
  std::string next;  // one line: what to do
};

// The names closest to a kernel filter that matched nothing, closest first: ranked by the
// longest run of the filter's characters found in the name (case-insensitive), then by name.
std::vector<std::string> closest_kernel_names(const std::string& filter,
                                              std::vector<std::string> names, size_t count);
// Every finding about the run, failures and warnings: the one classification `kprof capture`
// and `kprof explain` share. A non-zero exit status that no rule explains is still a failure
// ("ncu_failed", with ncu's last line and the signal a status above 128 stands for).
std::vector<Diagnosis> diagnose(const NcuRun& run);

}  // namespace kprof::capture
