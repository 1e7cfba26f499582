#include "pipeline/trace_files.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <stdlib.h>
#include <sys/sendfile.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string_view>

#include "common/error.h"
#include "common/opened_inputs.h"

namespace kprof::pipeline {
namespace {

bool is_sqlite(int fd) {
  static constexpr std::string_view kMagic("SQLite format 3\0", 16);
  char head[16];
  return ::pread(fd, head, sizeof head, 0) == static_cast<ssize_t>(sizeof head) &&
         std::string_view(head, sizeof head) == kMagic;
}

// A copy of what `fd` reads in a new folder only this user can enter (mkdtemp, mode 700), both
// removed with it: the file SQLite opens by name is then one nobody else can swap.
class PrivateCopy {
 public:
  PrivateCopy(int fd, const std::string& path) {
    const char* tmp = std::getenv("TMPDIR");
    folder_ = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/kprof-mcp-XXXXXX";
    if (::mkdtemp(folder_.data()) == nullptr) {
      const int error = errno;
      folder_.clear();
      fail(path, fmt::format("cannot make a private copy of it: {}", std::strerror(error)));
    }
    file_ = folder_ + "/export.sqlite";
    int out = ::open(file_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (out < 0) {
      fail(path, fmt::format("cannot make a private copy of it: {}", std::strerror(errno)));
    }
    off_t offset = 0;
    for (;;) {
      ssize_t n = ::sendfile(out, fd, &offset, std::size_t{1} << 30);
      if (n == 0) break;
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const int error = errno;
        ::close(out);
        fail(path, fmt::format("cannot make a private copy of it: {}", std::strerror(error)));
      }
    }
    ::close(out);
  }
  ~PrivateCopy() { remove(); }
  PrivateCopy(const PrivateCopy&) = delete;
  PrivateCopy& operator=(const PrivateCopy&) = delete;
  const std::string& file() const { return file_; }

 private:
  [[noreturn]] void fail(const std::string& path, const std::string& message) {
    remove();
    throw InputError(ExitCode::kInputUnreadable, path, InputPosition::none(), message);
  }
  void remove() {
    if (!file_.empty()) ::unlink(file_.c_str());
    if (!folder_.empty()) ::rmdir(folder_.c_str());
    file_.clear();
    folder_.clear();
  }
  std::string folder_, file_;
};

// The error with the name the reader was given replaced by the path it stands for.
InputError renamed(const InputError& error, const std::string& opened, const std::string& path) {
  std::string message = error.message();
  for (std::size_t at = 0; (at = message.find(opened, at)) != std::string::npos;
       at += path.size()) {
    message.replace(at, opened.size(), path);
  }
  return InputError(error.code(), error.path() == opened ? path : error.path(), error.position(),
                    message);
}

}  // namespace

importers::TraceReadStats read_trace_file(const std::string& path,
                                          importers::TraceEventSink& sink) {
  const OpenedInputs* inputs = OpenedInputs::current();
  if (inputs == nullptr) return importers::read_trace(path, sink);
  const int fd = inputs->descriptor(path);
  std::optional<PrivateCopy> copy;
  if (is_sqlite(fd)) copy.emplace(fd, path);
  const std::string opened = copy ? copy->file() : inputs->reopen_name(path);
  try {
    return importers::read_trace(opened, sink);
  } catch (const InputError& error) {
    throw renamed(error, opened, path);
  }
}

bool looks_like_trace(const std::string& path) {
  const OpenedInputs* inputs = OpenedInputs::current();
  if (inputs == nullptr) return importers::looks_like_trace_file(path);
  return inputs->contains(path) && importers::looks_like_trace_file(inputs->reopen_name(path));
}

}  // namespace kprof::pipeline
