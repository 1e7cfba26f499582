#include "tracer/trace_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace kprof::tracer {
namespace {

std::string file_failure(const std::string& path, const char* what, int error_number) {
  return path + ": " + what + ": " + std::strerror(error_number);
}

void add_anchor(std::string& out, const char* key, const ClockAnchor& anchor) {
  out += ", \"";
  out += key;
  out += "\": {";
  append_json_count(out, "cupti_ns", anchor.cupti_ns, false);
  append_json_count(out, "realtime_ns", anchor.realtime_ns);
  append_json_count(out, "monotonic_ns", anchor.monotonic_ns);
  out += '}';
}

bool exists(const std::string& path) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0;
}

// rename without replacing: renameat2(RENAME_NOREPLACE), or link + unlink where the file system
// lacks it (both refuse an existing destination).
int rename_no_replace(const std::string& from, const std::string& to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS) return -1;
  if (::link(from.c_str(), to.c_str()) != 0) return -1;
  ::unlink(from.c_str());
  return 0;
}

std::string directory_of(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

std::string summary_json(const TraceHeader& header, const WindowSummary& s) {
  const WindowCounts& c = s.counts;
  std::string out = "{\"format\": \"kprof.trace/1\", \"tracer_version\": \"";
  append_json_string(out, s.tracer_version);
  out += "\"";
  append_json_count(out, "pid", static_cast<std::uint64_t>(header.pid));
  out += ", \"host\": \"";
  append_json_string(out, header.host);
  out += "\"";
  append_json_count(out, "window", header.window);
  out += ", \"stop_reason\": \"";
  append_json_string(out, s.stop_reason);
  out += "\"";
  append_json_count(out, "cupti_version", header.cupti_version);
  out +=
      ", \"clock\": \"CUPTI's default clock (CLOCK_REALTIME on Linux); CUPTI converts GPU "
      "timestamps to it, so devices share one timebase\"";
  add_anchor(out, "window_start", s.start);
  add_anchor(out, "window_stop", s.stop);
  append_json_count(out, "records", c.records);
  append_json_count(out, "events", c.events);
  append_json_count(out, "max_events", s.max_events);
  out += c.over_cap > 0 ? ", \"cap_hit\": true" : ", \"cap_hit\": false";
  out += ", \"dropped\": {";
  append_json_count(out, "cupti_dropped_records", s.cupti_dropped, false);
  append_json_count(out, "buffer_requests_refused", s.buffers_refused);
  append_json_count(out, "incomplete_records", c.incomplete_records);
  append_json_count(out, "over_cap_records", c.over_cap);
  append_json_count(out, "late_records", s.late_records);
  append_json_count(out, "lost_records", s.records_lost);
  out += "}, \"nvtx\": {";
  append_json_count(out, "unmatched_range_ends", c.unmatched_range_ends, false);
  append_json_count(out, "open_ranges_at_stop", c.open_ranges_at_stop);
  out += "}";
  append_json_count(out, "other_records", c.other_records);
  out += ", \"clock_check\": [";
  bool first = true;
  for (const auto& [device, check] : c.clock_checks) {
    out += first ? "{" : ", {";
    first = false;
    append_json_count(out, "device", device, false);
    append_json_count(out, "pairs", check.pairs);
    append_json_count(out, "gpu_before_launch", check.gpu_before_launch);
    out += '}';
  }
  out += ']';
  if (!s.graph_nodes.empty()) {
    out += ",\n\"graph_nodes\": ";
    out += s.graph_nodes;
  }
  out += '}';
  return out;
}

std::string summary_line(const std::string& path, const TraceHeader& header,
                         const WindowSummary& s) {
  const WindowCounts& c = s.counts;
  std::string line = "pid " + std::to_string(header.pid) + " window " +
                     std::to_string(header.window) + " (stopped by " + s.stop_reason +
                     "): " + path + ": " + std::to_string(c.events) + " events";
  std::vector<std::string> dropped;
  if (s.cupti_dropped) {
    dropped.push_back(std::to_string(s.cupti_dropped) + " records dropped by CUPTI");
  }
  if (s.buffers_refused) {
    dropped.push_back(std::to_string(s.buffers_refused) +
                      " buffer requests refused (all buffers in use: raise KPROF_TRACE_MEMORY_MB)");
  }
  if (c.incomplete_records) {
    dropped.push_back(std::to_string(c.incomplete_records) + " records without timestamps");
  }
  if (c.over_cap) {
    dropped.push_back(std::to_string(c.over_cap) + " records over the cap of " +
                      std::to_string(s.max_events) + " events (KPROF_TRACE_MAX_EVENTS)");
  }
  if (s.late_records) {
    dropped.push_back(std::to_string(s.late_records) + " records that arrived between windows");
  }
  if (s.records_lost) {
    dropped.push_back(std::to_string(s.records_lost) +
                      " records lost (the tracer ran out of memory queueing them)");
  }
  if (s.graph_nodes_not_kept) {
    dropped.push_back(std::to_string(s.graph_nodes_not_kept) +
                      " graph nodes not kept in the node table (its bound, or out of memory)");
  }
  if (s.graph_clones_not_kept) {
    dropped.push_back(std::to_string(s.graph_clones_not_kept) +
                      " graph node clones not kept in the node table");
  }
  if (dropped.empty()) return line + "; nothing dropped";
  line += "; DROPPED: ";
  for (size_t i = 0; i < dropped.size(); ++i) line += (i ? ", " : "") + dropped[i];
  return line;
}

TraceFile::TraceFile(std::string final_path, TraceHeader header, gzFile out, int sync_fd)
    : final_path_(std::move(final_path)),
      partial_path_(final_path_ + ".partial"),
      header_(std::move(header)),
      out_(out),
      sync_fd_(sync_fd) {}

std::unique_ptr<TraceFile> TraceFile::create(const std::string& final_path,
                                             const TraceHeader& header, std::string* error) {
  std::string partial = final_path + ".partial";
  int fd = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    *error = file_failure(partial, "cannot create", errno);
    return nullptr;
  }
  int sync_fd = ::dup(fd);
  gzFile out = sync_fd >= 0 ? gzdopen(fd, "wb1") : nullptr;  // level 1: cheap for the writer
  if (!out) {
    int saved = sync_fd >= 0 ? ENOMEM : errno;
    ::close(fd);
    if (sync_fd >= 0) ::close(sync_fd);
    ::unlink(partial.c_str());
    *error = file_failure(partial, "cannot start compressing", saved);
    return nullptr;
  }
  gzbuffer(out, 1 << 20);
  std::unique_ptr<TraceFile> file(new TraceFile(final_path, header, out, sync_fd));
  std::string text =
      "{\"schemaVersion\": 1, \"displayTimeUnit\": \"ms\", \"baseTimeNanoseconds\": ";
  text += std::to_string(header.base_ns);
  text += ", \"cupti_version\": " + std::to_string(header.cupti_version);
  text += ", \"traceName\": \"kprof tracer: ";
  append_json_string(text, header.host);
  text += " pid " + std::to_string(header.pid) + " window " + std::to_string(header.window);
  text += "\",\n\"traceEvents\": [\n";
  if (!file->write(text, error)) return nullptr;
  return file;
}

TraceFile::~TraceFile() {
  if (!finished_) abandon();
}

void TraceFile::abandon() {
  if (out_) gzclose(out_);
  out_ = nullptr;
  if (sync_fd_ >= 0) ::close(sync_fd_);
  sync_fd_ = -1;
  ::unlink(partial_path_.c_str());
}

bool TraceFile::write(std::string_view events, std::string* error) {
  if (!out_) {
    *error = partial_path_ + ": already closed";
    return false;
  }
  while (!events.empty()) {
    unsigned chunk = static_cast<unsigned>(std::min<size_t>(events.size(), 1u << 30));
    errno = 0;
    int written = gzwrite(out_, events.data(), chunk);
    if (written <= 0) {
      int code = Z_OK;
      const char* message = gzerror(out_, &code);
      *error = code == Z_ERRNO ? file_failure(partial_path_, "cannot write", errno ? errno : EIO)
                               : partial_path_ + ": cannot write: " + (message ? message : "zlib");
      return false;
    }
    events.remove_prefix(static_cast<size_t>(written));
  }
  return true;
}

bool TraceFile::finish(const WindowSummary& summary, std::string* error) {
  std::string footer = "\n],\n\"kprof\": " + summary_json(header_, summary) + "\n}\n";
  if (!write(footer, error)) return false;
  errno = 0;
  int closed = gzclose(out_);
  out_ = nullptr;
  if (closed != Z_OK) {
    *error = file_failure(partial_path_, "cannot write", errno ? errno : EIO);
    return false;
  }
  if (::fsync(sync_fd_) != 0) {
    *error = file_failure(partial_path_, "cannot sync", errno);
    return false;
  }
  ::close(sync_fd_);
  sync_fd_ = -1;
  finished_ = true;  // complete: from here on a failure keeps the ".partial", never removes it
  if (rename_no_replace(partial_path_, final_path_) != 0) {
    *error = file_failure(partial_path_,
                          ("complete, but cannot be renamed to " + final_path_).c_str(), errno);
    return false;
  }
  int dir = ::open(directory_of(final_path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return true;
}

unsigned next_free_window(const std::string& dir, const std::string& pattern,
                          const std::string& host, long pid, unsigned window, std::string* path) {
  for (;; ++window) {
    *path = dir + "/" + expand_output_name(pattern, host, pid, window);
    if (!exists(*path) && !exists(*path + ".partial")) return window;
  }
}

}  // namespace kprof::tracer
