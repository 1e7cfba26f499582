// libFuzzer target for reading a server's flags out of its `sh -c SCRIPT` (k8s/workload.h): any
// bytes as the script, split into commands, the engine's words chosen, and the container read as
// kprof reads a Deployment. The engine's words are always the words of one command, or of all.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "k8s/workload.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string script(reinterpret_cast<const char*>(data), size);
  std::vector<std::vector<std::string>> commands = kprof::k8s::shell_script_commands(script);
  std::vector<std::string> words = kprof::k8s::engine_words(script);
  std::vector<std::string> all;
  bool one_of_them = false;
  for (const auto& command : commands) {
    if (command.empty()) std::abort();  // no empty command is kept
    one_of_them |= command == words;
    all.insert(all.end(), command.begin(), command.end());
  }
  if (!one_of_them && words != all) std::abort();
  nlohmann::json deployment = {
      {"metadata", {{"name", "d"}}},
      {"spec",
       {{"template",
         {{"spec",
           {{"containers", {{{"name", "s"}, {"command", {"/bin/sh", "-c", script}}}}}}}}}}}};
  kprof::k8s::TargetInfo target =
      kprof::k8s::parse_target(deployment, nlohmann::json::object(), nlohmann::json::object());
  for (const auto& container : target.containers) kprof::k8s::assess(target, container, 31);
  return 0;
}
