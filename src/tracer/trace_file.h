// One window's trace file: gzip'd Chrome trace JSON streamed into "<name>.partial" (created
// exclusively, never through a link) and renamed to its final name, without replacing anything,
// only once complete. The tracer runs inside another program and links nothing of kprof_core, so
// this is its own writer with the same rules as common/file_bytes (which holds a file whole).
#pragma once

#include <zlib.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tracer/record_converter.h"
#include "tracer/tracer_config.h"

namespace kprof::tracer {

// Clocks read together, so traces of several processes or hosts can be checked and re-aligned.
struct ClockAnchor {
  std::uint64_t cupti_ns = 0;      // cuptiGetTimestamp: the records' timebase
  std::uint64_t realtime_ns = 0;   // CLOCK_REALTIME
  std::uint64_t monotonic_ns = 0;  // CLOCK_MONOTONIC
};

struct TraceHeader {
  std::uint64_t base_ns = 0;
  std::uint32_t cupti_version = 0;
  long pid = 0;
  std::string host;
  unsigned window = 0;
};

struct WindowSummary {
  std::string tracer_version;
  std::string stop_reason;
  ClockAnchor start, stop;
  std::uint64_t max_events = 0;
  WindowCounts counts;
  std::uint64_t cupti_dropped = 0;    // cuptiActivityGetNumDroppedRecords
  std::uint64_t buffers_refused = 0;  // requests met with an empty buffer pool
  std::uint64_t late_records = 0;     // records that arrived when no window was open
  std::uint64_t records_lost = 0;     // records the tracer could not queue (out of memory)
  // The capture-time node table (tracer/graph_node_table), serialised: "" leaves the key out (the
  // tracer could not follow graph nodes in this process).
  std::string graph_nodes;
  std::uint64_t graph_nodes_not_kept = 0;  // its counts, said in the window's line too
  std::uint64_t graph_clones_not_kept = 0;
};

// The "kprof" object closing the file (documented in docs/tracer.md).
std::string summary_json(const TraceHeader& header, const WindowSummary& summary);

// The stderr line after a window: where it went and, never silently, what was dropped.
std::string summary_line(const std::string& path, const TraceHeader& header,
                         const WindowSummary& summary);

class TraceFile {
 public:
  // nullptr and *error set ("PATH: what failed: strerror") when the file cannot be created.
  static std::unique_ptr<TraceFile> create(const std::string& final_path, const TraceHeader& header,
                                           std::string* error);
  ~TraceFile();  // an unfinished file's ".partial" is removed
  TraceFile(const TraceFile&) = delete;
  TraceFile& operator=(const TraceFile&) = delete;

  // Appends trace events (the converter's text); false with *error set when writing fails.
  bool write(std::string_view events, std::string* error);
  // Closes the event array, writes the summary, syncs and renames; false with *error set.
  bool finish(const WindowSummary& summary, std::string* error);

  // After a failed finish(): whether the whole trace is kept under partial_path().
  bool complete() const { return finished_; }
  const std::string& final_path() const { return final_path_; }
  const std::string& partial_path() const { return partial_path_; }

 private:
  TraceFile(std::string final_path, TraceHeader header, gzFile out, int sync_fd);
  void abandon();

  std::string final_path_, partial_path_;
  TraceHeader header_;
  gzFile out_ = nullptr;
  int sync_fd_ = -1;  // a duplicate kept for fsync: gzclose closes the one zlib holds
  bool finished_ = false;
};

// The first window number from `window` on whose file and ".partial" both do not exist (a pid
// reused across runs must not overwrite an earlier trace); the path is stored in *path.
unsigned next_free_window(const std::string& dir, const std::string& pattern,
                          const std::string& host, long pid, unsigned window, std::string* path);

}  // namespace kprof::tracer
