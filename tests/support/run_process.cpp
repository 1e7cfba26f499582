#include "support/run_process.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <stdexcept>

extern char** environ;

namespace kprof::testing {

namespace {

struct Signalling {
  const std::function<bool()>* when = nullptr;
  int signal = 0;
  double limit_s = 60;
};

ProcessResult run(const std::vector<std::string>& argv, const std::string* input,
                  const Signalling& signalling = {}) {
  int out_pipe[2], err_pipe[2], in_pipe[2] = {-1, -1};
  if (pipe(out_pipe) != 0 || pipe(err_pipe) != 0) throw std::runtime_error("pipe failed");
  if (input != nullptr && pipe(in_pipe) != 0) throw std::runtime_error("pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  posix_spawn_file_actions_addclose(&actions, out_pipe[0]);
  posix_spawn_file_actions_addclose(&actions, err_pipe[0]);
  if (input != nullptr) {
    posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 0);
    posix_spawn_file_actions_addclose(&actions, in_pipe[1]);
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (input != nullptr) {
    close(in_pipe[0]);
    // A program that stops reading early must not kill the test with SIGPIPE: the write fails.
    signal(SIGPIPE, SIG_IGN);
    fcntl(in_pipe[1], F_SETFL, O_NONBLOCK);
  }
  if (rc != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    if (input != nullptr) close(in_pipe[1]);
    throw std::runtime_error("cannot start " + argv[0]);
  }
  ProcessResult result;
  pollfd fds[3] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}, {in_pipe[1], POLLOUT, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  size_t written = 0;
  if (input != nullptr && input->empty()) {
    close(in_pipe[1]);
    fds[2].fd = -1;
  }
  int open_count = 2;
  char buffer[65536];
  bool signalled = false;
  const auto began = std::chrono::steady_clock::now();
  while (open_count > 0) {
    if (signalling.when != nullptr) {
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
      if (!signalled && (*signalling.when)()) {
        kill(pid, signalling.signal);
        signalled = true;
      }
      if (elapsed > signalling.limit_s) kill(pid, SIGKILL);
    }
    int ready = poll(fds, 3, signalling.when != nullptr ? 50 : -1);
    if (ready < 0) break;
    if (ready == 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      ssize_t n = read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<size_t>(n));
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_count;
      }
    }
    if (fds[2].fd >= 0 && fds[2].revents != 0) {
      ssize_t n = (fds[2].revents & POLLOUT)
                      ? write(fds[2].fd, input->data() + written, input->size() - written)
                      : -1;
      if (n > 0) written += static_cast<size_t>(n);
      if (n < 0 && errno == EAGAIN) continue;
      if (n < 0 || written == input->size()) {
        close(fds[2].fd);
        fds[2].fd = -1;
      }
    }
  }
  if (fds[2].fd >= 0) close(fds[2].fd);
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.max_rss_kib = usage.ru_maxrss;
  return result;
}

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv) { return run(argv, nullptr); }

ProcessResult run_process_signalled(const std::vector<std::string>& argv,
                                    const std::function<bool()>& when, int signal, double limit_s) {
  return run(argv, nullptr, {&when, signal, limit_s});
}

ProcessResult run_process_with_input(const std::vector<std::string>& argv,
                                     const std::string& input) {
  return run(argv, &input);
}

}  // namespace kprof::testing
