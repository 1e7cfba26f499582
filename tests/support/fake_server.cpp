#include "support/fake_server.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "load/request_driver.h"

namespace kprof::testing {

std::string system_python() {
  return std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
}

FakeServer::FakeServer(const std::vector<std::string>& extra, bool wait_ready) {
  static int counter = 0;
  dir_ = (std::filesystem::temp_directory_path() /
          ("kprof-fake-server-" + std::to_string(getpid()) + "-" + std::to_string(++counter)))
             .string();
  std::filesystem::remove_all(dir_);
  std::filesystem::create_directories(dir_);
  log_path_ = dir_ + "/requests.jsonl";
  std::vector<std::string> argv = {
      system_python(), std::string(KPROF_SOURCE_DIR) + "/tools/serving/serve.py",
      "--backend",     "fake",
      "--port",        "0",
      "--request-log", log_path_};
  argv.insert(argv.end(), extra.begin(), extra.end());
  int fds[2];
  if (pipe(fds) != 0) {
    why_not_ = "pipe failed";
    return;
  }
  pid_ = fork();
  if (pid_ == 0) {
    setpgid(0, 0);
    dup2(fds[1], STDOUT_FILENO);
    const int null_fd = ::open("/dev/null", O_WRONLY);
    if (null_fd >= 0) dup2(null_fd, STDERR_FILENO);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  out_fd_ = fds[0];
  // The first line is "listening on http://HOST:PORT".
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (line.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    pollfd p{out_fd_, POLLIN, 0};
    if (poll(&p, 1, 200) <= 0) continue;
    char buffer[256];
    const ssize_t n = read(out_fd_, buffer, sizeof buffer);
    if (n <= 0) break;
    line.append(buffer, static_cast<size_t>(n));
  }
  const std::string prefix = "listening on ";
  const auto at = line.find(prefix);
  const auto end = line.find('\n');
  if (at == std::string::npos || end == std::string::npos) {
    why_not_ = "serve.py printed no 'listening on' line: " + line;
    return;
  }
  url_ = line.substr(at + prefix.size(), end - at - prefix.size());
  if (wait_ready) {
    const load::Readiness ready = load::wait_ready(url_, "/health", 30, nullptr);
    if (!ready.ready) {
      why_not_ = url_ + "/health: " + ready.why_not;
      url_.clear();
    }
  }
}

FakeServer::~FakeServer() {
  kill_now();
  if (out_fd_ >= 0) close(out_fd_);
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

void FakeServer::kill_now() {
  if (pid_ <= 0) return;
  ::kill(-pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

std::vector<nlohmann::json> FakeServer::requests() const {
  std::vector<nlohmann::json> out;
  std::ifstream in(log_path_);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto record = nlohmann::json::parse(line, nullptr, false);
    if (record.is_object() && record.value("event", "") == "request") out.push_back(record);
  }
  return out;
}

}  // namespace kprof::testing
