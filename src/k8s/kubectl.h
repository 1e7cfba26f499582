// Every Kubernetes operation of kprof goes through the user's kubectl, exec'd with an argv
// (names, namespaces and regexes stay single arguments, never shell text). Calls are logged so
// the CLI can show and record exactly what it ran.
#pragma once

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace kprof::k8s {

struct KubectlResult {
  std::vector<std::string> argv;
  int exit_code = -1;
  bool started = false;
  bool interrupted = false;
  std::string out, err;
  std::string combined;  // out and err interleaved as they were read
  std::chrono::milliseconds elapsed{0};
};

// A kubectl call that failed, classified from kubectl's own message so the CLI can say what to
// do: not_found, forbidden, ephemeral_disabled, unknown_flag, unreachable, other.
struct KubectlError : std::runtime_error {
  KubectlError(std::string kind, const std::string& message)
      : std::runtime_error(message), kind(std::move(kind)) {}
  std::string kind;
};

std::string classify_failure(const std::string& stderr_text);

// kubectl's stderr as one line for a message: kubectl's own lines ("The connection to the server
// … was refused …", "Error from server (NotFound): …", "error: …") without klog's diagnostics,
// which repeat the same discovery failure five times ("E1130 … memcache.go:265] couldn't get
// current server API group list: …"); klog's messages only when there is nothing else.
// Duplicates dropped, lines joined with "; ", control characters escaped, at most 600 bytes.
std::string condense_message(const std::string& stderr_text);

// How a kubectl call is shown in messages: `kubectl ARGS`, quoted as a shell would need them.
std::string shown_call(const std::vector<std::string>& argv);

// What a long kubectl call (an exec'd ncu, a port-forward) is told while it runs.
struct KubectlStream {
  std::function<void(const std::string& line, bool from_stderr)> on_line;
  // Called about every 100 ms; true asks for SIGINT to kubectl.
  std::function<bool()> on_tick;
  // Keep running when kprof is interrupted (on_tick then decides when it ends).
  bool survive_interrupt = false;
  // false: the output only reaches on_line (a port-forward prints a line per connection).
  bool keep_output = true;
};

class Kubectl {
 public:
  // path: the kubectl to run; context/kubeconfig: passed when non-empty.
  Kubectl(std::string path, std::string context, std::string kubeconfig);

  KubectlResult run(std::vector<std::string> args,
                    std::chrono::milliseconds timeout = std::chrono::minutes(2)) const;
  // run() with each line of kubectl's output as it arrives (an exec'd ncu's progress).
  KubectlResult run(
      std::vector<std::string> args, std::chrono::milliseconds timeout,
      const std::function<void(const std::string& line, bool from_stderr)>& on_line) const;
  KubectlResult run(std::vector<std::string> args, std::chrono::milliseconds timeout,
                    const KubectlStream& stream) const;
  // run() that throws KubectlError unless kubectl exited 0.
  KubectlResult check(std::vector<std::string> args,
                      std::chrono::milliseconds timeout = std::chrono::minutes(2)) const;
  nlohmann::json get_json(std::vector<std::string> args) const;

  const std::string& path() const { return path_; }
  // The options every call starts with (--kubeconfig, --context), as given.
  std::vector<std::string> global_args() const;
  // From now on calls run to completion even after SIGINT/SIGTERM: the cleanup.
  void cleaning() { cleaning_ = true; }

 private:
  std::string path_, context_, kubeconfig_;
  bool cleaning_ = false;
};

struct KubectlVersions {
  int client_minor = 0;
  std::optional<int> server_minor;
  std::string client_text, server_text;
};
KubectlVersions parse_versions(const nlohmann::json& version_json);

}  // namespace kprof::k8s
