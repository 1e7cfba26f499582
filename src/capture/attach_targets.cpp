#include "capture/attach_targets.h"

#include <fmt/format.h>
#include <re2/re2.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "capture/capture_session.h"
#include "common/child_process.h"
#include "common/text.h"

namespace kprof::capture {
namespace fs = std::filesystem;
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool all_digits(const std::string& text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// inode → port of the LISTEN (state 0A) TCP sockets in [base, base + count).
std::map<unsigned long, int> listening_inodes(const std::string& proc_root, int base, int count) {
  std::map<unsigned long, int> found;
  for (const char* table : {"/net/tcp", "/net/tcp6"}) {
    std::istringstream in(read_text(proc_root + table));
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout;
      unsigned long inode = 0;
      if (!(fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
            timeout >> inode))
        continue;
      size_t colon = local.rfind(':');
      if (state != "0A" || colon == std::string::npos) continue;
      int port = static_cast<int>(std::stoul(local.substr(colon + 1), nullptr, 16));
      if (port >= base && port < base + count) found[inode] = port;
    }
  }
  return found;
}

// inode → name of the unix sockets ("" when unnamed).
std::map<unsigned long, std::string> unix_inodes(const std::string& proc_root) {
  std::map<unsigned long, std::string> found;
  std::istringstream in(read_text(proc_root + "/net/unix"));
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string num, refs, protocol, flags, type, state, path;
    unsigned long inode = 0;
    if (!(fields >> num >> refs >> protocol >> flags >> type >> state >> inode)) continue;
    fields >> path;
    found[inode] = path;
  }
  return found;
}

std::vector<unsigned long> socket_inodes(const std::string& proc_root, int pid) {
  std::vector<unsigned long> inodes;
  std::error_code error;
  for (const auto& entry :
       fs::directory_iterator(proc_root + "/" + std::to_string(pid) + "/fd", error)) {
    std::string target = fs::read_symlink(entry.path(), error).string();
    if (error || target.rfind("socket:[", 0) != 0) continue;
    inodes.push_back(std::stoul(target.substr(8)));
  }
  return inodes;
}

bool launched_under_ncu(const std::string& proc_root, int pid) {
  std::string dir = proc_root + "/" + std::to_string(pid);
  std::string environ = read_text(dir + "/environ");
  size_t start = 0;
  while (start < environ.size()) {
    size_t end = environ.find('\0', start);
    if (end == std::string::npos) end = environ.size();
    std::string_view entry(environ.data() + start, end - start);
    if (entry.rfind("NV_CUDA_START_SUSPENDED=", 0) == 0 ||
        entry.rfind("NV_NSIGHT_INJECTION_PORT_BASE=", 0) == 0)
      return true;
    start = end + 1;
  }
  std::string maps = read_text(dir + "/maps");
  return maps.find("libTreeLauncherTargetInjection") != std::string::npos ||
         maps.find("libcuda-injection") != std::string::npos ||
         maps.find("libInterceptorInjectionTarget") != std::string::npos;
}

LaunchedProcess describe(const std::string& proc_root, int pid,
                         const std::map<unsigned long, int>& listening,
                         const std::map<unsigned long, std::string>& unix_sockets) {
  LaunchedProcess process;
  process.pid = pid;
  std::string dir = proc_root + "/" + std::to_string(pid);
  std::string cmdline = read_text(dir + "/cmdline");
  while (!cmdline.empty() && cmdline.back() == '\0') cmdline.pop_back();
  // One line, as in a pod (kDescribeScript): a `python3 -c` script's newlines made spaces too,
  // so --attach-process matches the same text here and there.
  std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
  std::replace(cmdline.begin(), cmdline.end(), '\n', ' ');
  process.command_line = cmdline;
  std::error_code error;
  std::vector<int> tasks;
  for (const auto& entry : fs::directory_iterator(dir + "/task", error)) {
    std::string name = entry.path().filename().string();
    if (all_digits(name)) tasks.push_back(std::stoi(name));
  }
  std::sort(tasks.begin(), tasks.end());
  for (int task : tasks) {
    std::string comm = read_text(dir + "/task/" + std::to_string(task) + "/comm");
    while (!comm.empty() && (comm.back() == '\n' || comm.back() == '\0')) comm.pop_back();
    if (!comm.empty() && std::find(process.thread_names.begin(), process.thread_names.end(),
                                   comm) == process.thread_names.end())
      process.thread_names.push_back(comm);
  }
  for (unsigned long inode : socket_inodes(proc_root, pid)) {
    if (auto port = listening.find(inode); port != listening.end())
      process.listening_ports.push_back(port->second);
    if (auto name = unix_sockets.find(inode); name != unix_sockets.end())
      process.unix_sockets.push_back(name->second);
  }
  std::sort(process.listening_ports.begin(), process.listening_ports.end());
  process.waiting = !process.listening_ports.empty();
  return process;
}

}  // namespace

std::vector<LaunchedProcess> find_launched_processes(const std::string& proc_root, int base_port,
                                                     int port_count) {
  std::map<unsigned long, int> listening = listening_inodes(proc_root, base_port, port_count);
  std::map<unsigned long, std::string> unix_sockets = unix_inodes(proc_root);
  std::vector<int> pids;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(proc_root, error)) {
    std::string name = entry.path().filename().string();
    if (all_digits(name)) pids.push_back(std::stoi(name));
  }
  std::sort(pids.begin(), pids.end());
  std::vector<LaunchedProcess> found;
  for (int pid : pids) {
    if (!launched_under_ncu(proc_root, pid)) continue;
    found.push_back(describe(proc_root, pid, listening, unix_sockets));
  }
  return found;
}

std::optional<LaunchedProcess> describe_process(int pid, const std::string& proc_root) {
  if (!fs::exists(proc_root + "/" + std::to_string(pid))) return std::nullopt;
  return describe(proc_root, pid, listening_inodes(proc_root, 49152, 64), unix_inodes(proc_root));
}

ProcessSelector parse_process_selector(const std::string& text) {
  if (text.empty()) throw std::invalid_argument("--attach-process: expected a NAME or a PID");
  ProcessSelector selector;
  if (all_digits(text)) {
    // A pid is at most 2^22 on Linux (pid_max); more digits than that is not a process.
    if (text.size() > 7 || std::stol(text) > (1L << 22) || std::stol(text) == 0) {
      throw std::invalid_argument("--attach-process " + text + ": not a process id (1 to 4194304)");
    }
    selector.pid = static_cast<int>(std::stol(text));
  } else {
    selector.name = text;
  }
  return selector;
}

bool selects(const ProcessSelector& selector, const LaunchedProcess& process) {
  if (selector.pid) return process.pid == *selector.pid;
  if (process.command_line.find(selector.name) != std::string::npos) return true;
  // A thread name is at most 15 bytes (the kernel cuts it): `VLLM::EngineCor` for
  // `VLLM::EngineCore`, so a name that begins with the whole thread name matches too.
  for (const std::string& thread : process.thread_names) {
    if (thread.find(selector.name) != std::string::npos) return true;
    if (thread.size() == 15 && selector.name.rfind(thread, 0) == 0) return true;
  }
  return false;
}

std::vector<std::string> release_client_argv(const std::string& ncu,
                                             const AttachEndpoint& endpoint) {
  std::vector<std::string> argv = {ncu,      "--config-file", "off",        "--mode",
                                   "attach", "--hostname",    endpoint.host};
  if (endpoint.port) {
    argv.push_back("--port");
    argv.push_back(std::to_string(*endpoint.port));
  }
  // Nothing matches the filter, so nothing is profiled and the clocks are left alone.
  for (const char* arg : {"--kernel-name", kReleaseFilter, "--clock-control", "none"})
    argv.push_back(arg);
  return argv;
}

struct ProcessTreeAttacher::Client {
  std::atomic<bool> release{false};
  std::atomic<bool> connected{false};
  std::atomic<bool> ended{false};
  std::mutex mutex;
  int pid = 0;
  std::optional<int> port;
  std::string ncu_name;  // the path ncu printed for the process
  std::string output;
  std::thread thread;
};

TreeHost local_tree_host(const AttachEndpoint& endpoint, std::string proc_root) {
  TreeHost host;
  host.run_client = [](const ChildRequest& request) { return run_child(request); };
  if (is_local_host(endpoint.host)) {
    host.describe = [proc_root = std::move(proc_root)](int pid) {
      return describe_process(pid, proc_root);
    };
  } else {
    host.describe = [](int) { return std::optional<LaunchedProcess>(); };
  }
  return host;
}

ProcessTreeAttacher::ProcessTreeAttacher(std::string ncu, AttachEndpoint endpoint,
                                         std::optional<ProcessSelector> target, Note note,
                                         TreeHost host)
    : ncu_(std::move(ncu)),
      endpoint_(std::move(endpoint)),
      target_(std::move(target)),
      note_(std::move(note)),
      host_(std::move(host)),
      began_(std::chrono::steady_clock::now()) {}

ProcessTreeAttacher::~ProcessTreeAttacher() { release_all(); }

std::shared_ptr<ProcessTreeAttacher::Client> ProcessTreeAttacher::start_client() {
  auto client = std::make_shared<Client>();
  ChildRequest request;
  request.argv = release_client_argv(ncu_, endpoint_);
  request.grace = std::chrono::milliseconds(5000);
  request.on_line = [client = client.get()](const std::string& line, bool) {
    static const RE2 kAttaching("Attaching to process '(.*)' \\((\\d+)\\) on port (\\d+)");
    static const RE2 kConnected("^==PROF== Connected to process (\\d+)");
    std::string name;
    int pid = 0, port = 0;
    std::lock_guard<std::mutex> lock(client->mutex);
    client->output += line + "\n";
    if (RE2::PartialMatch(line, kAttaching, &name, &pid, &port)) {
      client->ncu_name = name;
      client->pid = pid;
      client->port = port;
    } else if (RE2::PartialMatch(line, kConnected, &pid)) {
      if (client->pid == 0) client->pid = pid;
      client->connected = true;
    }
    return false;
  };
  request.on_tick = [client = client.get()] { return client->release.load(); };
  client->thread = std::thread([client, request, run = host_.run_client] {
    run(request);
    client->ended = true;
  });
  return client;
}

bool ProcessTreeAttacher::wait_connected(Client& client, double timeout_s,
                                         const std::atomic<bool>* abandon) {
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000));
  while (!client.connected && !client.ended && std::chrono::steady_clock::now() < deadline &&
         !interrupt_received() && !(abandon && abandon->load())) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return client.connected;
}

void ProcessTreeAttacher::stop(Client& client, const std::string& action) {
  client.release = true;
  if (client.thread.joinable()) client.thread.join();
  if (client.pid != 0 && !action.empty()) record(action, client.pid, client.port);
}

void ProcessTreeAttacher::record(const std::string& action, int pid, std::optional<int> port) {
  AttachStep step;
  step.at_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - began_).count();
  step.action = action;
  step.pid = pid;
  step.port = port;
  if (pid != 0) {
    if (std::optional<LaunchedProcess> process = host_.describe(pid)) {
      step.command_line = process->command_line;
      step.thread_names = process->thread_names;
    }
  }
  std::string threads;
  for (const std::string& name : step.thread_names) threads += (threads.empty() ? "" : ", ") + name;
  if (note_) {
    note_(pid == 0 ? fmt::format("attach: {}", action)
                   : fmt::format("attach: {} pid {}{}{}{}", action, pid,
                                 port ? fmt::format(" (port {})", *port) : "",
                                 step.command_line.empty() ? "" : " `" + step.command_line + "`",
                                 threads.empty() ? "" : " threads " + threads));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  steps_.push_back(std::move(step));
}

bool ProcessTreeAttacher::is_target(int pid, const std::string& ncu_name) {
  if (!target_) return true;
  if (target_->pid) return pid == *target_->pid;
  if (std::optional<LaunchedProcess> process = host_.describe(pid))
    return selects(*target_, *process);
  // Another machine: only the path ncu printed can be matched.
  return ncu_name.find(target_->name) != std::string::npos;
}

std::optional<int> ProcessTreeAttacher::find_target(double timeout_s) {
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000));
  bool said_none = false;
  while (std::chrono::steady_clock::now() < deadline && !interrupt_received()) {
    std::shared_ptr<Client> client = start_client();
    double left =
        std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    if (!wait_connected(*client, std::max(left, 1.0))) {
      stop(*client, "");
      {
        // Its last two lines, for the diagnosis should nothing ever connect.
        std::lock_guard<std::mutex> client_lock(client->mutex);
        std::vector<std::string> lines;
        std::istringstream in(client->output);
        for (std::string line; std::getline(in, line);)
          if (!trim(line).empty()) lines.push_back(std::string(trim(line)));
        std::string said;
        for (size_t i = lines.size() > 2 ? lines.size() - 2 : 0; i < lines.size(); ++i)
          said += (said.empty() ? "" : " / ") + lines[i];
        std::lock_guard<std::mutex> lock(mutex_);
        last_unconnected_said_ = said;
      }
      // Nothing waits now: a process may appear once the held ones run (an engine after its
      // front), so look again.
      if (!said_none) record("none_waiting", 0, std::nullopt);
      said_none = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      continue;
    }
    said_none = false;
    int pid;
    std::string ncu_name;
    {
      std::lock_guard<std::mutex> lock(client->mutex);
      pid = client->pid;
      ncu_name = client->ncu_name;
    }
    if (is_target(pid, ncu_name)) {
      target_client_ = client;
      target_pid_ = pid;
      record("target_found", pid, client->port);
      hold_others();
      return pid;
    }
    record("held", pid, client->port);
    std::lock_guard<std::mutex> lock(mutex_);
    clients_.push_back(client);
  }
  return std::nullopt;
}

void ProcessTreeAttacher::hold_others() {
  if (!target_client_) return;
  // Each round either holds one more process or finds none waiting; the bound only guards
  // against a tree that keeps spawning.
  for (int round = 0; round < 64 && !interrupt_received(); ++round) {
    std::shared_ptr<Client> client = start_client();
    if (!wait_connected(*client, 30)) {
      stop(*client, "");
      return;
    }
    record("held", client->pid, client->port);
    std::lock_guard<std::mutex> lock(mutex_);
    clients_.push_back(client);
  }
}

void ProcessTreeAttacher::follow() {
  if (!target_client_ || follower_.joinable()) return;
  stop_following_ = false;
  follower_ = std::thread([this] {
    // Nobody waiting: look again after 1 s, then less often, up to every 8 s (in a pod each look
    // is a kubectl exec, through a model load of minutes).
    int idle_s = 1;
    while (!stop_following_ && !interrupt_received()) {
      std::shared_ptr<Client> client = start_client();
      if (wait_connected(*client, 30, &stop_following_)) {
        record("held", client->pid, client->port);
        std::lock_guard<std::mutex> lock(mutex_);
        clients_.push_back(client);
        idle_s = 1;
        continue;
      }
      stop(*client, "");
      for (int i = 0; i < idle_s * 10 && !stop_following_ && !interrupt_received(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      idle_s = std::min(idle_s * 2, 8);
    }
  });
}

void ProcessTreeAttacher::stop_following() {
  stop_following_ = true;
  if (follower_.joinable()) follower_.join();
}

void ProcessTreeAttacher::release_target() {
  stop_following();
  if (!target_client_) return;
  stop(*target_client_, "target_released");
  target_client_.reset();
}

bool ProcessTreeAttacher::hold_target(double timeout_s) {
  if (target_client_ || !target_pid_) return target_client_ != nullptr;
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000));
  while (std::chrono::steady_clock::now() < deadline && !interrupt_received()) {
    std::shared_ptr<Client> client = start_client();
    if (!wait_connected(*client, 30)) {
      stop(*client, "");
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      continue;
    }
    if (client->pid == *target_pid_) {
      target_client_ = client;
      record("target_held", client->pid, client->port);
      return true;
    }
    record("held", client->pid, client->port);
    std::lock_guard<std::mutex> lock(mutex_);
    clients_.push_back(client);
  }
  return false;
}

void ProcessTreeAttacher::release_all() {
  release_target();
  std::vector<std::shared_ptr<Client>> clients;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    clients.swap(clients_);
  }
  // All asked at once, then waited for: in a pod each detach takes an exec and a second.
  for (auto& client : clients) client->release = true;
  for (auto& client : clients) stop(*client, "released");
}

std::vector<AttachStep> ProcessTreeAttacher::steps() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return steps_;
}

std::string ProcessTreeAttacher::last_unconnected_said() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_unconnected_said_;
}

std::vector<std::string> ProcessTreeAttacher::seen() const {
  std::vector<std::string> seen;
  std::set<int> pids;
  for (const AttachStep& step : steps()) {
    if (step.pid == 0 || !pids.insert(step.pid).second) continue;
    std::string threads;
    for (const std::string& name : step.thread_names)
      threads += (threads.empty() ? "" : ", ") + name;
    seen.push_back(fmt::format("pid {}{}{}{}", step.pid,
                               step.port ? fmt::format(" on port {}", *step.port) : "",
                               step.command_line.empty() ? "" : " `" + step.command_line + "`",
                               threads.empty() ? "" : " (threads " + threads + ")"));
  }
  return seen;
}

nlohmann::json attach_details(const ProcessTreeAttacher& tree,
                              const std::optional<ProcessSelector>& selector) {
  nlohmann::json details = nlohmann::json::object();
  nlohmann::json steps = nlohmann::json::array();
  for (const AttachStep& step : tree.steps()) {
    steps.push_back({{"at_s", std::round(step.at_s * 1000) / 1000},
                     {"action", step.action},
                     {"pid", step.pid},
                     {"port", step.port ? nlohmann::json(*step.port) : nlohmann::json()},
                     {"command_line", step.command_line},
                     {"thread_names", step.thread_names}});
  }
  details["steps"] = std::move(steps);
  if (selector && tree.target_pid()) {
    nlohmann::json process = {{"selector", selector->text()}, {"pid", *tree.target_pid()}};
    for (const AttachStep& step : tree.steps()) {
      if (step.pid == *tree.target_pid() && !step.command_line.empty()) {
        process["command_line"] = step.command_line;
        process["thread_names"] = step.thread_names;
        break;
      }
    }
    details["process"] = std::move(process);
  }
  return details;
}

Diagnosis process_not_found(const ProcessSelector& selector, const ProcessTreeAttacher& tree,
                            double timeout_s) {
  std::vector<std::string> seen = tree.seen();
  std::string list;
  for (const std::string& one : seen) list += (list.empty() ? "" : "; ") + one;
  std::string said = tree.last_unconnected_said();
  return {"attach_process_not_found", true,
          fmt::format("no process matching \"{}\" waited for a profiler within {} s; {}{}",
                      selector.text(), timeout_s,
                      seen.empty() ? "no process waited at all"
                                   : "held instead (each released again): " + list,
                      said.empty() ? "" : " (the last attach client said: " + said + ")"),
          "name the process by a part of its command line or a thread name shown above (or its "
          "pid), check it runs under `ncu --mode launch` (with --target-processes all for a "
          "child), or allow more time with --attach-timeout"};
}

}  // namespace kprof::capture
