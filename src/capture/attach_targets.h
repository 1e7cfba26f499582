// The processes of a tree started under `ncu --mode launch` and how kprof steers ncu's attach
// among them. ncu cannot be told which process to attach to (one process per port of its range,
// and an attach narrowed to one port finds nothing, both measured on the H200): it attaches to
// one process that no other client holds. So kprof holds every process that is not the target
// with an attach client whose kernel filter matches nothing (the process runs on, profiled for
// nothing), follows the processes that appear once those run (an engine spawned by its front),
// and lets go of the target's hold: the next attach can then only be the target's.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "capture/ncu_command.h"
#include "capture/ncu_diagnosis.h"
#include "common/child_process.h"

namespace kprof::capture {

// The kernel filter of a release: no kernel is called this, so the process runs unprofiled.
inline constexpr const char* kReleaseFilter = "regex:^kprof_release_nothing$";

// A process of this machine started under ncu's launch mode.
struct LaunchedProcess {
  int pid = 0;
  std::string command_line;               // /proc/PID/cmdline, arguments joined by spaces
  std::vector<std::string> thread_names;  // /proc/PID/task/*/comm, distinct, in task order
  std::vector<int> listening_ports;       // TCP ports of ncu's range it listens on
  std::vector<std::string> unix_sockets;  // unix sockets it holds (names; "" unnamed) by inode
  bool waiting = false;                   // it listens on a port of the range
};

// Processes whose environment carries ncu's launch-mode injection (NV_CUDA_START_SUSPENDED,
// NV_NSIGHT_INJECTION_PORT_BASE) or whose maps hold ncu's injection library; what is unreadable
// (another user's process) is skipped. proc_root is /proc but for tests.
std::vector<LaunchedProcess> find_launched_processes(const std::string& proc_root = "/proc",
                                                     int base_port = 49152, int port_count = 64);
// One process described as above (whether or not it was launched under ncu); nullopt when gone.
std::optional<LaunchedProcess> describe_process(int pid, const std::string& proc_root = "/proc");

// --attach-process NAME|PID: digits are a pid, anything else a part of the command line or of a
// thread name (vLLM's `VLLM::EngineCore`, serve.py's `serve::engine`).
struct ProcessSelector {
  std::optional<int> pid;
  std::string name;
  std::string text() const { return pid ? std::to_string(*pid) : name; }
};
ProcessSelector parse_process_selector(const std::string& text);  // invalid_argument when empty
bool selects(const ProcessSelector& selector, const LaunchedProcess& process);

// One step of steering: what kprof did to which process, seconds after it began.
struct AttachStep {
  double at_s = 0;
  std::string action;  // "held", "target_found", "target_released", "released", "none_waiting"
  int pid = 0;
  std::optional<int> port;
  std::string command_line;
  std::vector<std::string> thread_names;
};

// Where a launched tree runs, as the steering needs it: how an attach client is run there (its
// on_tick asks for the detach) and how one of its processes is described (nullopt: gone, or not
// visible from here). This machine: run_child and /proc; a pod: kubectl exec (k8s::pod_tree_host).
struct TreeHost {
  std::function<ChildResult(const ChildRequest&)> run_client;
  std::function<std::optional<LaunchedProcess>(int pid)> describe;
};
// This machine's: clients through run_child; processes described from proc_root when the
// endpoint is this machine (a remote host's pids are not ours to read).
TreeHost local_tree_host(const AttachEndpoint& endpoint, std::string proc_root = "/proc");

// Holds, follows and releases the processes of a launched tree through ncu attach clients.
// Every client is stopped (SIGINT: ncu detaches) by release_all() or the destructor.
class ProcessTreeAttacher {
 public:
  using Note = std::function<void(const std::string&)>;
  ProcessTreeAttacher(std::string ncu, AttachEndpoint endpoint,
                      std::optional<ProcessSelector> target, Note note, TreeHost host);
  ~ProcessTreeAttacher();
  ProcessTreeAttacher(const ProcessTreeAttacher&) = delete;
  ProcessTreeAttacher& operator=(const ProcessTreeAttacher&) = delete;

  // Holds waiting processes one at a time until one is the target (the first one when no target
  // was named) or timeout_s passes; the target stays held (start-up proceeds, unprofiled), and so
  // does every other process waiting then (hold_others). Returns its pid, or nullopt (the
  // diagnosis lists what was seen).
  std::optional<int> find_target(double timeout_s);
  // While the target is held: holds every other process that waits for a profiler now (one that
  // appeared since, or one a previous run let go), until an attach client finds none. Without it
  // the next attach can take any of them: on the H200 a second warm capture found the engine
  // first, left the front waiting, and its capture attached to the front.
  void hold_others();
  // While the target is held: keeps holding, in the background, every process that starts to
  // wait for a profiler (an engine's workers spawned during its start-up would otherwise wait
  // there for good, and start-up with them), until stop_following(), which the caller must call
  // before it lets go of the target (release_target does).
  void follow();
  void stop_following();
  // Lets go of the target's hold: the next attach client finds only the target.
  void release_target();
  // Holds the target again (nothing profiled), e.g. between two captures.
  bool hold_target(double timeout_s);
  // Lets go of every hold (the target's included).
  void release_all();

  std::optional<int> target_pid() const { return target_pid_; }
  std::vector<AttachStep> steps() const;
  // Every process a client attached to, for a diagnosis ("pid 12 `python3 serve.py`, threads …").
  std::vector<std::string> seen() const;
  // The last lines of the last attach client that ended without connecting ("" when none did):
  // ncu's "no attachable process", or why it never ran there (kubectl: exec forbidden, …).
  std::string last_unconnected_said() const;

 private:
  struct Client;
  std::shared_ptr<Client> start_client();
  // Waits until the client is connected (its pid known) or ended, or `abandon` becomes true;
  // false: it ended (or was abandoned) unconnected.
  bool wait_connected(Client& client, double timeout_s, const std::atomic<bool>* abandon = nullptr);
  void stop(Client& client, const std::string& action);
  void record(const std::string& action, int pid, std::optional<int> port);
  bool is_target(int pid, const std::string& ncu_name);

  std::string ncu_;
  AttachEndpoint endpoint_;
  std::optional<ProcessSelector> target_;
  Note note_;
  TreeHost host_;
  std::chrono::steady_clock::time_point began_;
  std::string last_unconnected_said_;  // under mutex_
  mutable std::mutex mutex_;
  std::vector<AttachStep> steps_;
  std::vector<std::shared_ptr<Client>> clients_;
  std::shared_ptr<Client> target_client_;
  std::optional<int> target_pid_;
  std::thread follower_;
  std::atomic<bool> stop_following_{false};
};

// The manifest's attach details: the process named and matched, and every step so far.
nlohmann::json attach_details(const ProcessTreeAttacher& tree,
                              const std::optional<ProcessSelector>& selector);
// The named process never waited for a profiler within timeout_s: what was seen instead.
Diagnosis process_not_found(const ProcessSelector& selector, const ProcessTreeAttacher& tree,
                            double timeout_s);

// The argv of an attach client that holds a process without profiling anything.
std::vector<std::string> release_client_argv(const std::string& ncu,
                                             const AttachEndpoint& endpoint);

}  // namespace kprof::capture
