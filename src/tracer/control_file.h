// The control file the tracer polls (KPROF_TRACE_CONTROL): a command counts once per write, so
// writing "start" again after a window ended opens a new one. No CUPTI here.
#pragma once

#include <sys/types.h>

#include <ctime>
#include <string>

#include "tracer/window_policy.h"

namespace kprof::tracer {

class ControlFileWatcher {
 public:
  explicit ControlFileWatcher(std::string path) : path_(std::move(path)) {}

  // What the file newly says: kNone when it is absent, unchanged since the last poll, or empty.
  // The first poll reports what the file already holds. `content` receives the text read (for
  // messages about an unknown command).
  ControlCommand poll(std::string* content = nullptr);

 private:
  std::string path_;
  bool seen_ = false;
  dev_t device_ = 0;
  ino_t inode_ = 0;
  off_t size_ = 0;
  timespec modified_{}, changed_{};
};

}  // namespace kprof::tracer
