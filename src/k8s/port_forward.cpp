#include "k8s/port_forward.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include "common/child_process.h"
#include "common/text.h"

namespace kprof::k8s {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kErrorLinesKept = 5;

}  // namespace

std::optional<int> forwarded_local_port(const std::string& line) {
  static const RE2 kForwarding(R"(^Forwarding from 127\.0\.0\.1:(\d+) -> \d+)");
  int port = 0;
  if (RE2::PartialMatch(line, kForwarding, &port) && port > 0 && port < 65536) return port;
  return std::nullopt;
}

PortForward::PortForward(const Kubectl& kubectl, PortForwardSpec spec, Note note)
    : kubectl_(kubectl), spec_(std::move(spec)), note_(std::move(note)) {}

PortForward::~PortForward() { stop(); }

std::vector<std::string> PortForward::argv(std::optional<int> local) const {
  // 127.0.0.1 only: kubectl's default, localhost, also listens on ::1, which libcurl may try
  // first; and nothing but this machine should reach the pod through it.
  return {"port-forward",
          "-n",
          spec_.namespace_name,
          "--address",
          "127.0.0.1",
          "pod/" + spec_.pod,
          fmt::format("{}:{}", local.value_or(0), spec_.pod_port)};
}

void PortForward::start(double timeout_s) {
  if (thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    first_argv_ = argv(std::nullopt);
  }
  thread_ = std::thread([this] { supervise(); });
  Clock::time_point deadline =
      Clock::now() + std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000));
  while (!forwarding_ && !ended_ && Clock::now() < deadline && !interrupt_received())
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (forwarding_) return;
  bool ended = ended_;
  stop();
  std::string errors;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const std::string& line : errors_) errors += (errors.empty() ? "" : "\n") + line;
  }
  std::string message = condense_message(errors);
  std::vector<std::string> call = {"kubectl"};
  call.insert(call.end(), first_argv_.begin(), first_argv_.end());
  if (interrupt_received())
    throw KubectlError("interrupted",
                       fmt::format("interrupted while `{}` started", shown_call(call)));
  throw KubectlError(classify_failure(errors),
                     fmt::format("`{}` {}: {}", shown_call(call),
                                 ended ? "ended before forwarding"
                                       : fmt::format("did not forward within {} s", timeout_s),
                                 message.empty() ? "no message" : message));
}

void PortForward::stop() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
}

std::string PortForward::base_url() const {
  return fmt::format("http://127.0.0.1:{}", local_port_);
}

nlohmann::json PortForward::describe() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {
      {"via", "kubectl port-forward"}, {"kubectl_argv", first_argv_},      {"pod", spec_.pod},
      {"pod_port", spec_.pod_port},    {"local_port", local_port_.load()}, {"restarts", restarts_},
      {"last_errors", errors_},        {"last_problem", last_problem_}};
}

void PortForward::supervise() {
  std::chrono::milliseconds backoff(500);
  bool forwarded_once = false;
  while (!stopping_ && !interrupt_received()) {
    bool forwarded = false;
    KubectlStream stream;
    stream.keep_output = false;  // "Handling connection for …" once per connection
    stream.on_line = [&](const std::string& line, bool from_stderr) {
      if (!from_stderr) {
        if (std::optional<int> port = forwarded_local_port(line)) {
          if (local_port_ == 0) local_port_ = *port;  // kept on every restart
          forwarded = true;
          forwarding_ = true;
        }
        return;
      }
      // klog's lines as their message ("an error occurred forwarding …: … connection refused").
      std::string text = condense_message(line);
      if (text.empty()) return;
      std::lock_guard<std::mutex> lock(mutex_);
      errors_.push_back(text);
      if (errors_.size() > kErrorLinesKept) errors_.erase(errors_.begin());
      // kubectl's own last word says only that it ended; the line before it says why.
      if (text.find("lost connection to pod") == std::string::npos) last_problem_ = text;
    };
    stream.on_tick = [this] { return stopping_.load(); };
    Clock::time_point began = Clock::now();
    std::optional<int> local;
    if (local_port_ != 0) local = local_port_;
    kubectl_.run(argv(local), std::chrono::hours(24 * 365), stream);
    forwarded_once |= forwarded;
    if (stopping_ || interrupt_received()) break;
    if (!forwarded_once) {
      // It never forwarded: the pod, the RBAC or kubectl itself; start() says why.
      ended_ = true;
      return;
    }
    forwarding_ = false;
    int restarts;
    std::string last;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      restarts = ++restarts_;
      last = errors_.empty() ? "" : errors_.back();
    }
    // The first end is worth a line; later ones (a poll of a server still loading ends every
    // port-forward) are counted in the manifest.
    if (restarts == 1 && note_) {
      note_(fmt::format("port-forward: kubectl ended ({}); starting it again on 127.0.0.1:{}",
                        last.empty() ? "no message" : last, local_port_));
    }
    if (Clock::now() - began > std::chrono::seconds(10)) backoff = std::chrono::milliseconds(500);
    Clock::time_point wake = Clock::now() + backoff;
    while (Clock::now() < wake && !stopping_ && !interrupt_received())
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    backoff = std::min<std::chrono::milliseconds>(backoff * 2, std::chrono::seconds(5));
  }
}

}  // namespace kprof::k8s
