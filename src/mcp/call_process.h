// A tool call run in a process of its own (fork), its answer read back through a pipe: the
// server's loop keeps reading and answering while it runs, and it can be stopped at any moment
// (SIGKILL) — cancelled, or past its time limit — whatever it is doing, a read that blocks
// included. A crash or a runaway allocation ends the call, not the server.
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kprof::mcp {

class CallProcess {
 public:
  // Forks. The child puts /dev/null on its stdin and stdout (the server's JSON-RPC channel:
  // nothing a call does can read or write it), closes `close_in_child`, dies with the server
  // (PR_SET_PDEATHSIG), writes what `work` returns to the pipe and exits. Throws
  // std::system_error when there is no pipe or process to be had.
  CallProcess(const std::function<std::string()>& work, const std::vector<int>& close_in_child);
  ~CallProcess();  // stops it if it still runs
  CallProcess(const CallProcess&) = delete;
  CallProcess& operator=(const CallProcess&) = delete;

  // The pipe's read end, non-blocking: poll it for POLLIN.
  int fd() const { return pipe_; }
  // Reads what has arrived; true once the child has closed the pipe (done, or dead).
  bool read_available();
  // Once read_available() said true: reaps the child and returns its answer, or nullopt when it
  // did not finish it (failure() says how it ended).
  std::optional<std::string> finish();
  // SIGKILL, then reaped: its work stops there.
  void stop();
  const std::string& failure() const { return failure_; }

 private:
  pid_t pid_ = -1;
  int pipe_ = -1;
  std::string output_;
  std::string failure_;
};

}  // namespace kprof::mcp
