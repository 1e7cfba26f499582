#include "k8s/workload.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>

#include "common/text.h"

namespace kprof::k8s {
namespace {

std::map<std::string, std::string> string_map(const nlohmann::json& object) {
  std::map<std::string, std::string> out;
  if (!object.is_object()) return out;
  for (const auto& [key, value] : object.items()) {
    if (value.is_string()) out[key] = value.get<std::string>();
  }
  return out;
}

std::vector<std::string> strings(const nlohmann::json& array) {
  std::vector<std::string> out;
  if (!array.is_array()) return out;
  for (const auto& value : array) {
    if (value.is_string()) out.push_back(value.get<std::string>());
  }
  return out;
}

bool selects(const std::map<std::string, std::string>& selector,
             const std::map<std::string, std::string>& labels) {
  if (selector.empty()) return false;
  return std::all_of(selector.begin(), selector.end(), [&](const auto& term) {
    auto it = labels.find(term.first);
    return it != labels.end() && it->second == term.second;
  });
}

// A script's word that the shell would expand ($PORT, ${X:-1}, $(cmd), `cmd`): its value is not
// known here, so no flag reader takes it (it stands in the word list so that the flag before it
// still has a value, just not one kprof knows).
constexpr std::string_view kExpandedWord = "\x01expanded";

// The value of the last FLAG VALUE or FLAG=VALUE in argv (argparse keeps the last), if any; none
// when that value is a script's expanded word.
std::optional<std::string> last_flag_text(const std::vector<std::string>& argv,
                                          const std::string& flag) {
  std::optional<std::string> value;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == flag && i + 1 < argv.size()) value = argv[i + 1];
    if (argv[i].rfind(flag + "=", 0) == 0) value = argv[i].substr(flag.size() + 1);
  }
  if (value && value->find(kExpandedWord) != std::string::npos) return std::nullopt;
  return value;
}

// A number written whole ("0.9"); none for "$UTIL", "0.9x" or "" (atof read them as 0).
std::optional<double> flag_value(const std::vector<std::string>& argv, const std::string& flag) {
  std::optional<std::string> text = last_flag_text(argv, flag);
  if (!text || text->empty()) return std::nullopt;
  char* end = nullptr;
  double value = std::strtod(text->c_str(), &end);
  if (end != text->c_str() + text->size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

// The script of a container started as `sh -c SCRIPT` (bash, dash; `-lc`, `-e -c`, `-o pipefail
// -c`, `--login -c`; behind `tini --`, `dumb-init` or `env`), if it is.
std::optional<std::string> shell_script(const std::vector<std::string>& argv) {
  static const std::set<std::string_view> kShells = {"sh", "bash", "dash", "ash", "zsh"};
  static const std::set<std::string_view> kLaunchers = {"tini", "dumb-init", "env"};
  size_t shell = 0;
  // After a launcher: its `--` and env's NAME=VALUE words.
  while (shell < argv.size() &&
         (kLaunchers.count(path_basename(argv[shell])) ||
          (shell > 0 && (argv[shell] == "--" ||
                         (argv[shell][0] != '-' && argv[shell].find('=') != std::string::npos)))))
    ++shell;
  if (shell >= argv.size() || !kShells.count(path_basename(argv[shell]))) return std::nullopt;
  for (size_t i = shell + 1; i + 1 < argv.size(); ++i) {
    const std::string& option = argv[i];
    if (option.size() < 2 || (option[0] != '-' && option[0] != '+')) return std::nullopt;
    if (option[0] == '-' && option[1] == '-') continue;  // --login, --norc
    if (option[0] == '-' && option.find('c') != std::string::npos) return argv[i + 1];
    if (option == "-o" || option == "+o" || option == "-O" || option == "+O") ++i;  // its name
  }
  return std::nullopt;
}

// A TCP port written in digits alone.
std::optional<int> port_number(const std::string& text) {
  if (text.empty() || text.size() > 5 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  int value = std::stoi(text);
  return value >= 1 && value <= 65535 ? std::optional<int>(value) : std::nullopt;
}

}  // namespace

// The commands of a `sh -c SCRIPT` script, each as its words the shell would split them, without
// running or expanding anything: quotes and backslashes are honoured; `;`, `&`, `|` (and so
// `&&`, `||`), `(`, `)` and line breaks end a command, `<` and `>` a word (`2>&1` is a
// redirection, not a `&`), so `cd /app && exec vllm serve --port 8000` gives two commands; a `#`
// that starts a word comments out the rest of its line; a word the shell would expand (an
// unquoted or double-quoted `$` or a backquote) is kExpandedWord. Only to read the engine's flags
// out of a script that starts it; the script itself is never changed or run.
std::vector<std::vector<std::string>> shell_script_commands(const std::string& script) {
  std::vector<std::vector<std::string>> commands(1);
  std::string word;
  bool in_word = false, expanded = false;
  auto end_word = [&] {
    if (in_word) commands.back().push_back(expanded ? std::string(kExpandedWord) : word);
    word.clear();
    in_word = expanded = false;
  };
  auto end_command = [&] {
    end_word();
    if (!commands.back().empty()) commands.emplace_back();
  };
  for (size_t i = 0; i < script.size(); ++i) {
    char c = script[i];
    const bool redirection = c == '&' && i > 0 && (script[i - 1] == '>' || script[i - 1] == '<');
    if (std::string_view(";&|()\n").find(c) != std::string_view::npos && !redirection) {
      end_command();
    } else if (std::string_view(" \t<>").find(c) != std::string_view::npos || redirection) {
      end_word();
    } else if (c == '#' && !in_word) {
      size_t newline = script.find('\n', i);
      i = newline == std::string::npos ? script.size() : newline - 1;
    } else if (c == '\\') {
      if (i + 1 < script.size() && script[i + 1] != '\n') {  // a backslash-newline joins lines
        in_word = true;
        word += script[i + 1];
      }
      ++i;
    } else if (c == '\'') {
      in_word = true;
      size_t close = script.find('\'', i + 1);
      if (close == std::string::npos) close = script.size();
      word += script.substr(i + 1, close - i - 1);
      i = close;
    } else if (c == '"') {
      in_word = true;
      for (++i; i < script.size() && script[i] != '"'; ++i) {
        if (script[i] == '\\' && i + 1 < script.size() &&
            std::string_view("$`\"\\\n").find(script[i + 1]) != std::string_view::npos) {
          ++i;
          if (script[i] == '\n') continue;
        } else if (script[i] == '$' || script[i] == '`') {
          expanded = true;
        }
        word += script[i];
      }
    } else {
      in_word = true;
      expanded |= c == '$' || c == '`';
      word += c;
    }
  }
  end_word();
  if (commands.back().empty()) commands.pop_back();
  return commands;
}

// Whether a command runs a serving engine: a word that is one (vllm, trtllm-serve, …) or names
// its Python module (python3 -m sglang.launch_server, vllm.entrypoints.openai.api_server).
bool runs_an_engine(const std::vector<std::string>& command) {
  static const std::set<std::string_view> kPrograms = {
      "vllm", "trtllm-serve", "text-generation-launcher", "lmdeploy", "tritonserver"};
  for (const std::string& word : command) {
    if (kPrograms.count(path_basename(word))) return true;
    for (std::string_view module : {"vllm.", "sglang.", "tensorrt_llm", "lmdeploy."}) {
      if (word.rfind(module, 0) == 0) return true;
    }
  }
  return false;
}

// The words whose flags are the engine's: those of the script's command that runs a serving
// engine (a sidecar's `--port 9100` in another command is not the engine's); else of its last
// command started with `exec`; else of every command, as before a script names neither.
std::vector<std::string> engine_words(const std::string& script) {
  std::vector<std::vector<std::string>> commands = shell_script_commands(script);
  for (const auto& command : commands) {
    if (runs_an_engine(command)) return command;
  }
  for (auto it = commands.rbegin(); it != commands.rend(); ++it) {
    if (!it->empty() && it->front() == "exec") return *it;
  }
  std::vector<std::string> all;
  for (auto& command : commands) all.insert(all.end(), command.begin(), command.end());
  return all;
}

bool is_dns_label(const std::string& name) {
  static const RE2 kLabel("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
  return name.size() <= 63 && RE2::FullMatch(name, kLabel);
}

bool is_dns_subdomain(const std::string& name) {
  static const RE2 kSubdomain("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");
  return name.size() <= 253 && RE2::FullMatch(name, kSubdomain);
}

const ContainerInfo* TargetInfo::container(const std::string& name) const {
  if (containers.empty()) return nullptr;
  if (name.empty()) return &containers.front();
  for (const ContainerInfo& c : containers) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

namespace {

// kubectl's JSON is trusted for shape no more than any input: a field of the wrong type reads as
// absent instead of throwing.
const nlohmann::json& member(const nlohmann::json& object, const char* key) {
  static const nlohmann::json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

std::string text(const nlohmann::json& object, const char* key) {
  const nlohmann::json& value = member(object, key);
  return value.is_string() ? value.get<std::string>() : "";
}

const nlohmann::json& items(const nlohmann::json& list) {
  static const nlohmann::json kEmpty = nlohmann::json::array();
  const nlohmann::json& value = member(list, "items");
  return value.is_array() ? value : kEmpty;
}

}  // namespace

const nlohmann::json& value_at(const nlohmann::json& value,
                               std::initializer_list<const char*> path) {
  const nlohmann::json* at = &value;
  for (const char* key : path) at = &member(*at, key);
  return *at;
}

std::string string_at(const nlohmann::json& value, std::initializer_list<const char*> path) {
  const nlohmann::json& at = value_at(value, path);
  return at.is_string() ? at.get<std::string>() : "";
}

TargetInfo parse_target(const nlohmann::json& deployment, const nlohmann::json& pods,
                        const nlohmann::json& services) {
  TargetInfo target;
  target.deployment_json = deployment;
  const nlohmann::json& metadata = member(deployment, "metadata");
  target.deployment = text(metadata, "name");
  target.namespace_name = text(metadata, "namespace");
  if (target.namespace_name.empty()) target.namespace_name = "default";
  target.revision = text(member(metadata, "annotations"), "deployment.kubernetes.io/revision");
  const nlohmann::json& spec = member(deployment, "spec");
  const nlohmann::json& replicas = member(spec, "replicas");
  target.replicas = replicas.is_number_integer() ? replicas.get<int>() : 1;
  target.match_labels = string_map(member(member(spec, "selector"), "matchLabels"));
  const nlohmann::json& pod_template = member(spec, "template");
  target.template_labels = string_map(member(member(pod_template, "metadata"), "labels"));
  const nlohmann::json& containers = member(member(pod_template, "spec"), "containers");
  for (const auto& c : containers.is_array() ? containers : nlohmann::json::array()) {
    ContainerInfo info;
    info.name = text(c, "name");
    info.image = text(c, "image");
    info.command = strings(member(c, "command"));
    info.args = strings(member(c, "args"));
    const nlohmann::json& env = member(c, "env");
    for (const auto& e : env.is_array() ? env : nlohmann::json::array()) {
      std::string name = text(e, "name");
      std::string value = member(e, "value").is_string()
                              ? text(e, "value")
                              : "<from " + member(e, "valueFrom").dump() + ">";
      info.env.emplace_back(name, value);
      if (name == "CUDA_INJECTION64_PATH") info.injection = value;
    }
    const nlohmann::json& gpus = member(member(member(c, "resources"), "limits"), "nvidia.com/gpu");
    info.gpus = gpus.is_string() ? gpus.get<std::string>() : gpus.is_number() ? gpus.dump() : "";
    std::vector<std::string> argv = info.command;
    argv.insert(argv.end(), info.args.begin(), info.args.end());
    // A server started by a script (`sh -c "vllm serve … --port 8000"`): its flags are in the
    // script's words.
    if (std::optional<std::string> script = shell_script(argv)) {
      info.started_by_script = true;
      for (std::string& word : engine_words(*script)) argv.push_back(std::move(word));
    }
    // vLLM's argparse takes the underscore spelling too.
    for (const char* flag : {"--gpu-memory-utilization", "--gpu_memory_utilization",
                             "--mem-fraction-static", "--mem_fraction_static"}) {
      if (!info.gpu_memory_utilization) info.gpu_memory_utilization = flag_value(argv, flag);
    }
    for (const std::string& arg : argv) {
      std::string_view program = path_basename(arg);
      if (program == "ncu" && std::find(argv.begin(), argv.end(), "launch") != argv.end()) {
        info.under_ncu_launch = true;
      }
    }
    if (std::optional<std::string> port = last_flag_text(argv, "--port")) {
      if ((info.server_port = port_number(*port)))
        info.server_port_from =
            info.started_by_script ? "its --port (in its sh -c script)" : "its --port";
    }
    if (std::optional<std::string> key = last_flag_text(argv, "--api-key")) info.api_key = *key;
    // Its TCP containerPorts, the one named http first.
    std::vector<std::pair<std::string, int>> tcp_ports;
    const nlohmann::json& ports = member(c, "ports");
    for (const auto& port : ports.is_array() ? ports : nlohmann::json::array()) {
      const nlohmann::json& number = member(port, "containerPort");
      std::string protocol = text(port, "protocol");
      if (number.is_number_integer() && number.get<int>() >= 1 && number.get<int>() <= 65535 &&
          (protocol.empty() || protocol == "TCP"))
        tcp_ports.emplace_back(text(port, "name"), number.get<int>());
    }
    std::stable_partition(tcp_ports.begin(), tcp_ports.end(),
                          [](const auto& port) { return port.first == "http"; });
    if (!info.server_port && !tcp_ports.empty()) {
      info.server_port = tcp_ports.front().second;
      info.server_port_from = tcp_ports.front().first == "http" ? "its containerPort named http"
                                                                : "its first containerPort";
    }
    // A probe's path, when it asks the server's own port (by number, or by the name of a port
    // of that number, or none given).
    for (const char* probe : {"readinessProbe", "startupProbe", "livenessProbe"}) {
      const nlohmann::json& get = member(member(c, probe), "httpGet");
      std::string path = text(get, "path");
      const nlohmann::json& port = member(get, "port");
      bool same_port = port.is_null() || !info.server_port ||
                       (port.is_number_integer() && port.get<int>() == *info.server_port);
      for (const auto& [name, number] : tcp_ports)
        if (port.is_string() && port.get<std::string>() == name && info.server_port == number)
          same_port = true;
      if (!path.empty() && path[0] == '/' && same_port) {
        info.health_path = path;
        break;
      }
    }
    for (const auto& [field, kind] :
         {std::pair{"livenessProbe", "liveness"}, std::pair{"readinessProbe", "readiness"}}) {
      const nlohmann::json& probe = member(c, field);
      if (!probe.is_object()) continue;
      ContainerInfo::Probe read;
      read.kind = kind;
      auto seconds = [&](const char* key, double fallback) {
        const nlohmann::json& value = member(probe, key);
        return value.is_number() && value.get<double>() >= 1 ? value.get<double>() : fallback;
      };
      read.period_s = seconds("periodSeconds", 10);
      read.failure_threshold = seconds("failureThreshold", 3);
      read.timeout_s = seconds("timeoutSeconds", 1);
      info.probes.push_back(read);
    }
    target.containers.push_back(std::move(info));
  }
  for (const auto& p : items(pods)) {
    PodInfo pod;
    pod.name = text(member(p, "metadata"), "name");
    pod.node = text(member(p, "spec"), "nodeName");
    pod.phase = text(member(p, "status"), "phase");
    const nlohmann::json& statuses = member(member(p, "status"), "containerStatuses");
    for (const auto& st : statuses.is_array() ? statuses : nlohmann::json::array()) {
      pod.image_ids[text(st, "name")] = text(st, "imageID");
    }
    const nlohmann::json& ephemeral = member(member(p, "spec"), "ephemeralContainers");
    for (const auto& e : ephemeral.is_array() ? ephemeral : nlohmann::json::array()) {
      pod.ephemeral_containers.push_back(text(e, "name"));
    }
    target.pods.push_back(std::move(pod));
  }
  for (const auto& sv : items(services)) {
    ServiceInfo service{text(member(sv, "metadata"), "name"),
                        string_map(member(member(sv, "spec"), "selector"))};
    if (selects(service.selector, target.template_labels)) target.services.push_back(service);
  }
  return target;
}

std::int64_t gpu_count(const std::string& gpus) {
  if (gpus.empty() || gpus.size() > 6 ||
      !std::all_of(gpus.begin(), gpus.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return 0;
  }
  return std::stoll(gpus);
}

namespace {

// nvidia.com/gpu in a resources block: requests, else limits (an extended resource's request
// defaults to its limit). Quantities of whole devices; anything else counts as 0.
std::int64_t container_gpus(const nlohmann::json& container) {
  for (const char* kind : {"requests", "limits"}) {
    const nlohmann::json& value = value_at(container, {"resources", kind, "nvidia.com/gpu"});
    if (value.is_number_integer()) return value.get<std::int64_t>();
    if (value.is_string()) return gpu_count(value.get<std::string>());
  }
  return 0;
}

std::int64_t pod_gpus(const nlohmann::json& pod) {
  std::int64_t containers = 0, init = 0;
  const nlohmann::json& list = value_at(pod, {"spec", "containers"});
  for (const auto& c : list.is_array() ? list : nlohmann::json::array()) {
    containers += container_gpus(c);
  }
  const nlohmann::json& inits = value_at(pod, {"spec", "initContainers"});
  for (const auto& c : inits.is_array() ? inits : nlohmann::json::array()) {
    init = std::max(init, container_gpus(c));
  }
  return std::max(containers, init);
}

}  // namespace

GpuCapacity gpu_capacity(const nlohmann::json& nodes, const nlohmann::json& pods) {
  GpuCapacity capacity;
  capacity.checked = true;
  std::map<std::string, NodeGpus> by_name;
  const nlohmann::json& node_items = value_at(nodes, {"items"});
  for (const auto& node : node_items.is_array() ? node_items : nlohmann::json::array()) {
    if (value_at(node, {"spec", "unschedulable"}) == true) continue;
    NodeGpus gpus;
    gpus.name = string_at(node, {"metadata", "name"});
    const nlohmann::json& allocatable = value_at(node, {"status", "allocatable", "nvidia.com/gpu"});
    gpus.allocatable = allocatable.is_string()           ? gpu_count(allocatable.get<std::string>())
                       : allocatable.is_number_integer() ? allocatable.get<std::int64_t>()
                                                         : 0;
    if (gpus.allocatable > 0 && !gpus.name.empty()) by_name[gpus.name] = gpus;
  }
  const nlohmann::json& pod_items = value_at(pods, {"items"});
  for (const auto& pod : pod_items.is_array() ? pod_items : nlohmann::json::array()) {
    std::string phase = string_at(pod, {"status", "phase"});
    if (phase == "Succeeded" || phase == "Failed") continue;
    auto node = by_name.find(string_at(pod, {"spec", "nodeName"}));
    if (node != by_name.end()) node->second.requested += pod_gpus(pod);
  }
  for (auto& [name, gpus] : by_name) capacity.nodes.push_back(gpus);
  return capacity;
}

std::optional<PodStuck> pod_stuck(const nlohmann::json& pod) {
  const nlohmann::json& conditions = value_at(pod, {"status", "conditions"});
  for (const auto& c : conditions.is_array() ? conditions : nlohmann::json::array()) {
    if (string_at(c, {"type"}) == "PodScheduled" && string_at(c, {"status"}) == "False" &&
        string_at(c, {"reason"}) == "Unschedulable") {
      return PodStuck{"Unschedulable", string_at(c, {"message"})};
    }
  }
  for (const char* list : {"initContainerStatuses", "containerStatuses"}) {
    const nlohmann::json& statuses = value_at(pod, {"status", list});
    for (const auto& st : statuses.is_array() ? statuses : nlohmann::json::array()) {
      std::string reason = string_at(st, {"state", "waiting", "reason"});
      if (reason == "ErrImagePull" || reason == "ImagePullBackOff" ||
          reason == "InvalidImageName" || reason == "CrashLoopBackOff" ||
          reason == "CreateContainerConfigError") {
        std::string message = string_at(st, {"state", "waiting", "message"});
        return PodStuck{reason, fmt::format("container {}: {}", string_at(st, {"name"}),
                                            message.empty() ? reason : message)};
      }
    }
  }
  return std::nullopt;
}

PodReadiness pod_readiness(const nlohmann::json& pod, const std::string& container) {
  PodReadiness found;
  const nlohmann::json& conditions = value_at(pod, {"status", "conditions"});
  for (const auto& c : conditions.is_array() ? conditions : nlohmann::json::array()) {
    if (string_at(c, {"type"}) != "Ready") continue;
    std::string status = string_at(c, {"status"});
    if (status == "True") found.ready = true;
    if (status == "False") found.ready = false;
  }
  const nlohmann::json& statuses = value_at(pod, {"status", "containerStatuses"});
  for (const auto& st : statuses.is_array() ? statuses : nlohmann::json::array()) {
    if (string_at(st, {"name"}) != container) continue;
    const nlohmann::json& count = value_at(st, {"restartCount"});
    if (count.is_number_integer() && count.get<std::int64_t>() >= 0)
      found.restart_count = count.get<std::int64_t>();
  }
  return found;
}

Assessment assess(const TargetInfo& target, const ContainerInfo& container, int client_minor,
                  const GpuCapacity& capacity) {
  Assessment a;
  if (container.under_ncu_launch) {
    a.method = "sidecar";
    a.reasons.push_back(fmt::format(
        "container {} already runs under `ncu --mode launch`: an ephemeral profiler container "
        "can attach to it over the pod's loopback, nothing restarts",
        container.name));
  } else {
    a.method = "sister";
    a.reasons.push_back(fmt::format(
        "container {} does not run under `ncu --mode launch`, and ncu can only attach to a "
        "process it launched: a sister Deployment serves the same model under ncu, outside "
        "the Service",
        container.name));
    a.reasons.push_back(
        "ephemeral containers cannot be given GPUs, so a sidecar could not run "
        "its own copy of the server either");
  }
  if (target.replicas <= 1) {
    a.safety = "single-replica";
    a.reasons.push_back(
        "one replica: kernel replay stalls the only server (liveness probes, client timeouts), "
        "so captures are scoped to one kernel regex, at most 3 launches, triage or basic");
  } else {
    a.safety = "multi-replica";
    a.reasons.push_back(
        fmt::format("{} replicas: one may be slowed; --preset full with up to 5 "
                    "launches is allowed",
                    target.replicas));
  }
  // Kernel replay saves what a kernel may touch in free device memory when it fits, else in
  // system memory: measured on the H200 (bench/capture-cost.sh), 65 of 140 GiB resident stayed
  // on the device (1-5 s per kernel), 80 and 100 GiB did not (18 and 33-41 s per kernel).
  if (container.gpu_memory_utilization && *container.gpu_memory_utilization > 0.5) {
    a.warnings.push_back(fmt::format(
        "the server reserves {:.0f}% of GPU memory (--gpu-memory-utilization / "
        "--mem-fraction-static): more than is left free, so ncu backs each replay's memory up in "
        "system memory — measured on an H200, 18 s per profiled kernel at 80 GiB of 140 resident "
        "and 33-41 s at 100 GiB, against 1-5 s up to 65 GiB; {}",
        *container.gpu_memory_utilization * 100,
        container.started_by_script
            ? "a fraction of 0.45 in its `sh -c` script (kprof does not rewrite a script) "
              "captures at the fast rate"
            : "`sister --memory-fraction 0.45` captures at the fast rate"));
  }
  if (container.injection) {
    a.warnings.push_back(fmt::format(
        "CUDA_INJECTION64_PATH={} is set (another profiler): ncu replaces it in the sister, and "
        "that tool sees nothing there",
        *container.injection));
  }
  if (container.gpus.empty()) {
    a.warnings.push_back(fmt::format("container {} requests no nvidia.com/gpu", container.name));
  }
  if (a.method == "sidecar" && client_minor < kCustomMinimumMinor) {
    a.warnings.push_back(fmt::format(
        "kubectl 1.{} has no `kubectl debug --custom` (1.{}+): the profiler container gets its "
        "capabilities from --profile sysadmin only",
        client_minor, kCustomMinimumMinor));
  }
  if (target.pods.empty()) a.warnings.push_back("no pod of this Deployment is running");
  std::int64_t wanted = gpu_count(container.gpus);
  if (a.method == "sister" && wanted > 0) {
    if (!capacity.checked) {
      a.warnings.push_back(fmt::format(
          "could not check whether a node has {} nvidia.com/gpu free for the sister ({}); if "
          "none has, its pod stays Pending",
          wanted, capacity.why_not.empty() ? "not read" : capacity.why_not));
    } else {
      std::string room;
      const NodeGpus* best = nullptr;
      for (const NodeGpus& node : capacity.nodes) {
        room += fmt::format("{}{} {} of {} free", room.empty() ? "" : ", ", node.name, node.free(),
                            node.allocatable);
        if (!best || node.free() > best->free()) best = &node;
      }
      if (best && best->free() >= wanted) {
        a.reasons.push_back(fmt::format(
            "the sister asks for {} nvidia.com/gpu like the server: node {} can schedule it "
            "(nvidia.com/gpu allocatable minus requested: {})",
            wanted, best->name, room));
      } else {
        a.warnings.push_back(fmt::format(
            "no node has {} nvidia.com/gpu free for the sister ({}): its pod would stay Pending "
            "— free GPUs (scale another workload down) or add a node first",
            wanted, room.empty() ? "no node offers nvidia.com/gpu" : room));
      }
    }
  }
  return a;
}

std::string sister_name(const std::string& deployment, const std::string& run_id) {
  // Pod names add "-<hash>-<5>" (17 characters) to a Deployment's name; stay a DNS label.
  std::string suffix = "-kprof-" + run_id;
  std::string base =
      deployment.substr(0, std::min<size_t>(deployment.size(), 63 - 17 - suffix.size()));
  while (!base.empty() && base.back() == '-') base.pop_back();
  return base + suffix;
}

nlohmann::json sister_deployment_unchecked(const TargetInfo& target, const SisterOptions& options);

nlohmann::json sister_deployment(const TargetInfo& target, const SisterOptions& options) {
  try {
    return sister_deployment_unchecked(target, options);
  } catch (const nlohmann::json::exception& error) {
    throw std::invalid_argument(
        fmt::format("the Deployment {} has fields of unexpected types; kprof cannot copy it: {}",
                    target.deployment, error.what()));
  }
}

namespace {

// The engine's memory fraction flag, rewritten in the container's command and args (`--flag V`
// or `--flag=V`); an engine whose command gives none cannot be told, which is refused.
void set_memory_fraction(nlohmann::json& c, double fraction, bool started_by_script) {
  std::string value = fmt::format("{:g}", fraction);
  bool rewritten = false;
  for (const char* field : {"command", "args"}) {
    if (!c.contains(field) || !c[field].is_array()) continue;
    nlohmann::json& argv = c[field];
    for (size_t i = 0; i < argv.size(); ++i) {
      if (!argv[i].is_string()) continue;
      std::string arg = argv[i].get<std::string>();
      for (const std::string flag : {"--gpu-memory-utilization", "--gpu_memory_utilization",
                                     "--mem-fraction-static", "--mem_fraction_static"}) {
        if (arg == flag && i + 1 < argv.size()) {
          argv[i + 1] = value;
          rewritten = true;
        } else if (arg.rfind(flag + "=", 0) == 0) {
          argv[i] = flag + "=" + value;
          rewritten = true;
        }
      }
    }
  }
  if (!rewritten && started_by_script) {
    throw std::invalid_argument(
        "--memory-fraction: the server is started by a `sh -c` script, which kprof reads but "
        "does not rewrite; lower --gpu-memory-utilization (vLLM) or --mem-fraction-static "
        "(SGLang) in the script itself, or leave --memory-fraction out");
  }
  if (!rewritten) {
    throw std::invalid_argument(
        "--memory-fraction: the server's command and args give neither --gpu-memory-utilization "
        "(vLLM) nor --mem-fraction-static (SGLang); kprof does not know how to tell this engine "
        "how much memory to take");
  }
}

// The server under `ncu --mode launch` (ncu copied into kNcuMount), able to read counters.
void add_ncu(nlohmann::json& c, const ContainerInfo& server) {
  std::vector<std::string> wrapped = {std::string(kNcuMount) + "/ncu", "--mode", "launch", "--"};
  wrapped.insert(wrapped.end(), server.command.begin(), server.command.end());
  c["command"] = wrapped;
  nlohmann::json env = nlohmann::json::array();
  for (const auto& e : c.value("env", nlohmann::json::array())) {
    if (e.value("name", "") != "CUDA_INJECTION64_PATH") env.push_back(e);
  }
  c["env"] = env;
  // Replay holds the server for seconds per kernel: probes would restart it mid-capture.
  c.erase("livenessProbe");
  c.erase("readinessProbe");
  c.erase("startupProbe");
  c["securityContext"]["capabilities"]["add"] = nlohmann::json::array({"SYS_ADMIN"});
  c["volumeMounts"].push_back({{"name", "kprof-ncu"}, {"mountPath", kNcuMount}});
}

// The server as it is (command, probes, privileges) with kprof's tracer injected, inactive until
// kprof writes `start` into the control file. The settings kprof relies on replace any the
// Deployment sets (the listing looks for the default file names in kTracerMount); the tracer's
// other settings (memory, flows, …) pass through.
void add_tracer(nlohmann::json& c) {
  static const std::set<std::string> kOwned = {
      "CUDA_INJECTION64_PATH",  "NVTX_INJECTION64_PATH", "KPROF_TRACE_DIR",
      "KPROF_TRACE_NAME",       "KPROF_TRACE_START",     "KPROF_TRACE_DELAY_S",
      "KPROF_TRACE_DURATION_S", "KPROF_TRACE_CONTROL",   "KPROF_TRACE_MAX_EVENTS"};
  nlohmann::json env = nlohmann::json::array();
  for (const auto& e : c.value("env", nlohmann::json::array())) {
    if (!kOwned.count(e.value("name", ""))) env.push_back(e);
  }
  for (auto [name, value] :
       {std::pair{"CUDA_INJECTION64_PATH", kTracerLibrary},
        std::pair{"NVTX_INJECTION64_PATH", kTracerLibrary},
        std::pair{"KPROF_TRACE_DIR", kTracerMount}, std::pair{"KPROF_TRACE_START", "on-control"},
        std::pair{"KPROF_TRACE_CONTROL", kTraceControl}}) {
    env.push_back({{"name", name}, {"value", value}});
  }
  c["env"] = env;
  c["volumeMounts"].push_back({{"name", "kprof-tracer"}, {"mountPath", kTracerMount}});
}

}  // namespace

nlohmann::json sister_deployment_unchecked(const TargetInfo& target, const SisterOptions& options) {
  const ContainerInfo* server = target.container(options.container);
  if (!server)
    throw std::invalid_argument(
        fmt::format("no container \"{}\" in {}", options.container, target.deployment));
  if (options.trace && server->under_ncu_launch) {
    throw std::invalid_argument(fmt::format(
        "container {} runs under `ncu --mode launch`: ncu's injection would take the slot and "
        "kprof's tracer would stay off; trace a Deployment whose server is not under ncu",
        server->name));
  }
  // The tracer needs no wrapper (the CUDA driver loads it), so the image's ENTRYPOINT may stay.
  if (!options.trace && server->command.empty()) {
    throw std::invalid_argument(fmt::format(
        "container {} has no command in its spec (the image's ENTRYPOINT runs): kprof cannot "
        "wrap what it cannot see; give it a command in the Deployment",
        server->name));
  }
  std::string name = sister_name(target.deployment, options.run_id);
  nlohmann::json deployment = target.deployment_json;
  nlohmann::json metadata = {
      {"name", name},
      {"namespace", target.namespace_name},
      {"labels",
       {{kManagedByLabel, kManagedByValue},
        {kSisterOfLabel, target.deployment.substr(0, 63)},
        {kRunLabel, options.run_id}}},
      {"annotations",
       {{"kprof.dev/purpose",
         "profiling copy of " + target.deployment +
             " outside its Service; deleted by kprof (see the cleanup receipt)"}}}};
  nlohmann::json pod_template = deployment["spec"]["template"];
  // Labels: only kprof's own, so no Service (which select the original's labels) routes here.
  nlohmann::json labels = {{kSisterOfLabel, target.deployment.substr(0, 63)},
                           {kRunLabel, options.run_id}};
  pod_template["metadata"] = {{"labels", labels}};
  nlohmann::json& pod = pod_template["spec"];
  pod.erase("nodeName");
  for (auto& c : pod["containers"]) {
    if (c.value("name", "") != server->name) continue;
    if (options.trace) {
      add_tracer(c);
    } else {
      add_ncu(c, *server);
    }
  }
  if (options.memory_fraction) {
    for (auto& c : pod["containers"]) {
      if (c.value("name", "") == server->name)
        set_memory_fraction(c, *options.memory_fraction, server->started_by_script);
    }
  }
  const char* volume = options.trace ? "kprof-tracer" : "kprof-ncu";
  const char* mount = options.trace ? kTracerMount : kNcuMount;
  const std::string& image = options.trace ? options.tracer_image : options.ncu_image;
  const std::string& dir = options.trace ? options.tracer_dir : options.ncu_dir;
  pod["initContainers"].push_back(
      {{"name", std::string(volume) + "-install"},
       {"image", image},
       {"command", nlohmann::json::array({"cp", "-a", dir + "/.", std::string(mount) + "/"})},
       {"volumeMounts", nlohmann::json::array({{{"name", volume}, {"mountPath", mount}}})}});
  pod["volumes"].push_back({{"name", volume}, {"emptyDir", nlohmann::json::object()}});
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", metadata},
          {"spec",
           {{"replicas", 1}, {"selector", {{"matchLabels", labels}}}, {"template", pod_template}}}};
}

std::vector<std::string> check_sister(const nlohmann::json& manifest, const TargetInfo& target) {
  std::vector<std::string> problems;
  std::string name = manifest["metadata"].value("name", "");
  if (!is_dns_label(name) || name.size() > 63 - 17) {
    problems.push_back(
        fmt::format("name \"{}\" leaves no room for pod name suffixes within 63 characters", name));
  }
  const nlohmann::json& template_labels = manifest["spec"]["template"]["metadata"]["labels"];
  for (const auto& [key, value] : template_labels.items()) {
    std::string text = value.get<std::string>();
    static const RE2 kValue("([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?");
    if (text.size() > 63 || !RE2::FullMatch(text, kValue)) {
      problems.push_back(fmt::format("label {}={} is not a valid label value", key, text));
    }
  }
  std::map<std::string, std::string> labels;
  for (const auto& [key, value] : template_labels.items()) labels[key] = value.get<std::string>();
  if (manifest["spec"]["selector"]["matchLabels"] != template_labels) {
    problems.push_back("the selector does not equal the pod template's labels");
  }
  for (const ServiceInfo& service : target.services) {
    if (selects(service.selector, labels)) {
      problems.push_back(fmt::format("Service {} would route traffic to the sister", service.name));
    }
  }
  // A traced sister is one whose initContainer installs the tracer.
  bool traced = false;
  for (const auto& c :
       manifest["spec"]["template"]["spec"].value("initContainers", nlohmann::json::array())) {
    if (c.value("name", "") == "kprof-tracer-install") traced = true;
  }
  for (const auto& c :
       manifest["spec"]["template"]["spec"].value("containers", nlohmann::json::array())) {
    for (const auto& e : c.value("env", nlohmann::json::array())) {
      if (e.value("name", "") != "CUDA_INJECTION64_PATH") continue;
      if (!traced) {
        problems.push_back("CUDA_INJECTION64_PATH is still set: ncu could not inject itself");
      } else if (e.value("value", "") != kTracerLibrary) {
        problems.push_back("CUDA_INJECTION64_PATH does not name kprof's tracer in its volume");
      }
    }
    if (!is_dns_label(c.value("name", "")))
      problems.push_back("container name " + c.value("name", "") + " is not a DNS label");
  }
  if (manifest["spec"].value("replicas", 0) != 1) problems.push_back("replicas must be 1");
  return problems;
}

nlohmann::json ephemeral_custom_spec() {
  return {{"securityContext", {{"capabilities", {{"add", nlohmann::json::array({"SYS_ADMIN"})}}}}}};
}

std::vector<std::string> check_ephemeral_custom(const nlohmann::json& spec) {
  std::vector<std::string> problems;
  for (const char* field :
       {"ports", "livenessProbe", "readinessProbe", "startupProbe", "resources", "lifecycle"}) {
    if (spec.contains(field))
      problems.push_back(fmt::format("ephemeral containers may not set {}", field));
  }
  return problems;
}

std::optional<std::string> not_created_by_kprof(const nlohmann::json& object,
                                                const std::string& kind,
                                                const std::string& namespace_name,
                                                const std::string& name, const std::string& run) {
  const nlohmann::json& metadata = member(object, "metadata");
  if (text(object, "kind") != kind || text(metadata, "name") != name ||
      text(metadata, "namespace") != namespace_name) {
    return fmt::format("kubectl returned another object ({} {}/{})", text(object, "kind"),
                       text(metadata, "namespace"), text(metadata, "name"));
  }
  const nlohmann::json& labels = member(metadata, "labels");
  if (text(labels, kManagedByLabel) != kManagedByValue) {
    return fmt::format(
        "it does not carry kprof's label {}={} (kprof did not create it, or it was "
        "relabelled since)",
        kManagedByLabel, kManagedByValue);
  }
  if (run.empty()) return std::string("the receipt does not say which kprof run created it");
  if (text(labels, kRunLabel) != run) {
    return fmt::format(
        "its label {}={} is not the run {} of the receipt (another kprof run "
        "created it)",
        kRunLabel, text(labels, kRunLabel), run);
  }
  return std::nullopt;
}

}  // namespace kprof::k8s
