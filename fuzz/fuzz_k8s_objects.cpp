// libFuzzer target for reading kubectl's JSON (Deployment, pods, Services) and everything kprof
// derives from it: the assessment, the sister Deployment and kprof's checks of it. Input: one
// JSON document {"deployment": …, "pods": …, "services": …}.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string_view>

#include "k8s/workload.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return 0;
  auto field = [&](const char* key) { return doc.contains(key) ? doc[key] : nlohmann::json(); };
  kprof::k8s::TargetInfo target =
      kprof::k8s::parse_target(field("deployment"), field("pods"), field("services"));
  for (const kprof::k8s::ContainerInfo& container : target.containers) {
    kprof::k8s::assess(target, container, 31);
  }
  try {
    nlohmann::json sister = kprof::k8s::sister_deployment(target, {"", "img", "/opt/ncu", "ab12c"});
    kprof::k8s::check_sister(sister, target);
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
