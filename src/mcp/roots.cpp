#include "mcp/roots.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

#include "common/error.h"

namespace kprof::mcp {
namespace {

// realpath(3), or "" with errno set.
std::string real_path(const std::string& path) {
  std::unique_ptr<char, decltype(&free)> resolved(realpath(path.c_str(), nullptr), &free);
  return resolved ? std::string(resolved.get()) : std::string();
}

bool inside(const std::string& path, const std::string& root) {
  if (root == "/") return true;
  return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
                          path[root.size()] == '/');
}

[[noreturn]] void cannot_open(const std::string& path, const std::string& why) {
  throw InputError(ExitCode::kInputUnreadable, path, InputPosition::none(), "cannot open: " + why);
}

// What a file that is neither a regular file nor a folder is, for the refusal.
std::string kind_of(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "a special file";
}

}  // namespace

Descriptor::~Descriptor() {
  if (fd_ >= 0) ::close(fd_);
}

Descriptor& Descriptor::operator=(Descriptor&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

int Descriptor::release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

Roots::Roots(const std::vector<std::string>& folders) {
  auto descriptors = std::make_shared<std::vector<Descriptor>>();
  for (const std::string& folder : folders) {
    std::string resolved = real_path(folder);
    if (resolved.empty()) {
      throw UsageError(fmt::format("--root {}: {}", folder, std::strerror(errno)));
    }
    std::error_code error;
    if (!std::filesystem::is_directory(resolved, error)) {
      throw UsageError(fmt::format("--root {}: not a folder", folder));
    }
    Descriptor fd(::open(resolved.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (fd.get() < 0) throw UsageError(fmt::format("--root {}: {}", folder, std::strerror(errno)));
    folders_.push_back(resolved);
    descriptors->push_back(std::move(fd));
  }
  if (folders_.empty()) throw UsageError("no --root folder");
  if (::access("/proc/self/fd", X_OK) != 0) {
    throw UsageError(
        "kprof mcp reads each checked file through /proc/self/fd, and /proc is not mounted here");
  }
  descriptors_ = std::move(descriptors);
}

std::string Roots::resolve(const std::string& path, const std::string& argument) const {
  if (path.empty()) throw UsageError(fmt::format("argument '{}': an empty path", argument));
  if (path.find('\0') != std::string::npos) {
    throw UsageError(fmt::format("argument '{}': a path with a NUL character", argument));
  }
  std::string absolute = path.front() == '/' ? path : folders_.front() + "/" + path;
  std::string resolved = real_path(absolute);
  if (resolved.empty()) {
    const int error = errno;
    // The file may be missing: resolve its folder and keep the name, so that the reader says
    // what it says on the command line. Anything else (a folder missing, a loop) is said here.
    std::filesystem::path p(absolute);
    std::string folder = real_path(p.parent_path().string());
    if (error != ENOENT || folder.empty() || p.filename().empty() || p.filename() == "." ||
        p.filename() == "..") {
      throw InputError(ExitCode::kInputUnreadable, path, InputPosition::none(),
                       fmt::format("cannot open: {}", std::strerror(error)));
    }
    resolved = (folder == "/" ? "" : folder) + "/" + p.filename().string();
    // Something is there that realpath could not follow: a dangling symbolic link, whose target
    // (outside the roots, perhaps) would be opened if it appeared.
    struct stat link;
    if (lstat(resolved.c_str(), &link) == 0) {
      throw InputError(ExitCode::kInputUnreadable, path, InputPosition::none(),
                       "cannot open: a symbolic link to nothing");
    }
  }
  for (const std::string& root : folders_) {
    if (inside(resolved, root)) return resolved;
  }
  std::string roots;
  for (const std::string& root : folders_) roots += (roots.empty() ? "" : ", ") + root;
  throw UsageError(fmt::format(
      "argument '{}': {} is outside the folders this server may read ({}; kprof mcp --root)",
      argument, path == resolved ? path : fmt::format("{} ({})", path, resolved), roots));
}

Roots::Opened Roots::open(const std::string& path, const std::string& argument) const {
  Opened opened;
  opened.path = resolve(path, argument);
  const std::string& resolved = opened.path;
  // The innermost root it lies in (roots may nest), and the rest of the path below it.
  std::size_t root = folders_.size();
  for (std::size_t i = 0; i < folders_.size(); ++i) {
    if (inside(resolved, folders_[i]) &&
        (root == folders_.size() || folders_[i].size() > folders_[root].size())) {
      root = i;
    }
  }
  const std::string& folder = folders_[root];
  std::string rest = resolved.size() > folder.size() ? resolved.substr(folder.size()) : "";
  // From the root's own descriptor, a component at a time, following no link: realpath's answer
  // has no "." or "..", and a component that is a link now is one that changed since.
  Descriptor at(::fcntl((*descriptors_)[root].get(), F_DUPFD_CLOEXEC, 0));
  if (at.get() < 0) cannot_open(resolved, std::strerror(errno));
  std::size_t begin = 0;
  while (begin < rest.size()) {
    if (rest[begin] == '/') {
      ++begin;
      continue;
    }
    std::size_t end = rest.find('/', begin);
    if (end == std::string::npos) end = rest.size();
    const std::string name = rest.substr(begin, end - begin);
    const bool last = rest.find_first_not_of('/', end) == std::string::npos;
    Descriptor next(::openat(at.get(), name.c_str(),
                             O_PATH | O_NOFOLLOW | O_CLOEXEC | (last ? 0 : O_DIRECTORY)));
    if (next.get() < 0) {
      const int error = errno;
      cannot_open(resolved, error == ENOTDIR || error == ELOOP
                                ? "a folder on its path changed into a link or a file while it "
                                  "was opened"
                                : std::strerror(error));
    }
    at = std::move(next);
    begin = end;
  }
  struct stat checked {};
  if (::fstat(at.get(), &checked) != 0) cannot_open(resolved, std::strerror(errno));
  if (S_ISLNK(checked.st_mode)) {
    cannot_open(resolved, "it changed into a symbolic link while it was opened");
  }
  if (!S_ISREG(checked.st_mode) && !S_ISDIR(checked.st_mode)) {
    cannot_open(resolved, kind_of(checked.st_mode) + ", not a regular file or folder");
  }
  opened.folder = S_ISDIR(checked.st_mode);
  // Opened for reading through the checked descriptor (its /proc/self/fd link is that file,
  // whatever its name names now); O_NONBLOCK all the same.
  const std::string link = "/proc/self/fd/" + std::to_string(at.get());
  opened.fd = Descriptor(
      ::open(link.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | (opened.folder ? O_DIRECTORY : 0)));
  if (opened.fd.get() < 0) cannot_open(resolved, std::strerror(errno));
  struct stat read {};
  if (::fstat(opened.fd.get(), &read) != 0) cannot_open(resolved, std::strerror(errno));
  if (read.st_dev != checked.st_dev || read.st_ino != checked.st_ino) {
    cannot_open(resolved, "it changed while it was opened");
  }
  return opened;
}

}  // namespace kprof::mcp
