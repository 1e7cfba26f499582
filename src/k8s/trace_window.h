// One trace window in a sister pod running kprof's tracer (`kprof k8s sister --trace`): the
// tracer is inactive until kprof writes `start` into its control file (kubectl exec), traces for
// the duration asked, closes its window on `stop`, and renames each process's `.partial` to its
// final `.json.gz`; kprof waits for those files, copies them out verified (copy_verified) and
// reads the tracer's lines from the server's log (window summaries, drops, why it stayed off).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "capture/ncu_diagnosis.h"
#include "capture/tracer_run.h"
#include "k8s/copy_out.h"
#include "k8s/kubectl.h"

namespace kprof::k8s {

struct TraceWindowOptions {
  double duration_s = 10;         // between `start` and `stop`
  double finish_timeout_s = 600;  // for the tracer's files after `stop`
  double nothing_after_s = 10;    // no file at all this long after `stop`: nothing was traced
  double poll_interval_s = 1;
};

// kubectl exec's argv writing `word` (start or stop) into the control file; the file's path and
// the word reach the pod's shell as positional parameters, never as shell text.
std::vector<std::string> control_call(const PodContainer& where, const std::string& word);

// The tracer's files in a `ls -1 kTracerMount` listing: finished windows (kprof-trace.*.json.gz)
// and unfinished ones (….json.gz.partial), sorted; anything else is ignored.
struct TraceListing {
  std::vector<std::string> finished, partial;
};
TraceListing parse_trace_listing(const std::string& ls_output);

struct TracedFile {
  std::string pod_path, local_path, sha256_in_pod, sha256_copied;
};

struct TraceWindowResult {
  std::string started_at, stopped_at;  // UTC, when kprof wrote start and stop
  std::vector<std::vector<std::string>> control_calls;
  std::vector<TracedFile> files;                  // copied, digests equal
  std::vector<std::string> unfinished;            // .partial files still in the pod at the end
  std::vector<capture::TraceWindowLine> windows;  // the tracer's window lines in the log
  std::vector<std::string> tracer_lines;          // every "kprof-tracer: " line in the log
  std::vector<capture::Diagnosis> diagnoses;
  bool interrupted = false;
  bool failed() const;
};

// Opens and closes one window in `where`, copies the finished traces into local_dir (a folder
// that exists), and reads the log. A kubectl failure writing the control file throws
// KubectlError; everything else about the traces is a diagnosis (tracer_missing_in_pod,
// no_trace, trace_unfinished, copy_failed, copy_corrupted, interrupted). notes get progress.
TraceWindowResult run_trace_window(const Kubectl& kubectl, const PodContainer& where,
                                   const TraceWindowOptions& options, const std::string& local_dir,
                                   const std::function<void(const std::string&)>& note);

}  // namespace kprof::k8s
