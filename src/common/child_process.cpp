#include "common/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>

extern char** environ;

namespace kprof {
namespace {

volatile std::sig_atomic_t g_interrupt = 0;
bool g_keep_interrupts = false;

void on_signal(int) { g_interrupt = 1; }

// What ends kprof's work as Ctrl-C does: SIGINT, SIGTERM, and SIGHUP (a closed terminal, a dropped
// ssh) and SIGQUIT — without their handler kprof died with 129 while ncu and the profiled program
// ran on in their own process group, and the bundle stayed an empty .partial folder.
constexpr int kInterrupts[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

// Installs the forwarding handlers for the lifetime of one run_child call.
class SignalGuard {
 public:
  SignalGuard() {
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < std::size(kInterrupts); ++i) {
      sigaction(kInterrupts[i], &action, &old_[i]);
    }
  }
  ~SignalGuard() {
    for (size_t i = 0; i < std::size(kInterrupts); ++i)
      sigaction(kInterrupts[i], &old_[i], nullptr);
  }

 private:
  struct sigaction old_[std::size(kInterrupts)]{};
};

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { close(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

std::vector<std::string> merged_environment(
    const std::vector<std::pair<std::string, std::string>>& extra) {
  std::map<std::string, std::string> values;
  std::vector<std::string> order;
  for (char** entry = environ; entry && *entry; ++entry) {
    std::string text = *entry;
    size_t eq = text.find('=');
    if (eq == std::string::npos) continue;
    std::string key = text.substr(0, eq);
    if (!values.count(key)) order.push_back(key);
    values[key] = text.substr(eq + 1);
  }
  for (const auto& [key, value] : extra) {
    if (!values.count(key)) order.push_back(key);
    values[key] = value;
  }
  std::vector<std::string> out;
  for (const std::string& key : order) out.push_back(key + "=" + values[key]);
  return out;
}

// Splits complete lines off a stream buffer and hands them to the callback.
struct LineSplitter {
  std::string pending;
  bool from_stderr;
  bool feed(std::string_view chunk, const ChildRequest& request) {
    pending.append(chunk);
    bool stop = false;
    size_t start = 0, newline;
    while ((newline = pending.find('\n', start)) != std::string::npos) {
      std::string line = pending.substr(start, newline - start);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (request.on_line && request.on_line(line, from_stderr)) stop = true;
      start = newline + 1;
    }
    pending.erase(0, start);
    return stop;
  }
  bool flush(const ChildRequest& request) {
    if (pending.empty() || !request.on_line) return false;
    bool stop = request.on_line(pending, from_stderr);
    pending.clear();
    return stop;
  }
};

}  // namespace

bool interrupt_received() { return g_interrupt != 0; }

void keep_interrupts() {
  g_keep_interrupts = true;
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  for (int signal : kInterrupts) sigaction(signal, &action, nullptr);
}

std::string find_executable(const std::string& name) {
  auto executable = [](const std::string& path) {
    struct stat info {};
    return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
           access(path.c_str(), X_OK) == 0;
  };
  if (name.find('/') != std::string::npos) return executable(name) ? name : "";
  const char* path_env = std::getenv("PATH");
  std::string path = path_env ? path_env : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + name;
    if (executable(candidate)) return candidate;
    start = end + 1;
  }
  return "";
}

ChildResult run_child(const ChildRequest& request) {
  using Clock = std::chrono::steady_clock;
  ChildResult result;
  if (request.argv.empty()) {
    result.start_error = "no command";
    return result;
  }
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    result.start_error = std::strerror(errno);
    return result;
  }
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    result.start_error = std::strerror(errno);
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return result;
  }
  Fd out_read(out_pipe[0]), out_write(out_pipe[1]), err_read(err_pipe[0]), err_write(err_pipe[1]);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_write.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_write.get(), STDERR_FILENO);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setpgroup(&attributes, 0);  // a new process group led by the child
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int signal : kInterrupts) sigaddset(&defaults, signal);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setflags(&attributes,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

  std::vector<char*> argv;
  for (const std::string& arg : request.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env_strings = merged_environment(request.env);
  std::vector<char*> envp;
  for (std::string& entry : env_strings) envp.push_back(entry.data());
  envp.push_back(nullptr);

  SignalGuard guard;
  if (!g_keep_interrupts) g_interrupt = 0;
  Clock::time_point start = Clock::now();
  pid_t pid = 0;
  int spawn_error = posix_spawnp(&pid, argv[0], &actions, &attributes, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  out_write.close();
  err_write.close();
  if (spawn_error != 0) {
    result.start_error = std::strerror(spawn_error);
    return result;
  }
  result.started = true;

  LineSplitter out_lines{"", false}, err_lines{"", true};
  std::optional<Clock::time_point> stop_sent;
  bool killed = false, exited = false;
  int status = 0;
  std::optional<Clock::time_point> exited_at;
  auto request_stop = [&] {
    if (stop_sent) return;
    kill(-pid, SIGINT);
    stop_sent = Clock::now();
  };
  char buffer[65536];
  while (out_read.get() >= 0 || err_read.get() >= 0) {
    pollfd fds[2];
    nfds_t count = 0;
    if (out_read.get() >= 0) fds[count++] = {out_read.get(), POLLIN, 0};
    if (err_read.get() >= 0) fds[count++] = {err_read.get(), POLLIN, 0};
    int ready = poll(fds, count, 100);
    if (ready < 0 && errno != EINTR) break;
    for (nfds_t i = 0; ready > 0 && i < count; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      bool is_out = fds[i].fd == out_read.get();
      ssize_t n = read(fds[i].fd, buffer, sizeof buffer);
      if (n <= 0) {
        if (n < 0 && errno == EINTR) continue;
        (is_out ? out_lines : err_lines).flush(request);
        (is_out ? out_read : err_read).close();
        continue;
      }
      std::string_view chunk(buffer, static_cast<size_t>(n));
      if (request.keep_output) {
        (is_out ? result.out : result.err).append(chunk);
        result.combined.append(chunk);
      }
      if ((is_out ? out_lines : err_lines).feed(chunk, request)) {
        result.stop_requested = true;
        request_stop();
      }
    }
    Clock::time_point now = Clock::now();
    if (!stop_sent && !exited && request.on_tick && request.on_tick()) {
      result.stop_requested = true;
      request_stop();
    }
    if (g_interrupt && !stop_sent && !request.survive_interrupt) {
      result.interrupted = true;
      request_stop();
    }
    if (request.timeout && !stop_sent && now - start > *request.timeout) {
      result.timed_out = true;
      request_stop();
    }
    if (stop_sent && !killed && now - *stop_sent > request.grace) {
      kill(-pid, SIGKILL);
      killed = true;
    }
    if (!exited && waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      exited_at = now;
    }
    // A grandchild that outlives the child may hold the pipes open: stop reading soon after.
    if (exited && now - *exited_at > std::chrono::milliseconds(2000)) {
      if (!killed) kill(-pid, SIGKILL);
      break;
    }
  }
  if (!exited) waitpid(pid, &status, 0);
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
    result.exit_code = 128 + result.signal;
  }
  result.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  return result;
}

}  // namespace kprof
