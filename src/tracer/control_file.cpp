#include "tracer/control_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kprof::tracer {

ControlCommand ControlFileWatcher::poll(std::string* content) {
  if (path_.empty()) return ControlCommand::kNone;
  struct stat info {};
  if (::stat(path_.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) {
    seen_ = false;  // removed: the next file there is new
    return ControlCommand::kNone;
  }
  auto same_time = [](const timespec& a, const timespec& b) {
    return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
  };
  if (seen_ && info.st_dev == device_ && info.st_ino == inode_ && info.st_size == size_ &&
      same_time(info.st_mtim, modified_) && same_time(info.st_ctim, changed_)) {
    return ControlCommand::kNone;
  }
  seen_ = true;
  device_ = info.st_dev;
  inode_ = info.st_ino;
  size_ = info.st_size;
  modified_ = info.st_mtim;
  changed_ = info.st_ctim;
  // Non-blocking and bounded: a FIFO or a huge file placed there must not stall the tracer.
  int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return ControlCommand::kNone;
  char buffer[64];
  ssize_t n = ::read(fd, buffer, sizeof buffer);
  ::close(fd);
  if (n <= 0) return ControlCommand::kNone;
  std::string text(buffer, static_cast<size_t>(n));
  if (content) *content = text;
  return parse_control_command(text);
}

}  // namespace kprof::tracer
