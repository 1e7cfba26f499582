// ncu's progress as it prints it: processes connected, kernels profiled with their passes,
// reports written, the kernels it lists when nothing matched. One incremental parser serves the
// live capture (lines as they arrive, from a local ncu or one in a pod) and the post-mortem
// reading of a whole log (`parse_progress`, used by the diagnoses and `kprof explain`), so the
// two cannot disagree.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kprof::capture {

struct NcuProgress {
  size_t processes_connected = 0;
  std::vector<int> connected_pids;  // "==PROF== Connected to process PID (…)", in order
  size_t kernels_profiled = 0;
  // Per profiled kernel, in order: ncu's "- N passes" (kernel replay), or the application replay
  // passes seen for it ("Application replay pass N", the highest N).
  std::vector<int> passes;
  std::vector<std::string> kernel_names;
  std::optional<int> passes_per_kernel;        // the last kernel's passes
  std::vector<std::string> report_paths;       // "==PROF== Report: …"
  std::vector<std::string> available_kernels;  // ncu's list after "No kernels were profiled."
};

struct NcuProgressEvent {
  enum class Kind {
    kProcessConnected,  // "==PROF== Connected to process …"
    kKernelProfiled,    // a kernel's progress finished (kernel replay) or its first pass ran
    kMessage,           // an "==ERROR==" or "==WARNING==" line
  };
  Kind kind = Kind::kMessage;
  std::string line;           // the line as ncu printed it (connected, message)
  size_t kernel = 0;          // 1-based index of the kernel profiled
  std::string kernel_name;    // as ncu quotes it
  std::optional<int> passes;  // "- 38 passes"; unknown while an application replay runs
};

class NcuProgressParser {
 public:
  using Listener = std::function<void(const NcuProgressEvent&)>;
  explicit NcuProgressParser(Listener listener = {});

  // Bytes as they arrive; a chunk may end inside a line (the rest comes with the next chunk).
  void feed(std::string_view bytes);
  // One complete line, without its '\n' (what run_child's on_line hands over).
  void feed_line(std::string_view line);
  // The end of the output: a last line without '\n' is read.
  void finish();

  const NcuProgress& progress() const { return progress_; }

 private:
  void read_line(std::string_view line);
  void profiling_line(std::string_view line);
  void continuation(std::string_view text);
  void kernel_done(std::string name, std::optional<int> passes);

  Listener listener_;
  NcuProgress progress_;
  std::string partial_;  // bytes of a line not ended yet (feed)
  // A "==PROF== Profiling" line whose "- N passes" has not come yet: ncu prints the progress
  // dots as the passes run, and a warning may come between them on a line of its own.
  std::optional<std::string> pending_name_;
  bool listing_ = false;
  // Application replay: the kernel's id ("- 0:") → its index in progress_.passes.
  std::vector<std::pair<std::string, size_t>> replay_ids_;
};

// The whole of ncu's output through one NcuProgressParser.
NcuProgress parse_progress(std::string_view output);

}  // namespace kprof::capture
