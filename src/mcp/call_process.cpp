#include "mcp/call_process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

namespace kprof::mcp {
namespace {

void write_to_parent(int fd, const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(3);
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace

CallProcess::CallProcess(const std::function<std::string()>& work,
                         const std::vector<int>& close_in_child) {
  int ends[2];
  if (::pipe2(ends, O_CLOEXEC) != 0)
    throw std::system_error(errno, std::generic_category(), "pipe");
  const pid_t parent = ::getpid();
  // A machine at its process limit for a moment (EAGAIN) gets a few tries, a second in all.
  for (int attempt = 0; (pid_ = ::fork()) < 0 && errno == EAGAIN && attempt < 20; ++attempt) {
    ::usleep(50'000);
  }
  if (pid_ < 0) {
    const int error = errno;
    ::close(ends[0]);
    ::close(ends[1]);
    throw std::system_error(error, std::generic_category(), "fork");
  }
  if (pid_ == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) _exit(2);
    ::close(ends[0]);
    for (int fd : close_in_child) ::close(fd);
    int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null < 0 || ::dup2(null, STDIN_FILENO) < 0 || ::dup2(null, STDOUT_FILENO) < 0) _exit(2);
    std::string answer;
    try {
      answer = work();
    } catch (...) {
      _exit(1);
    }
    write_to_parent(ends[1], answer);
    _exit(0);
  }
  ::close(ends[1]);
  pipe_ = ends[0];
  ::fcntl(pipe_, F_SETFL, ::fcntl(pipe_, F_GETFL) | O_NONBLOCK);
}

CallProcess::~CallProcess() {
  stop();
  if (pipe_ >= 0) ::close(pipe_);
}

bool CallProcess::read_available() {
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(pipe_, buffer, sizeof buffer);
    if (n > 0) {
      output_.append(buffer, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
  }
}

std::optional<std::string> CallProcess::finish() {
  if (pid_ < 0) return std::nullopt;
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return std::move(output_);
  failure_ = WIFSIGNALED(status)
                 ? fmt::format("its process ended by signal {} ({})", WTERMSIG(status),
                               ::strsignal(WTERMSIG(status)))
                 : fmt::format("its process exited with status {} without an answer",
                               WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return std::nullopt;
}

void CallProcess::stop() {
  if (pid_ < 0) return;
  ::kill(pid_, SIGKILL);
  while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

}  // namespace kprof::mcp
