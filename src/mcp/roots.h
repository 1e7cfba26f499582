// The folders `kprof mcp` may read (--root, repeatable; default the working directory), and the
// one gate every file a tool call reads passes. A path is resolved with realpath (symbolic links
// inside the roots followed) and refused when it lies outside every root; then it is opened from
// the root's own descriptor, held since the server started, one component at a time with
// O_PATH|O_NOFOLLOW: no link is followed at that point, so a name swapped for a link after the
// check makes the open fail instead of leaving the root. Only a regular file or a folder is then
// opened for reading (a FIFO, a device or a socket never is), and the descriptor read is the one
// checked. src/mcp/README.md argues why no path escapes.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace kprof::mcp {

// An open descriptor, closed with it.
class Descriptor {
 public:
  Descriptor() = default;
  explicit Descriptor(int fd) : fd_(fd) {}
  ~Descriptor();
  Descriptor(Descriptor&& other) noexcept : fd_(other.release()) {}
  Descriptor& operator=(Descriptor&& other) noexcept;
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  int get() const { return fd_; }
  int release();

 private:
  int fd_ = -1;
};

class Roots {
 public:
  // Each folder resolved by realpath and opened (O_PATH); UsageError when one cannot be resolved
  // or is no folder, or when /proc/self/fd, through which a checked file is reopened, is missing.
  explicit Roots(const std::vector<std::string>& folders);

  // `path` (relative: to the first root) resolved by realpath. A file that does not exist in an
  // existing folder resolves to that folder's real path and its name, so the reader reports it
  // as kprof does ("cannot open: No such file or directory"). UsageError naming the argument
  // when the resolved path is outside every root; InputError (exit 3) when its folder cannot
  // be resolved either.
  std::string resolve(const std::string& path, const std::string& argument) const;

  // What `path` names, opened for reading beneath the root it resolves into (resolve()'s errors
  // first). InputError (exit 3) naming the resolved path when it cannot be opened, when it is
  // neither a regular file nor a folder ("a FIFO (named pipe), not a regular file or folder"),
  // or when a name on its path changed into a link or another file while it was opened.
  struct Opened {
    std::string path;  // resolved
    Descriptor fd;     // O_RDONLY (O_DIRECTORY for a folder), O_NONBLOCK, O_CLOEXEC
    bool folder = false;
  };
  Opened open(const std::string& path, const std::string& argument) const;

  const std::vector<std::string>& folders() const { return folders_; }

 private:
  std::vector<std::string> folders_;
  std::shared_ptr<const std::vector<Descriptor>> descriptors_;  // each folder's, O_PATH
};

}  // namespace kprof::mcp
