// A pod's port reachable from this machine: `kubectl port-forward` (an argv, no shell) kept
// running in the background for as long as kprof needs it. kubectl ends a port-forward whenever
// one connection to the pod's port fails (since 1.23: "lost connection to pod"), which is what
// every readiness poll does while the server still loads its model; so when kubectl ends, it is
// started again on the same local port, and each end is recorded.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "k8s/kubectl.h"

namespace kprof::k8s {

struct PortForwardSpec {
  std::string namespace_name, pod;
  int pod_port = 0;
};

// The local port of kubectl's "Forwarding from 127.0.0.1:LOCAL -> POD" line; nullopt otherwise.
std::optional<int> forwarded_local_port(const std::string& line);

class PortForward {
 public:
  using Note = std::function<void(const std::string&)>;
  // kubectl must outlive the PortForward.
  PortForward(const Kubectl& kubectl, PortForwardSpec spec, Note note);
  ~PortForward();  // stop()
  PortForward(const PortForward&) = delete;
  PortForward& operator=(const PortForward&) = delete;

  // Starts kubectl and waits for its "Forwarding from" line; throws KubectlError (with kubectl's
  // message) when it ends before that or timeout_s passes.
  void start(double timeout_s);
  // Ends kubectl (SIGINT) and stops restarting it.
  void stop();

  int local_port() const { return local_port_; }
  std::string base_url() const;  // http://127.0.0.1:LOCAL
  // For the manifest: the argv of the first start, the ports, how often kubectl ended and was
  // started again, the last few lines it printed on stderr (klog's as their message) and the
  // last that said why (e.g. the refused connection in the pod).
  nlohmann::json describe() const;

 private:
  void supervise();
  std::vector<std::string> argv(std::optional<int> local) const;

  const Kubectl& kubectl_;
  PortForwardSpec spec_;
  Note note_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> forwarding_{false};
  std::atomic<bool> ended_{false};
  std::atomic<int> local_port_{0};
  mutable std::mutex mutex_;
  std::vector<std::string> first_argv_;
  int restarts_ = 0;
  std::vector<std::string> errors_;  // kubectl's last stderr lines, newest last
  std::string last_problem_;         // the last of them that says why (not just that it ended)
};

}  // namespace kprof::k8s
