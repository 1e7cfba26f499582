// libFuzzer target for reading kubectl's JSON (Deployment, pods, Services) and everything kprof
// derives from it: the assessment, the sister Deployment and kprof's checks of it, the latency
// guard's read of a pod. Input: one JSON document {"deployment": …, "pods": …, "services": …}.
// Every input is also read as what the pod's /proc reader printed and as kubectl port-forward's
// output lines.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string_view>

#include "k8s/pod_capture.h"
#include "k8s/port_forward.h"
#include "k8s/workload.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  kprof::k8s::parse_pod_process(4321, std::string(text));
  std::string lines(text);
  for (size_t start = 0; start < lines.size();) {
    size_t end = lines.find('\n', start);
    if (end == std::string::npos) end = lines.size();
    kprof::k8s::forwarded_local_port(lines.substr(start, end - start));
    start = end + 1;
  }
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return 0;
  auto field = [&](const char* key) { return doc.contains(key) ? doc[key] : nlohmann::json(); };
  kprof::k8s::TargetInfo target =
      kprof::k8s::parse_target(field("deployment"), field("pods"), field("services"));
  for (const kprof::k8s::ContainerInfo& container : target.containers) {
    kprof::k8s::assess(target, container, 31);
  }
  // What the latency guard reads of a pod: the document itself and each listed pod.
  kprof::k8s::pod_readiness(doc, "server");
  const nlohmann::json& pods = kprof::k8s::value_at(doc, {"pods", "items"});
  for (const auto& pod : pods.is_array() ? pods : nlohmann::json::array())
    kprof::k8s::pod_readiness(pod, "server");
  try {
    nlohmann::json sister = kprof::k8s::sister_deployment(target, {"", "img", "/opt/ncu", "ab12c"});
    kprof::k8s::check_sister(sister, target);
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
